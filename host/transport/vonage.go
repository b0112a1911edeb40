package transport

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

const vonageName = "vonage"

// Vonage returns the protocol of the Vonage Voice API's WebSocket endpoint
// (an NCCO connect action with an endpoint of type websocket), as
// documented at
// https://developer.vonage.com/en/voice/voice-api/concepts/websockets.
//
// Vonage opens the socket and sends one JSON text message first,
//
//	{"event":"websocket:connected","content-type":"audio/l16;rate=16000", HEADERS...}
//
// whose content-type is the call's audio both ways (L16, little-endian, at
// 8000, 16000 or 24000 Hz) and whose other members are the headers of the
// NCCO's endpoint, at the top level: they become the stream's custom
// parameters ("pipeline" picks a route). Then binary messages carry the
// call's audio, 20 ms each (640 bytes at 16 kHz), and text messages
// events: websocket:dtmf {"digit":"5","duration":260}, websocket:notify
// (the payload of a notify the host sent, once the audio before it has
// played) and websocket:cleared (the answer to a clear).
//
// The host sends binary audio and the two commands Vonage takes:
// {"action":"notify","payload":{"name":MARK}} for a mark and
// {"action":"clear"} for a barge-in. Vonage buffers what it is sent (up to
// 1024 messages, about 20 s) and plays it at its own pace, so the host
// sends ahead and learns from the notify what has played: Buffers is true.
// Vonage takes 20 ms messages only, so a shorter frame (the end of a bot's
// answer) is padded with silence to 20 ms. It has no message for plugin
// events or for hanging up: the call ends with the close.
func Vonage() Protocol { return vonageProtocol }

func init() {
	RegisterProtocol(vonageProtocol)
	RegisterDialect(vonageDialect{})
}

type vonage struct{ endpoint }

var vonageProtocol = vonage{endpoint{name: vonageName, path: "/vonage", buffers: true}}

// ClearDropsMarks is true: a clear discards the audio Vonage holds, and
// its guide does not say the notifies queued behind it still come; the
// host takes them as cleared (one that comes after all is ignored).
func (vonage) ClearDropsMarks() bool { return true }

// vonageDefault is the audio of an NCCO that names no content-type, and
// the session's format before websocket:connected.
var vonageDefault = codec.Format{Encoding: codec.L16, Rate: 16000}

// vonageFrameMs is the length of every audio message Vonage takes.
const vonageFrameMs = 20

// vonageMaxRate is the highest rate a Vonage socket carries, which sizes
// the padding buffer before the rate is known.
const vonageMaxRate = 24000

// NewSession makes a session whose format is set by websocket:connected.
func (vonage) NewSession(cfg SessionConfig) (Session, error) {
	return &vonageSession{
		cfg:      cfg,
		format:   vonageDefault,
		maxAudio: cfg.maxAudio(vonageDefault),
		pad:      make([]byte, vonageFrameMs*vonageMaxRate/1000*2),
		out:      make([]byte, 0, 64+6*MaxMarkBytes),
	}, nil
}

type vonageSession struct {
	noHangup
	cfg      SessionConfig
	format   codec.Format
	maxAudio int
	started  bool
	pad      []byte // a short frame padded with silence to 20 ms
	out      []byte // the last rendered text message
}

// vonageText is what the scanner picks out of a Vonage text message, either
// way: string tokens viewing the message, nil when absent or not a
// string. A repeated member counts once, the last time, as with
// encoding/json.
type vonageText struct {
	hasEvent, hasAction bool
	event, action       []byte
	digit               []byte // the top-level digit of websocket:dtmf
	dtmfDigit           []byte // dtmf.digit, a shape some readers expect
	hasPayload          bool
	payload             []byte // the payload's JSON text, whatever it is
	name                []byte // payload.name
}

