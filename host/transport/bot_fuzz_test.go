package transport_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// The fuzz targets of the dialects' Decode, what a bot controls. Their
// seeds are in testdata/fuzz/NAME; make fuzz explores from them.

// checkBotDecodeError fails the test unless err, from decoding msg, is a
// *ProtocolError that does not call well-formed JSON malformed; and
// unless a message decoded without error is well-formed JSON.
func checkBotDecodeError(t *testing.T, err error, msg []byte, in *transport.Inbound) {
	t.Helper()
	valid := json.Valid(msg)
	if err == nil {
		if !valid {
			t.Fatalf("accepted JSON that encoding/json finds invalid, as %v", in.Kind)
		}
		return
	}
	var perr *transport.ProtocolError
	if !errors.As(err, &perr) {
		t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
	}
	if valid && strings.HasPrefix(perr.Reason, "invalid JSON") && !strings.Contains(perr.Reason, "nested deeper") {
		t.Fatalf("rejected JSON that encoding/json finds valid: %v", err)
	}
	if in.Kind != transport.KindIgnore || in.Audio != nil {
		t.Fatalf("a failed Decode left %+v", in)
	}
}

// wantBotAudio fails the test unless audio keeps the bounds of a bot's
// audio in format f.
func wantBotAudio(t *testing.T, audio []byte, f codec.Format) {
	t.Helper()
	if len(audio) == 0 || len(audio) > maxAudio || len(audio)%f.SampleBytes() != 0 {
		t.Fatalf("audio of %d bytes passed, outside 1..%d in whole %s samples", len(audio), maxAudio, f.Encoding)
	}
}

// FuzzTwilioBotDecode checks that what the twilio dialect accepts from a
// bot is what encoding/json finds in it, within the bounds, and that its
// audio crosses back through the server role unchanged.
func FuzzTwilioBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg string) {
		b := newBot(t, "twilio", codec.Telephony, nil)
		var in transport.Inbound
		err := b.Decode(transport.Text, []byte(msg), &in)
		checkBotDecodeError(t, err, []byte(msg), &in)
		if err != nil {
			return
		}
		var m struct {
			Event string `json:"event"`
			Media struct {
				Payload string `json:"payload"`
			} `json:"media"`
			Mark struct {
				Name string `json:"name"`
			} `json:"mark"`
			DTMF struct {
				Digit string `json:"digit"`
			} `json:"dtmf"`
		}
		// Types encoding/json cannot fit (a mark that is a string) are no
		// concern where the dialect did not read that member.
		_ = json.Unmarshal([]byte(msg), &m)
		switch in.Kind {
		case transport.KindAudio:
			wantBotAudio(t, in.Audio, codec.Telephony)
			want, err := base64.StdEncoding.DecodeString(m.Media.Payload)
			if m.Event != "media" || err != nil || string(want) != string(in.Audio) {
				t.Fatalf("decoded %x, but encoding/json sees event %q, payload %q (%v)", in.Audio, m.Event, m.Media.Payload, err)
			}
			srv := started(t)
			// A copy, padded to whole ms as the server role takes them:
			// in.Audio views the buffer the next Decode writes.
			frame := append(append([]byte(nil), in.Audio...), make([]byte, (8-len(in.Audio)%8)%8)...)
			_, out := srv.Audio(frame)
			var back transport.Inbound
			if err := b.Decode(transport.Text, out, &back); err != nil || string(back.Audio) != string(frame) {
				t.Fatalf("the server role's media of the audio decoded to %x (%v)", back.Audio, err)
			}
		case transport.KindMark:
			if m.Event != "mark" || in.Mark != m.Mark.Name || len(in.Mark) > transport.MaxMarkBytes {
				t.Fatalf("mark %q, but encoding/json sees event %q, name %q", in.Mark, m.Event, m.Mark.Name)
			}
		case transport.KindClear:
			if m.Event != "clear" {
				t.Fatalf("clear, but encoding/json sees event %q", m.Event)
			}
		case transport.KindDTMF:
			if m.Event != "dtmf" || m.DTMF.Digit != string(in.Digit) {
				t.Fatalf("key %q, but encoding/json sees event %q, digit %q", in.Digit, m.Event, m.DTMF.Digit)
			}
		case transport.KindIgnore:
		default:
			t.Fatalf("a bot's message decoded as %v", in.Kind)
		}
	})
}

