package transport

import (
	"encoding/json"
	"strconv"
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
func Raw() Protocol { return raw{} }

type raw struct{}

func (raw) Name() string { return rawName }

func (raw) StartsOnConnect() bool { return true }

func (raw) Buffers() bool { return false }

func (raw) NewSession(maxAudio int) Session {
	checkMaxAudio(maxAudio)
	return &rawSession{maxAudio: maxAudio, out: make([]byte, 0, 256)}
}

type rawSession struct {
	maxAudio int
	out      []byte // the last rendered text message
}

func (r *rawSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	switch typ {
	case Binary:
		if err := checkAudio(rawName, len(msg), r.maxAudio); err != nil {
			return err
		}
		in.Kind, in.Audio = KindAudio, msg
		return nil
	case Text:
		return decodeRawControl(msg, in)
	}
	return protocolErrorf(rawName, "message of unknown WebSocket type %d", int(typ))
}

// decodeRawControl reads a text message of the control vocabulary.
func decodeRawControl(msg []byte, in *Inbound) error {
	var event, digit, name []byte
	var hasEvent bool
	s := scanner{buf: msg}
	isObject := s.object()
	for i := 0; isObject; i++ {
		key, ok := s.member(i)
		if !ok {
			break
		}
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
	}
	switch reason := s.finish(isObject); {
	case reason != "":
		return protocolErrorf(rawName, "%s", reason)
	case !hasEvent:
		return protocolErrorf(rawName, `text message without an "event" member`)
	case event == nil:
		return protocolErrorf(rawName, `"event" is not a string`)
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
	}
	return nil
}

func (r *rawSession) Audio(ulaw []byte) (MessageType, []byte) { return Binary, ulaw }

func (r *rawSession) Mark(name string) (MessageType, []byte, bool) {
	b := append(r.out[:0], `{"event":"mark","name":`...)
	b = appendQuoted(b, name)
	r.out = append(b, '}')
	return Text, r.out, true
}

func (r *rawSession) Clear() (MessageType, []byte, bool) {
	r.out = append(r.out[:0], `{"event":"clear"}`...)
	return Text, r.out, true
}

func (r *rawSession) Event(plugin, name string, data []byte, tMs int64) (MessageType, []byte, bool) {
	b := append(r.out[:0], `{"event":"plugin","plugin":`...)
	b = appendQuoted(b, plugin)
	b = append(b, `,"name":`...)
	b = appendQuoted(b, name)
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = appendData(b, data)
	}
	b = append(b, `,"t_ms":`...)
	b = strconv.AppendInt(b, tMs, 10)
	r.out = append(b, '}')
	return Text, r.out, true
}