// scan walks msg, which must be one JSON object, and returns why it is
// not, or "".
func (v *vonageText) scan(msg []byte) (reason string) {
	s := scanner{buf: msg}
	return s.finish(s.members(func(key []byte) {
		switch {
		case textIs(key, "event"):
			v.hasEvent = true
			v.event, _ = s.text()
		case textIs(key, "action"):
			v.hasAction = true
			v.action, _ = s.text()
		case textIs(key, "digit"):
			v.digit, _ = s.text()
		case textIs(key, "dtmf"):
			v.dtmfDigit = nil
			if !s.members(func(key []byte) {
				if textIs(key, "digit") {
					v.dtmfDigit, _ = s.text()
				} else {
					s.skip()
				}
			}) {
				s.skip()
			}
		case textIs(key, "payload"):
			v.hasPayload, v.name = true, nil
			s.peek()
			start := s.pos
			if !s.members(func(key []byte) {
				if textIs(key, "name") {
					v.name, _ = s.text()
				} else {
					s.skip()
				}
			}) {
				s.skip()
			}
			v.payload = msg[start:s.pos]
		default:
			s.skip()
		}
	}))
}

func (v *vonageSession) Format() codec.Format { return v.format }

func (v *vonageSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	switch typ {
	case Binary:
		if !v.started {
			return protocolErrorf(vonageName, "audio before websocket:connected: Vonage sends that text message first")
		}
		if err := checkAudio(vonageName, len(msg), v.maxAudio, v.format); err != nil {
			return err
		}
		in.Kind, in.Audio = KindAudio, msg
		return nil
	case Text:
	default:
		return protocolErrorf(vonageName, "message of unknown WebSocket type %d", int(typ))
	}
	var m vonageText
	if err := dispatchError(vonageName, m.scan(msg), "event", `text message without an "event" member`, m.hasEvent, m.event); err != nil {
		return err
	}
	switch {
	case textIs(m.event, "websocket:connected"):
		return v.connected(msg, in)
	case textIs(m.event, "websocket:dtmf"):
		return decodeVonageDTMF(&m, in)
	case textIs(m.event, "websocket:notify"):
		if m.name == nil {
			return nil // a notify the host did not send: it names its marks
		}
		var name string
		_ = json.Unmarshal(m.name, &name) // a well-formed JSON string
		return markInbound(vonageName, "websocket:notify payload.name", name, in)
	}
	return nil // websocket:cleared, and events added after this code
}

// decodeVonageDTMF reads the key of a websocket:dtmf message: its digit,
// or dtmf.digit without one.
func decodeVonageDTMF(m *vonageText, in *Inbound) error {
	q := m.digit
	if q == nil {
		q = m.dtmfDigit
	}
	if q == nil {
		return protocolErrorf(vonageName, `websocket:dtmf without a string "digit"`)
	}
	d, ok := digitOf(q)
	if !ok {
		var text string
		_ = json.Unmarshal(q, &text)
		return protocolErrorf(vonageName, "websocket:dtmf digit %s is not one of 0-9 * # A-D", excerpt(text))
	}
	in.Kind, in.Digit = KindDTMF, d
	return nil
}

// connected starts the stream: its format from content-type, its custom
// parameters from the NCCO's headers.
func (v *vonageSession) connected(msg []byte, in *Inbound) error {
	if v.started {
		return protocolErrorf(vonageName, "a second websocket:connected on one stream")
	}
	var m map[string]json.RawMessage
	if err := decodeMessage(vonageName, "websocket:connected", msg, &m); err != nil {
		return err
	}
	f := vonageDefault
	if raw, ok := m["content-type"]; ok {
		var ct string
		if err := json.Unmarshal(raw, &ct); err != nil {
			return protocolErrorf(vonageName, "websocket:connected content-type is not a string")
		}
		var err error
		if f, err = vonageFormat(ct); err != nil {
			return err
		}
	}
	var params map[string]string
	for k, raw := range m {
		if k == "event" || k == "content-type" {
			continue
		}
		if params == nil {
			params = make(map[string]string, len(m))
		}
		params[k] = headerValue(raw)
	}
	if err := CheckParams("websocket:connected headers", params); err != nil {
		return limitError(vonageName, err)
	}
	v.format, v.started = f, true
	v.maxAudio = v.cfg.maxAudio(f)
	in.Kind, in.Start = KindStart, &Start{Params: params}
	return nil
}

