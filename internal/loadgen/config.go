package loadgen

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// Two of the protocols a call may speak: every protocol registered in
// host/transport with both roles (a Protocol and a Dialect of one name) is
// spoken through its client role, these among them.
const (
	// ProtocolRaw sends binary audio messages to /ws and reads binary
	// replies.
	ProtocolRaw = "raw"
	// ProtocolTwilio speaks Twilio Media Streams to /twilio: connected and
	// start, then media messages; replies are media messages, and the
	// host's marks go back once the audio before them has played.
	ProtocolTwilio = "twilio"
)

// FrameBytes is the size of a 20 ms frame of 8 kHz μ-law, the frame of
// Twilio and of the raw protocol by default. A call sends 20 ms frames of
// its format: FrameBytes in μ-law, 320 bytes in L16 at 8 kHz, and so on.
const FrameBytes = 160

// frameMs is the audio each frame carries.
const frameMs = 20

// Defaults for the zero values of Config.
const (
	DefaultProtocol    = ProtocolRaw
	DefaultFPS         = 50
	DefaultDuration    = 10 * time.Second
	DefaultRamp        = 2 * time.Second
	DefaultGrace       = time.Second
	DefaultDialTimeout = 10 * time.Second
	// DefaultIdleHold is short of the server's default idle timeout (10 s)
	// by more than DefaultRamp, so the first idle connection is still open
	// when the last one has been measured.
	DefaultIdleHold = 3 * time.Second
)

// Config describes one load point: how many calls, for how long, against
// which server.
type Config struct {
	// URL is the server's WebSocket address, ws:// or wss://. Without a
	// path (or with "/"), the protocol's endpoint is appended: /ws,
	// /twilio, its Path() in host/transport. For a protocol over TCP it
	// only says where /metrics is, and may be empty.
	URL string
	// TCPAddr is host:port of the server's listener for a protocol that
	// runs over TCP rather than WebSocket (audiosocket); a protocol over
	// WebSocket does not use it, so one command line can name both.
	TCPAddr string
	// SIPAddr is ip:port of the server's sip.listen, for the sip protocol
	// (sip.go); the others do not use it.
	SIPAddr string
	// Protocol names a protocol registered in host/transport with both
	// roles: raw (the default), twilio, audiosocket, ….
	Protocol string
	// Format is the audio calls send, both ways; the zero Format is the
	// first the protocol's client role carries of μ-law at 8 kHz, L16 at
	// 8, 16 and 24 kHz and A-law. On a protocol that starts on connect
	// (raw), a Format other than μ-law at 8 kHz goes in the URL as
	// ?codec=&rate=.
	Format codec.Format
	// Pipeline, when set, names the server pipeline each call asks for:
	// ?pipeline= on a protocol that starts on connect (raw), the start
	// message's custom parameters on the others (Twilio's
	// customParameters.pipeline). A protocol over TCP carries none: its
	// listener has a route of its own.
	Pipeline string
	// Token, when set, is sent as "Authorization: Bearer TOKEN".
	Token string
	// MetricsURL is where server statistics are read. Empty means
	// http://HOST:PORT/metrics of URL; "-" reads none.
	MetricsURL string

	// Calls is the number of concurrent calls.
	Calls int
	// Duration is how long each call sends audio; each sends
	// Duration×FPS frames.
	Duration time.Duration
	// FPS is frames per second per call; 50 is real time for 20 ms frames.
	FPS int
	// Ramp spreads the calls' starts evenly over this long, so that the
	// server is not measured on a thundering herd of handshakes.
	Ramp time.Duration
	// Grace is how long a call waits for outstanding replies after its
	// last frame; frames still unanswered then count as failed.
	Grace time.Duration
	// DialTimeout bounds each connection's HTTP upgrade.
	DialTimeout time.Duration
	// IdleHold is how long Idle keeps its connections open before reading
	// the server's memory. Keep Ramp+IdleHold under the server's
	// idle_timeout (10 s by default), or it closes the earliest ones.
	IdleHold time.Duration
}

// withDefaults fills the zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	setDefault(&c.Protocol, DefaultProtocol)
	setDefault(&c.FPS, DefaultFPS)
	setDefault(&c.Duration, DefaultDuration)
	setDefault(&c.Ramp, DefaultRamp)
	setDefault(&c.Grace, DefaultGrace)
	setDefault(&c.DialTimeout, DefaultDialTimeout)
	setDefault(&c.IdleHold, DefaultIdleHold)
	p, err := c.protocol()
	if err != nil {
		return c, err
	}
	switch {
	case c.FPS < 0 || c.FPS > 1000:
		return c, fmt.Errorf("loadgen: %d frames per second is outside 1..1000", c.FPS)
	case c.Calls < 0 || c.Duration < 0 || c.Ramp < 0 || c.Grace < 0 || c.DialTimeout < 0 || c.IdleHold < 0:
		return c, errors.New("loadgen: negative calls or durations")
	case c.frames() == 0:
		return c, fmt.Errorf("loadgen: a %v call at %d fps sends no frame", c.Duration, c.FPS)
	}
	if c.Format, err = p.format(c.Format); err != nil {
		return c, err
	}
	if _, err := c.callURL(); err != nil {
		return c, err
	}
	if _, err := c.metricsURL(); err != nil {
		return c, err
	}
	return c, nil
}

