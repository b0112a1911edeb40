package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/voxhost/voxhost/host/codec"
)

const autoName = "auto"

// Auto returns the auto-detecting protocol: one endpoint for every carrier
// that opens its stream with a text message the host can tell apart, as
// pipecat's runner tells Twilio, Telnyx, Plivo and Exotel apart from their
// first two messages (pipecat runner/utils.py,
// _detect_transport_type_from_message). Its session reads the first
// messages, recognises the carrier, makes that protocol's session and
// hands it every message from then on, the ones before included: a
// carrier is the same on /auto as on its own path.
//
// Recognised, by their first messages:
//
//	start with start.streamSid and start.callSid            twilio
//	start with stream_id and start.call_control_id          telnyx
//	start with start.streamId and start.callId              plivo
//	start with start.stream_sid and start.call_sid          exotel
//	{"event":"websocket:connected",…}                       vonage
//	MEDIA_START, as text or as {"event":"MEDIA_START",…}    asterisk
//	{"version":"2","type":"open",…}                         genesys
//	call info with callSid and sampleRate, no event         jambonz
//
// A connected message (Twilio's, Telnyx's and Exotel's first) tells none
// apart: it is held, at most two of them, and replayed into the session
// of the carrier the start names. A protocol outside the table takes part
// by implementing Recognizer. A stream that starts with binary audio (raw)
// needs its protocol's own path, and so does FreeSWITCH's mod_audio_fork,
// whose first message is whatever metadata the dialplan gave it. The session says what it found through Detector: the server
// must take Buffers, the marks' and chunks' rules and its metrics' label
// from the detected protocol once the stream starts, since this Protocol
// cannot know them beforehand.
func Auto() Protocol { return autoProtocol }

func init() { RegisterProtocol(autoProtocol) }

type auto struct{ endpoint }

var autoProtocol = auto{endpoint{
	// A stream starts with the message that names its carrier. Buffers is
	// false, the safe default before the carrier is known: paced at real
	// time every carrier plays the host's audio as it should. A server
	// that wires Detector uses the detected protocol's instead.
	name: autoName, path: "/auto",
}}

// Subprotocols are every registered protocol's (jambonz's
// audio.jambonz.org, mod_audio_fork's audio.drachtio.org): a client that
// asks for one must be given it, or it fails the handshake, and the
// server accepts only those a client offers, so offering them all changes
// nothing for the carriers that ask for none.
func (auto) Subprotocols() []string {
	var out []string
	for _, p := range protocols.all() {
		if p.Name() == autoName {
			continue
		}
		for _, sp := range SubprotocolsOf(p) {
			if !slices.Contains(out, sp) {
				out = append(out, sp)
			}
		}
	}
	return out
}

// NewSession makes a session that detects its carrier; the carrier's own
// query rules (Exotel's ?sample-rate=) apply once it is known.
func (auto) NewSession(cfg SessionConfig) (Session, error) {
	cfg.maxAudio(codec.Telephony) // a limit no frame could pass is caught here
	return &autoSession{cfg: cfg}, nil
}

// Detector is implemented by a Session that learns its protocol from the
// stream (the auto endpoint's). Once Decode has returned KindStart, the
// server must use Detected for all it asks of the Protocol after that:
// Buffers (send ahead or pace, read when a relay's bot leg is set up), the
// optional MarkDropper and AudioChunker, and the protocol label of the
// call's metrics and logs.
type Detector interface {
	// Detected returns the protocol the stream speaks, or nil until the
	// session knows it.
	Detected() Protocol
}

// Recognizer is implemented by a Protocol that the auto endpoint should
// recognise by a first message the table in Auto's comment does not list.
type Recognizer interface {
	// Recognize reports whether msg, one of the first messages of a
	// stream, opens a stream of this protocol. It must not keep msg.
	Recognize(typ MessageType, msg []byte) bool
}

// Bounds on what a session holds before it knows the carrier.
const (
	autoMaxHeld      = 2
	autoMaxHeldBytes = 4 << 10
)

type autoSession struct {
	cfg   SessionConfig
	proto Protocol
	inner Session
	held  []heldMessage // greetings before the carrier was known
}

type heldMessage struct {
	typ MessageType
	msg []byte
}

// Detected returns the carrier's protocol once a message named it.
func (a *autoSession) Detected() Protocol { return a.proto }

// Format is the carrier's format, μ-law at 8 kHz before it is known.
func (a *autoSession) Format() codec.Format {
	if a.inner == nil {
		return codec.Telephony
	}
	return a.inner.Format()
}

