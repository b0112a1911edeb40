package transport_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/voxhost/voxhost/host/transport"
)

func TestRawDecode(t *testing.T) {
	p := transport.Raw()
	if p.Name() != "raw" || !p.StartsOnConnect() {
		t.Fatalf("Name %q, StartsOnConnect %v; want raw, true", p.Name(), p.StartsOnConnect())
	}
	s := session(p)
	frame, short := tone(0, 160), tone(0, 8)
	steps := []struct {
		typ  transport.MessageType
		msg  []byte
		want transport.Inbound
	}{
		{transport.Binary, frame, transport.Inbound{Kind: transport.KindAudio, Audio: frame}},
		{transport.Binary, short, transport.Inbound{Kind: transport.KindAudio, Audio: short}},
		{transport.Text, []byte(`{"event":"dtmf","digit":"5"}`), transport.Inbound{Kind: transport.KindDTMF, Digit: '5'}},
		{transport.Text, []byte(` { "digit" : "D" , "event" : "dtmf" } `), transport.Inbound{Kind: transport.KindDTMF, Digit: 'D'}},
		{transport.Text, []byte(`{"event":"mark","name":"turn \"1\" \u00e9"}`), transport.Inbound{Kind: transport.KindMark, Mark: `turn "1" é`}},
		{transport.Text, []byte(`{"event":"hello","version":2}`), transport.Inbound{Kind: transport.KindIgnore}},
		{transport.Binary, maxFrame(), transport.Inbound{Kind: transport.KindAudio, Audio: maxFrame()}},
		{transport.Text, []byte(`{"event":"stop"}`), transport.Inbound{Kind: transport.KindStop}},
	}
	var in transport.Inbound
	for i, st := range steps {
		if err := s.Decode(st.typ, st.msg, &in); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !reflect.DeepEqual(in, st.want) {
			t.Errorf("message %d decoded to %+v, want %+v", i, in, st.want)
		}
	}
}

func maxFrame() []byte { return tone(0, maxAudio) }

func TestRawErrors(t *testing.T) {
	tests := []struct {
		name string
		typ  transport.MessageType
		msg  []byte
		want string
	}{
		{"7 bytes", transport.Binary, tone(0, 7), "raw: audio frame of 7 bytes is not a multiple of 8 (whole milliseconds of 8 kHz μ-law)"},
		{"empty binary message", transport.Binary, nil, "raw: empty audio frame"},
		{"audio too long", transport.Binary, tone(0, maxAudio+8), "raw: audio frame of 1608 bytes exceeds the limit of 1600"},
		{"invalid JSON", transport.Text, []byte(`{"event":"dtmf","digit":5"}`), "raw: invalid JSON at byte 25: expected ',' or '}' after an object member"},
		{"not JSON", transport.Text, []byte("hello"), "raw: invalid JSON at byte 0: expected a value"},
		{"no event", transport.Text, []byte(`{"digit":"5"}`), `raw: text message without an "event" member`},
		{"bad digit", transport.Text, []byte(`{"event":"dtmf","digit":"x"}`), `raw: dtmf digit "x" is not one of 0-9 * # A-D`},
		{"mark without name", transport.Text, []byte(`{"event":"mark"}`), `raw: mark message without a string "name"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := session(transport.Raw())
			var in transport.Inbound
			err := s.Decode(tt.typ, tt.msg, &in)
			var perr *transport.ProtocolError
			if !errors.As(err, &perr) {
				t.Fatalf("error %v (%T), want a *ProtocolError", err, err)
			}
			if err.Error() != tt.want || perr.Protocol != "raw" {
				t.Errorf("error %q\nwant  %q", err, tt.want)
			}
		})
	}
}

func TestRawOutbound(t *testing.T) {
	s := session(transport.Raw())
	frame := tone(0, 160)
	if typ, msg := s.Audio(frame); typ != transport.Binary || &msg[0] != &frame[0] || len(msg) != len(frame) {
		t.Errorf("Audio gave type %d and %d bytes; want the frame itself as a binary message", typ, len(msg))
	}

	tests := []struct {
		name   string
		render func() (transport.MessageType, []byte, bool)
		want   map[string]any
	}{
		{"mark", func() (transport.MessageType, []byte, bool) { return s.Mark("turn \"1\"") },
			map[string]any{"event": "mark", "name": "turn \"1\""}},
		{"clear", s.Clear, map[string]any{"event": "clear"}},
		{"event with data", func() (transport.MessageType, []byte, bool) {
			return s.Event("vad", "speech_start", []byte(`{"energy": 0.5}`), 1240)
		}, map[string]any{"event": "plugin", "plugin": "vad", "name": "speech_start", "data": map[string]any{"energy": 0.5}, "t_ms": 1240.0}},
		{"event without data", func() (transport.MessageType, []byte, bool) { return s.Event("vad", "speech_end", nil, 0) },
			map[string]any{"event": "plugin", "plugin": "vad", "name": "speech_end", "t_ms": 0.0}},
		// The ABI forbids such data, but a message must stay valid JSON and
		// UTF-8 whatever a plugin emits.
		{"event with invalid data", func() (transport.MessageType, []byte, bool) {
			return s.Event("odd", "x", []byte("{\"a\":\xff"), 5)
		}, map[string]any{"event": "plugin", "plugin": "odd", "name": "x", "data": "{\"a\":\uFFFD", "t_ms": 5.0}},
	}
	for _, tt := range tests {
		typ, msg, ok := tt.render()
		var got map[string]any
		if err := json.Unmarshal(msg, &got); err != nil || !ok || typ != transport.Text {
			t.Errorf("%s: %s (type %d, ok %v): %v", tt.name, msg, typ, ok, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: rendered %s, want %v", tt.name, msg, tt.want)
		}
	}
}