// headerValue is a header of the NCCO as a custom parameter: a string as
// it is, any other JSON value as its text.
func headerValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// vonageFormat reads a content-type such as "audio/l16;rate=16000": L16
// at 8000, 16000 or 24000 Hz; without a rate, 16000.
func vonageFormat(ct string) (codec.Format, error) {
	typ, rate := mediaType(ct)
	f := codec.Format{Encoding: codec.L16, Rate: rate}
	if f.Rate == 0 {
		f.Rate = vonageDefault.Rate
	}
	if typ != "audio/l16" || f.Check() != nil {
		return f, unsupportedFormat(vonageName, "unsupported content-type %s; voxhost takes audio/l16;rate=8000, 16000 or 24000", excerpt(ct))
	}
	return f, nil
}

// vonageContentType is the content-type of f, as Vonage writes it.
func vonageContentType(f codec.Format) string {
	return "audio/l16;rate=" + strconv.Itoa(f.Rate)
}

// Audio renders a binary message of the frame. Vonage takes 20 ms
// messages only: a shorter frame is sent padded with silence (the last
// piece of a bot's answer, or the part before a mark).
func (v *vonageSession) Audio(frame []byte) (MessageType, []byte) {
	n := vonageFrameMs * v.format.BytesPerMs()
	if len(frame) >= n {
		return Binary, frame
	}
	copy(v.pad, frame)
	clear(v.pad[len(frame):n])
	return Binary, v.pad[:n]
}

// Mark renders a notify: Vonage sends its payload back in a
// websocket:notify once the audio sent before it has played. There is
// none before the stream starts.
func (v *vonageSession) Mark(name string) (MessageType, []byte, bool) {
	if !v.started {
		return 0, nil, false
	}
	b := append(v.out[:0], `{"action":"notify","payload":{"name":`...)
	b = appendQuoted(b, name)
	v.out = append(b, "}}"...)
	return Text, v.out, true
}

// Clear renders a clear, which makes Vonage drop the audio it has
// buffered; it answers websocket:cleared.
func (v *vonageSession) Clear() (MessageType, []byte, bool) {
	if !v.started {
		return 0, nil, false
	}
	v.out = append(v.out[:0], `{"action":"clear"}`...)
	return Text, v.out, true
}

// Event renders nothing: Vonage takes audio, notify and clear only.
func (v *vonageSession) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// The vonage dialect: voxhost dials the bot as Vonage dials the WebSocket
// of an NCCO connect action, so a bot written for Vonage (pipecat's
// VonageFrameSerializer) runs behind voxhost unchanged.
//
// To the bot: websocket:connected with the leg's content-type and the
// call's custom parameters at the top level, as Vonage sends the NCCO's
// headers (the call's ids are not sent: Vonage's message has none; a route
// passes them as parameters if the bot needs them), then binary L16 audio,
// websocket:dtmf {"digit":D} (without a duration: the host does not know
// how long the key was held), websocket:notify with the payload of each
// of the bot's notifies once the audio before it has played to the caller
// (or was cleared) and websocket:cleared after the bot's clear. Plugin
// events go as a websocket:notify whose payload holds the raw protocol's
// plugin event, {"voxhost":{"event":"plugin","plugin":P,"name":N,
// "data":D,"t_ms":T}}: a bot that looks its payloads up among those it
// sent passes over it.
// Vonage has no message for the end of a call: the socket closes.
//
// From the bot: binary audio of any whole number of samples, and
// {"action":"notify","payload":P} and {"action":"clear"}; other text
// messages are ignored, as Vonage ignores them.
type vonageDialect struct{}

func (vonageDialect) Name() string { return vonageName }

