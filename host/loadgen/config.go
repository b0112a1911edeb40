package loadgen

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Protocols a call may speak.
const (
	// ProtocolRaw sends binary μ-law messages to /ws and reads binary
	// replies.
	ProtocolRaw = "raw"
	// ProtocolTwilio speaks Twilio Media Streams to /twilio: connected and
	// start, then media messages; replies are media messages.
	ProtocolTwilio = "twilio"
)

// FrameBytes is the size of every audio frame sent: 20 ms of 8 kHz μ-law,
// the frame Twilio and the raw protocol carry.
const FrameBytes = 160

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
	// path (or with "/"), the protocol's endpoint is appended: /ws or
	// /twilio.
	URL string
	// Protocol is ProtocolRaw or ProtocolTwilio.
	Protocol string
	// Pipeline, when set, names the server pipeline each call asks for:
	// ?pipeline= on raw, customParameters.pipeline on Twilio.
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
	switch {
	case c.URL == "":
		return c, errors.New("loadgen: no server URL")
	case c.Protocol != ProtocolRaw && c.Protocol != ProtocolTwilio:
		return c, fmt.Errorf("loadgen: unknown protocol %q (want %s or %s)", c.Protocol, ProtocolRaw, ProtocolTwilio)
	case c.FPS < 0 || c.FPS > 1000:
		return c, fmt.Errorf("loadgen: %d frames per second is outside 1..1000", c.FPS)
	case c.Calls < 0 || c.Duration < 0 || c.Ramp < 0 || c.Grace < 0 || c.DialTimeout < 0 || c.IdleHold < 0:
		return c, errors.New("loadgen: negative calls or durations")
	case c.frames() == 0:
		return c, fmt.Errorf("loadgen: a %v call at %d fps sends no frame", c.Duration, c.FPS)
	}
	if _, err := c.callURL(); err != nil {
		return c, err
	}
	if _, err := c.metricsURL(); err != nil {
		return c, err
	}
	return c, nil
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
// path, and the raw protocol's pipeline as a query parameter.
func (c Config) callURL() (string, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return "", fmt.Errorf("loadgen: URL: %w", err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return "", fmt.Errorf("loadgen: URL %q: want ws:// or wss://", c.URL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/ws"
		if c.Protocol == ProtocolTwilio {
			u.Path = "/twilio"
		}
	}
	if c.Pipeline != "" && c.Protocol == ProtocolRaw {
		q := u.Query()
		q.Set("pipeline", c.Pipeline)
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// metricsURL is where server statistics come from, "" for nowhere.
func (c Config) metricsURL() (string, error) {
	switch c.MetricsURL {
	case "-":
		return "", nil
	case "":
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
