package transport

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

const rawName = "raw"

// Raw returns the raw protocol: binary messages carry bare μ-law audio both
// ways, any non-zero multiple of 8 bytes, and the stream starts when the
// socket opens. Text messages are JSON objects with an "event" member:
//
//	{"event":"dtmf","digit":"5"}   a key press (0-9 * # A-D)
//	{"event":"mark","name":"x"}    a mark, echoed once the audio before it is sent
//	{"event":"stop"}               the end of the stream
//
// Other events are ignored. The host sends marks in the same form, clears
// as {"event":"clear"} and plugin events as
// {"event":"plugin","plugin":P,"name":N,"data":D,"t_ms":T}, with "data"
// left out when the plugin gave none.
func Raw() Protocol { return rawProtocol }

func init() { RegisterProtocol(rawProtocol) }

type raw struct{ endpoint }

var rawProtocol = raw{endpoint{name: rawName, path: "/ws", startsOnConnect: true}}

// NewSession takes the stream's format from the query: ?codec=l16&rate=16000
// (codec.ParseFormat's names), μ-law at 8 kHz without one.
func (raw) NewSession(cfg SessionConfig) (Session, error) {
	f, err := codec.ParseFormat(cfg.Query.Get("codec"), queryRate(cfg.Query))
	if err != nil {
		return nil, fmt.Errorf("raw: %v", err)
	}
	return &rawSession{format: f, maxAudio: cfg.maxAudio(f), out: make([]byte, 0, 256)}, nil
}

// queryRate reads ?rate=N; a missing or unreadable one is 0, the codec's
// default (ParseFormat then names a bad rate).
func queryRate(q url.Values) int {
	r, _ := strconv.Atoi(q.Get("rate"))
	return r
}

type rawSession struct {
	noHangup
	format   codec.Format
	maxAudio int
	out      []byte // the last rendered text message
}

func (r *rawSession) Format() codec.Format { return r.format }

func (r *rawSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	switch typ {
	case Binary:
		if err := checkAudio(rawName, len(msg), r.maxAudio, r.format); err != nil {
			return err
		}
		in.Kind, in.Audio = KindAudio, msg
		return nil
	case Text:
		err := decodeRawControl(msg, in)
		if in.Kind == KindClear {
			// A clear is the host's to send: a caller has no queue of the
			// host's to drop, so it is one more event to ignore.
			in.Kind = KindIgnore
		}
		return err
	}
	return protocolErrorf(rawName, "message of unknown WebSocket type %d", int(typ))
}

// decodeRawControl reads a text message of the control vocabulary, both
// roles' events: dtmf, mark, stop and clear. The server role then drops
// what a caller may not ask for (a clear).
func decodeRawControl(msg []byte, in *Inbound) error {
	var event, digit, name []byte
	var hasEvent bool
	s := scanner{buf: msg}
	reason := s.finish(s.members(func(key []byte) {
		switch {
		case textIs(key, "event"):
			hasEvent = true
			event, _ = s.text()
		case textIs(key, "digit"):
			digit, _ = s.text()
		case textIs(key, "name"):
			name, _ = s.text()
		default:
			s.skip()
		}
	}))
	if err := dispatchError(rawName, reason, "event", `text message without an "event" member`, hasEvent, event); err != nil {
		return err
	}
	switch {
	case textIs(event, "dtmf"):
		if digit == nil {
			return protocolErrorf(rawName, `dtmf message without a string "digit"`)
		}
		d, ok := digitOf(digit)
		if !ok {
			var text string
			_ = json.Unmarshal(digit, &text) // a well-formed JSON string, as for marks below
			return protocolErrorf(rawName, "dtmf digit %s is not one of 0-9 * # A-D", excerpt(text))
		}
		in.Kind, in.Digit = KindDTMF, d
	case textIs(event, "mark"):
		if name == nil {
			return protocolErrorf(rawName, `mark message without a string "name"`)
		}
		// The token is a well-formed JSON string, so this cannot fail; marks
		// are rare enough for encoding/json to resolve the escapes.
		_ = json.Unmarshal(name, &in.Mark)
		if err := CheckMark("mark name", in.Mark); err != nil {
			in.Mark = ""
			return limitError(rawName, err)
		}
		in.Kind = KindMark
	case textIs(event, "stop"):
		in.Kind = KindStop
	case textIs(event, "clear"):
		in.Kind = KindClear
	}
	return nil
}

func (r *rawSession) Audio(frame []byte) (MessageType, []byte) { return Binary, frame }

func (r *rawSession) Mark(name string) (MessageType, []byte, bool) {
	r.out = appendRawMark(r.out[:0], name)
	return Text, r.out, true
}

// appendRawMark appends a mark message, the same both ways and in both
// roles.
func appendRawMark(dst []byte, name string) []byte {
	dst = append(dst, `{"event":"mark","name":`...)
	dst = appendQuoted(dst, name)
	return append(dst, '}')
}

func (r *rawSession) Clear() (MessageType, []byte, bool) {
	r.out = append(r.out[:0], `{"event":"clear"}`...)
	return Text, r.out, true
}

func (r *rawSession) Event(plugin, name string, data []byte, tMs int64) (MessageType, []byte, bool) {
	r.out = appendRawEvent(r.out[:0], plugin, name, data, tMs)
	return Text, r.out, true
}

// appendRawEvent appends a plugin event message, which the server role
// sends to callers and the client role to bots.
func appendRawEvent(dst []byte, plugin, name string, data []byte, tMs int64) []byte {
	dst = append(dst, `{"event":"plugin","plugin":`...)
	dst = appendQuoted(dst, plugin)
	dst = append(dst, `,"name":`...)
	dst = appendQuoted(dst, name)
	if len(data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = appendData(dst, data)
	}
	dst = append(dst, `,"t_ms":`...)
	dst = strconv.AppendInt(dst, tMs, 10)
	return append(dst, '}')
}
