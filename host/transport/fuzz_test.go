package transport_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/transport"
)

// FuzzTwilioDecode checks that the hand-written media scanner never panics
// and agrees with encoding/json: any audio it accepts is the base64 payload
// that encoding/json finds in the same message, and it survives the trip
// back out through Audio.
func FuzzTwilioDecode(f *testing.F) {
	f.Add(mediaMsg(2, 1, "inbound", tone(0, 160)))
	f.Add(mediaMsg(3, 2, "outbound", tone(0, 8)))
	f.Add(`{"event":"med\u0069a","media":{"payload":"nSTdGSoDBrU\u003d"}}`)
	f.Add(`{"event":"media","media":{"payload":"AAAA"},"media":{"payload":"/////////w=="}}`)
	f.Add(`{"event":"media","media":{"payload":"nSTd\nGSoDBrU="}}`)
	f.Add(`{"event":"media","x":[[[{"y":-0.5e-3}]]],"media":{"payload":"nSTdGSoDBrU="}}`)
	f.Add(dtmfMsg(4, "*"))
	f.Add(markMsg(5, "m"))
	f.Add(markMsg(6, strings.Repeat("m", transport.MaxMarkBytes+1)))
	f.Add(twilioStart(streamSid, strings.Repeat("9", transport.MaxIDBytes+1), accountSid, `["inbound"]`, `{"pipeline":"main"}`))
	f.Add(twilioStart(streamSid, callSid, accountSid, `["inbound","outbound"]`, params(transport.MaxParams+1, "v")))
	f.Add(stopMsg)
	f.Add(`{"event":"media","media":{"payload":"nSTdGSoDBrU=`)
	f.Add(`{"event":"x","a":"\x","b":"\u12"}`)
	f.Add(`{"event":"x","n":[01, 1., -, 1e]}`)
	f.Add(`{"event":"x","deep":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`)
	f.Fuzz(func(t *testing.T, msg string) {
		s := started(t)
		var in transport.Inbound
		err := s.Decode(transport.Text, []byte(msg), &in)
		valid := json.Valid([]byte(msg))
		if err != nil {
			perr := (*transport.ProtocolError)(nil)
			if !errors.As(err, &perr) {
				t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
			}
			if valid && strings.HasPrefix(perr.Reason, "invalid JSON") && !strings.Contains(perr.Reason, "nested deeper") {
				t.Fatalf("rejected JSON that encoding/json finds valid: %v", err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted JSON that encoding/json finds invalid, as %v", in.Kind)
		}
		if in.Kind != transport.KindAudio {
			return
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			t.Fatalf("accepted media that encoding/json rejects: %v", err)
		}
		media, _ := m["media"].(map[string]any)
		payload, ok := media["payload"].(string)
		if m["event"] != "media" || !ok {
			t.Fatalf("accepted as media, but encoding/json sees event %v, media.payload %v", m["event"], media["payload"])
		}
		want, err := base64.StdEncoding.DecodeString(payload)
		if err != nil || string(want) != string(in.Audio) {
			t.Fatalf("decoded %x, but the payload %q decodes to %x (%v)", in.Audio, payload, want, err)
		}

		_, out := s.Audio(in.Audio)
		var back struct {
			Media struct {
				Payload []byte `json:"payload"` // encoding/json decodes base64 into []byte
			} `json:"media"`
		}
		if err := json.Unmarshal(out, &back); err != nil || string(back.Media.Payload) != string(in.Audio) {
			t.Fatalf("rendered %s, which does not carry the audio back: %v", out, err)
		}
	})
}