func (a *autoSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	if a.inner != nil {
		return a.inner.Decode(typ, msg, in)
	}
	*in = Inbound{}
	name, greeting, err := recognize(typ, msg)
	if err != nil {
		return err
	}
	if greeting {
		if len(a.held) == autoMaxHeld || len(msg) > autoMaxHeldBytes {
			return protocolErrorf(autoName, "no carrier recognised in the first %d messages: %s", len(a.held)+1, autoWant)
		}
		a.held = append(a.held, heldMessage{typ, bytes.Clone(msg)})
		return nil // KindIgnore, as every carrier that sends one takes it
	}
	p, err := a.lookup(name)
	if err != nil {
		return err
	}
	sess, err := p.NewSession(a.cfg)
	if err != nil {
		return &ProtocolError{Protocol: autoName, Reason: fmt.Sprintf("recognised %s, but %v", p.Name(), err), Unsupported: true}
	}
	for _, h := range a.held {
		if err := sess.Decode(h.typ, h.msg, in); err != nil {
			return err
		}
	}
	a.proto, a.inner, a.held = p, sess, nil
	err = sess.Decode(typ, msg, in)
	if err == nil && p.StartsOnConnect() && in.Kind == KindIgnore {
		// The message that named a protocol without a start message starts
		// its stream here: the server sees a start as from every carrier.
		in.Kind, in.Start = KindStart, &Start{}
	}
	return err
}

// autoWant says what the auto endpoint recognises, for its errors.
const autoWant = "want the start of a Twilio, Telnyx, Plivo or Exotel stream, Vonage's websocket:connected, Asterisk's MEDIA_START, Genesys AudioHook's open or Jambonz's call info"

// lookup returns the protocol registered as name: a carrier recognised
// but not compiled into this voxhost is a stream it does not handle.
func (a *autoSession) lookup(name string) (Protocol, error) {
	if p, ok := protocols.lookup(name); ok {
		return p, nil
	}
	return nil, &ProtocolError{Protocol: autoName, Reason: fmt.Sprintf("recognised %s, but this voxhost has no %s protocol", name, name), Unsupported: true}
}

// recognize names the carrier whose stream msg opens, or says that msg is
// a greeting that tells none apart, or why it opens no stream the auto
// endpoint knows.
func recognize(typ MessageType, msg []byte) (name string, greeting bool, err error) {
	for _, p := range protocols.all() {
		if r, ok := p.(Recognizer); ok && p.Name() != autoName && r.Recognize(typ, msg) {
			return p.Name(), false, nil
		}
	}
	if typ != Text {
		return "", false, &ProtocolError{Protocol: autoName, Reason: "binary message before any carrier was recognised: a stream that starts with audio needs its protocol's own path (/ws for raw)", Unsupported: true}
	}
	if bytes.HasPrefix(msg, []byte("MEDIA_START")) {
		return "asterisk", false, nil // chan_websocket's plain-text form
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m == nil {
		return "", false, protocolErrorf(autoName, "the first message is not a JSON object: %s", autoWant)
	}
	event, hasEvent := jsonString(m["event"])
	switch {
	case event == "start":
		var st map[string]json.RawMessage
		_ = json.Unmarshal(m["start"], &st)
		switch {
		case has(st, "streamSid") && has(st, "callSid"):
			return twilioName, false, nil
		case has(m, "stream_id") && has(st, "call_control_id"):
			return telnyxName, false, nil
		case has(st, "streamId") && has(st, "callId"):
			return plivoName, false, nil
		case has(st, "stream_sid") && has(st, "call_sid"):
			return exotelName, false, nil
		}
	case event == "connected":
		return "", true, nil
	case event == "websocket:connected":
		return "vonage", false, nil
	case event == "MEDIA_START":
		return "asterisk", false, nil
	}
	if t, _ := jsonString(m["type"]); t == "open" {
		if v, _ := jsonString(m["version"]); v == "2" {
			return "genesys", false, nil
		}
	}
	if !hasEvent && has(m, "callSid") && has(m, "sampleRate") {
		return "jambonz", false, nil
	}
	return "", false, protocolErrorf(autoName, "the first message is none a carrier opens with (event %s): %s", excerpt(strings.TrimSpace(event)), autoWant)
}

// jsonString returns the string a JSON value holds, and whether it is one.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil && len(raw) > 0
}

// has reports whether the object m has the member key.
func has(m map[string]json.RawMessage, key string) bool {
	_, ok := m[key]
	return ok
}

// Audio renders the frame for the carrier; before it is known the call
// loop sends none (Decode accepts no audio then), and the frame goes out
// as it is.
func (a *autoSession) Audio(frame []byte) (MessageType, []byte) {
	if a.inner == nil {
		return Binary, frame
	}
	return a.inner.Audio(frame)
}

// Mark renders the carrier's mark; there is none before it is known.
func (a *autoSession) Mark(name string) (MessageType, []byte, bool) {
	if a.inner == nil {
		return 0, nil, false
	}
	return a.inner.Mark(name)
}

// Clear renders the carrier's clear; there is none before it is known.
func (a *autoSession) Clear() (MessageType, []byte, bool) {
	if a.inner == nil {
		return 0, nil, false
	}
	return a.inner.Clear()
}

// Event renders the carrier's plugin event, where it has one.
func (a *autoSession) Event(plugin, name string, data []byte, tMs int64) (MessageType, []byte, bool) {
	if a.inner == nil {
		return 0, nil, false
	}
	return a.inner.Event(plugin, name, data, tMs)
}

// Hangup renders the carrier's hang-up, where it has one.
func (a *autoSession) Hangup() (MessageType, []byte, bool) {
	if a.inner == nil {
		return 0, nil, false
	}
	return a.inner.Hangup()
}