// FuzzRawBotDecode checks the raw dialect's bounds on a bot's L16 audio
// and that a bot's text decodes to what a bot may send: a key only as
// encoding/json reads it.
func FuzzRawBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, binary bool, msg []byte) {
		b := newBot(t, "raw", l16At24k, nil)
		var in transport.Inbound
		if binary {
			err := b.Decode(transport.Binary, msg, &in)
			ok := len(msg) > 0 && len(msg) <= maxAudio && len(msg)%2 == 0
			if ok != (err == nil) {
				t.Fatalf("%d bytes of L16: error %v", len(msg), err)
			}
			if ok {
				wantBotAudio(t, in.Audio, l16At24k)
			}
			return
		}
		err := b.Decode(transport.Text, msg, &in)
		checkBotDecodeError(t, err, msg, &in)
		switch in.Kind {
		case transport.KindIgnore, transport.KindClear, transport.KindStop:
		case transport.KindDTMF:
			var m map[string]any // by exact member name, as the dialect reads them
			if json.Unmarshal(msg, &m) != nil || m["event"] != "dtmf" || m["digit"] != string(in.Digit) {
				t.Fatalf("key %q, but encoding/json sees %v", in.Digit, m)
			}
		case transport.KindMark:
			if len(in.Mark) > transport.MaxMarkBytes {
				t.Fatalf("mark of %d bytes passed", len(in.Mark))
			}
			// The acknowledgement goes back as valid JSON.
			if _, out, _ := b.MarkPlayed(in.Mark); !json.Valid(out) {
				t.Fatalf("MarkPlayed rendered %s", out)
			}
		default:
			t.Fatalf("a bot's text decoded as %v", in.Kind)
		}
	})
}

// FuzzOpenAIBotDecode checks that the openai-realtime dialect's audio is
// the delta encoding/json finds, its error text bounded, and that whatever
// it decoded, a barge-in after it renders valid JSON with an audio_end_ms
// the API would take.
func FuzzOpenAIBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg string) {
		b := newBot(t, "openai-realtime", l16At24k, nil)
		// A response under way, with 20 ms of audio, as the state the
		// message lands in.
		for _, m := range []string{openaiResponseCreated, openaiDeltaMsg("response.output_audio.delta", "item_0", pcm24k(960))} {
			decodeBot(t, b, transport.Text, []byte(m))
		}
		var in transport.Inbound
		err := b.Decode(transport.Text, []byte(msg), &in)
		checkBotDecodeError(t, err, []byte(msg), &in)
		var m struct {
			Type   string `json:"type"`
			Delta  string `json:"delta"`
			ItemID string `json:"item_id"`
		}
		_ = json.Unmarshal([]byte(msg), &m)
		switch in.Kind {
		case transport.KindAudio:
			wantBotAudio(t, in.Audio, l16At24k)
			want, err := base64.StdEncoding.DecodeString(m.Delta)
			if (m.Type != "response.output_audio.delta" && m.Type != "response.audio.delta") || err != nil || string(want) != string(in.Audio) {
				t.Fatalf("decoded %x, but encoding/json sees type %q, delta %q (%v)", in.Audio, m.Type, m.Delta, err)
			}
			if transport.CheckID("item_id", m.ItemID) != nil {
				t.Fatalf("audio of item %q passed", m.ItemID)
			}
		case transport.KindError:
			if m.Type != "error" || len(in.Text) > 303 || !utf8.ValidString(in.Text) {
				t.Fatalf("error text %q of %d bytes, type %q", in.Text, len(in.Text), m.Type)
			}
		case transport.KindClear, transport.KindIgnore:
		default:
			t.Fatalf("a server event decoded as %v", in.Kind)
		}

		send := func(_ transport.MessageType, out []byte) error {
			var tr struct {
				Type       string `json:"type"`
				ItemID     string `json:"item_id"`
				AudioEndMs int64  `json:"audio_end_ms"`
			}
			if err := json.Unmarshal(out, &tr); err != nil {
				t.Fatalf("Interrupted sent %s: %v", out, err)
			}
			if tr.Type == "conversation.item.truncate" && (tr.AudioEndMs < 0 || transport.CheckID("item_id", tr.ItemID) != nil) {
				t.Fatalf("Interrupted sent %s", out)
			}
			return nil
		}
		if err := b.Interrupted(10, false, send); err != nil {
			t.Fatal(err)
		}
	})
}