// Target is the server's address as a report names it: the URL, or the
// TCP address for a protocol over TCP.
func (c Config) Target() string {
	if p, err := c.protocol(); err == nil && p.framer != nil {
		return c.TCPAddr
	} else if err == nil && p.sip {
		return "sip:" + c.SIPAddr
	}
	return c.URL
}

// protocol is the protocol a call speaks, both its roles.
type protocol struct {
	server  transport.Protocol
	client  transport.Dialect
	framer  transport.Framer // nil for a protocol over WebSocket
	tcpAddr string
	sip     bool // SIP and RTP (sip.go), not a WebSocket
}

// protocol looks up c.Protocol's roles and checks that c says where to
// reach its server.
func (c Config) protocol() (protocol, error) {
	if c.Protocol == ProtocolSIP {
		return c.sipProtocol()
	}
	server, err := transport.LookupProtocol(c.Protocol)
	if err != nil {
		return protocol{}, fmt.Errorf("loadgen: %v", err)
	}
	client, err := transport.LookupDialect(c.Protocol)
	if err != nil {
		return protocol{}, fmt.Errorf("loadgen: the %s protocol has no client role to call its server with", c.Protocol)
	}
	p := protocol{server: server, client: client}
	p.framer, _ = server.(transport.Framer)
	switch {
	case p.framer != nil && c.TCPAddr == "":
		return p, fmt.Errorf("loadgen: the %s protocol runs over TCP: give the server's listener (TCPAddr, --tcp-addr host:port)", c.Protocol)
	case p.framer != nil:
		if _, _, err := net.SplitHostPort(c.TCPAddr); err != nil {
			return p, fmt.Errorf("loadgen: TCP address %q: %v", c.TCPAddr, err)
		}
		p.tcpAddr = c.TCPAddr
	case c.URL == "":
		return p, errors.New("loadgen: no server URL")
	}
	return p, nil
}

// formatChoices are the formats a call sends when none is asked for, in
// order of preference: telephony's own first.
var formatChoices = []codec.Format{
	codec.Telephony,
	{Encoding: codec.L16, Rate: 8000},
	{Encoding: codec.L16, Rate: 16000},
	{Encoding: codec.L16, Rate: 24000},
	{Encoding: codec.Alaw, Rate: 8000},
}

// format is f, or the first format the client role carries when f is the
// zero Format; an error says why the client role cannot carry it.
func (p protocol) format(f codec.Format) (codec.Format, error) {
	if f != (codec.Format{}) {
		if err := p.client.CheckFormat(f); err != nil {
			return f, fmt.Errorf("loadgen: %v", err)
		}
		return f, nil
	}
	for _, f := range formatChoices {
		if p.client.CheckFormat(f) == nil {
			return f, nil
		}
	}
	return f, fmt.Errorf("loadgen: the %s protocol's client role carries none of μ-law, A-law or L16 at 8, 16 or 24 kHz", p.server.Name())
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// period is the time between two frames of a call.
func (c Config) period() time.Duration { return time.Second / time.Duration(c.FPS) }

// frames is how many frames each call sends.
func (c Config) frames() int64 {
	return int64(c.Duration.Seconds()*float64(c.FPS) + 0.5)
}

// callURL is the URL a call dials: the protocol's endpoint when URL has no
// path, with the pipeline (and a format other than μ-law at 8 kHz) in the
// query of a protocol that starts on connect, since it has no start
// message to carry them. A protocol over TCP dials TCPAddr, its "URL".
func (c Config) callURL() (string, error) {
	p, err := c.protocol()
	if err != nil {
		return "", err
	}
	if p.framer != nil {
		return p.tcpAddr, nil
	}
	if p.sip {
		return c.SIPAddr, nil
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return "", fmt.Errorf("loadgen: URL: %w", err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return "", fmt.Errorf("loadgen: URL %q: want ws:// or wss://", c.URL)
	}
	if u.Path == "" || u.Path == "/" {
		if u.Path = p.server.Path(); u.Path == "" {
			return "", fmt.Errorf("loadgen: the %s protocol has no WebSocket endpoint", c.Protocol)
		}
	}
	if p.server.StartsOnConnect() {
		q := u.Query()
		if c.Pipeline != "" {
			q.Set("pipeline", c.Pipeline)
		}
		if f := c.Format; f != (codec.Format{}) && f != codec.Telephony {
			q.Set("codec", f.Encoding.String())
			q.Set("rate", strconv.Itoa(f.Rate))
		}
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// metricsURL is where server statistics come from, "" for nowhere.
func (c Config) metricsURL() (string, error) {
	switch {
	case c.MetricsURL == "-" || c.MetricsURL == "" && c.URL == "":
		return "", nil
	case c.MetricsURL == "":
		u, err := url.Parse(c.URL)
		if err != nil {
			return "", fmt.Errorf("loadgen: URL: %w", err)
		}
		scheme := "http"
		if u.Scheme == "wss" {
			scheme = "https"
		}
		return scheme + "://" + u.Host + "/metrics", nil
	}
	if !strings.HasPrefix(c.MetricsURL, "http://") && !strings.HasPrefix(c.MetricsURL, "https://") {
		return "", fmt.Errorf("loadgen: metrics URL %q: want http:// or https://", c.MetricsURL)
	}
	return c.MetricsURL, nil
}