func (vonageDialect) CheckFormat(f codec.Format) error {
	if f.Encoding != codec.L16 || f.Check() != nil {
		return errFormat(vonageName, f, "L16 at 8000, 16000 or 24000 Hz (audio/l16;rate=N)")
	}
	return nil
}

func (vonageDialect) NewBotSession(cfg BotConfig) BotSession {
	return &vonageBot{newBinaryBot(cfg)}
}

type vonageBot struct{ binaryBot }

func (v *vonageBot) Open(send func(MessageType, []byte) error) error {
	b := append(v.out[:0], `{"event":"websocket:connected","content-type":`...)
	b = appendQuoted(b, vonageContentType(v.cfg.Format))
	for _, k := range slices.Sorted(maps.Keys(v.cfg.Call.Params)) {
		if k == "event" || k == "content-type" {
			continue // members of Vonage's own
		}
		b = append(b, ',')
		b = appendQuoted(b, k)
		b = append(b, ':')
		b = appendQuoted(b, v.cfg.Call.Params[k])
	}
	v.out = append(b, '}')
	return send(Text, v.out)
}

// DTMF renders a websocket:dtmf; there is none for a byte that is not a
// key.
func (v *vonageBot) DTMF(digit byte) (MessageType, []byte, bool) {
	return textDigit(&v.out, `{"event":"websocket:dtmf","digit":"`, digit)
}

// MarkPlayed returns the payload of the bot's notify, which is the mark's
// name, in a websocket:notify.
func (v *vonageBot) MarkPlayed(name string) (MessageType, []byte, bool) {
	v.out = appendVonageNotify(v.out[:0], []byte(name))
	return Text, v.out, true
}

// appendVonageNotify appends a websocket:notify carrying payload: JSON
// text as it is, anything else as a JSON string.
func appendVonageNotify(dst, payload []byte) []byte {
	dst = append(dst, `{"event":"websocket:notify","payload":`...)
	dst = appendData(dst, payload)
	return append(dst, '}')
}

// Interrupted answers the bot's clear with websocket:cleared, as Vonage
// does. A barge-in the host detected has no message: the bot learns of it
// as from Vonage, by its notifies coming back early.
func (v *vonageBot) Interrupted(_ int64, byBot bool, send func(MessageType, []byte) error) error {
	if !byBot {
		return nil
	}
	v.out = append(v.out[:0], `{"event":"websocket:cleared"}`...)
	return send(Text, v.out)
}

// Event renders a plugin's event as a websocket:notify of the raw
// protocol's plugin event, under "voxhost".
func (v *vonageBot) Event(plugin, name string, data []byte, tMs int64) (MessageType, []byte, bool) {
	event := appendRawEvent([]byte(`{"voxhost":`), plugin, name, data, tMs)
	v.out = appendVonageNotify(v.out[:0], append(event, '}'))
	return Text, v.out, true
}

// Stop renders nothing: Vonage ends a call by closing the socket.
func (v *vonageBot) Stop() (MessageType, []byte, bool) { return 0, nil, false }

// Decode reads what a bot sends Vonage: binary audio, notify and clear.
func (v *vonageBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	switch typ {
	case Binary:
		return binaryBotAudio(vonageName, msg, v.cfg.MaxAudio, v.cfg.Format, in)
	case Text:
	default:
		return protocolErrorf(vonageName, "message of unknown WebSocket type %d", int(typ))
	}
	var m vonageText
	if reason := m.scan(msg); reason != "" {
		return protocolErrorf(vonageName, "%s", reason)
	}
	switch {
	case m.action == nil:
		return nil // not a command: Vonage ignores it
	case textIs(m.action, "clear"):
		in.Kind = KindClear
	case textIs(m.action, "notify"):
		if !m.hasPayload {
			return protocolErrorf(vonageName, `notify without a "payload"`)
		}
		// The payload goes back as it came, so it is the mark's name.
		return markInbound(vonageName, "notify payload", string(m.payload), in)
	}
	return nil
}
