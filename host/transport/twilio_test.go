package transport_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

const (
	streamSid  = "MZ18ad3ab5a668481ce02b83e7395059f0"
	callSid    = "CA6e7e6e17d4f4e1e5a2b0d3c9f1e2a3b4"
	accountSid = "AC25e16e9a716a4a1786a7c83f58e30482"
	maxAudio   = 1600 // 200 ms
)

// tone returns n bytes of μ-law: a 440 Hz sine at 8 kHz, starting at sample
// offset, encoded by the host's own codec.
func tone(offset, n int) []byte {
	pcm := make([]byte, 2*n)
	for i := range n {
		v := 12000 * math.Sin(2*math.Pi*440*float64(offset+i)/8000)
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(v)))
	}
	ulaw := make([]byte, n)
	codec.EncodeUlaw(ulaw, pcm)
	return ulaw
}

// Messages shaped as in Twilio's "Media Streams - WebSocket Messages" page,
// with its indentation, member order and string counters.
const connectedMsg = `{
  "event": "connected",
  "protocol": "Call",
  "version": "1.0.0"
}`

const startMsg = `{
  "event": "start",
  "sequenceNumber": "1",
  "start": {
    "accountSid": "` + accountSid + `",
    "streamSid": "` + streamSid + `",
    "callSid": "` + callSid + `",
    "tracks": [ "inbound" ],
    "mediaFormat": {
      "encoding": "audio/x-mulaw",
      "sampleRate": 8000,
      "channels": 1
    },
    "customParameters": {
      "pipeline": "loud"
    }
  },
  "streamSid": "` + streamSid + `"
}`

func mediaMsg(seq, chunk int, track string, ulaw []byte) string {
	return fmt.Sprintf(`{
  "event": "media",
  "sequenceNumber": "%d",
  "media": {
    "track": %q,
    "chunk": "%d",
    "timestamp": "%d",
    "payload": %q
  },
  "streamSid": %q
}`, seq, track, chunk, (chunk-1)*20, base64.StdEncoding.EncodeToString(ulaw), streamSid)
}

func dtmfMsg(seq int, digit string) string {
	return fmt.Sprintf(`{
  "event": "dtmf",
  "streamSid": %q,
  "sequenceNumber": "%d",
  "dtmf": {
    "track": "inbound_track",
    "digit": %q
  }
}`, streamSid, seq, digit)
}

func markMsg(seq int, name string) string {
	return fmt.Sprintf(`{
  "event": "mark",
  "sequenceNumber": "%d",
  "streamSid": %q,
  "mark": {
    "name": %q
  }
}`, seq, streamSid, name)
}

const stopMsg = `{
  "event": "stop",
  "sequenceNumber": "9",
  "stop": {
    "accountSid": "` + accountSid + `",
    "callSid": "` + callSid + `"
  },
  "streamSid": "` + streamSid + `"
}`

// started returns a Twilio session that has decoded startMsg.
func started(t testing.TB) transport.Session {
	t.Helper()
	s := session(transport.Twilio())
	var in transport.Inbound
	if err := s.Decode(transport.Text, []byte(startMsg), &in); err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func TestTwilioConversation(t *testing.T) {
	p := transport.Twilio()
	if p.Name() != "twilio" || p.StartsOnConnect() {
		t.Fatalf("Name %q, StartsOnConnect %v; want twilio, false", p.Name(), p.StartsOnConnect())
	}
	s := session(p)
	frames := [][]byte{tone(0, 160), tone(160, 160), tone(320, 160)}
	wantStart := &transport.Start{
		StreamID:  streamSid,
		CallID:    callSid,
		AccountID: accountSid,
		Tracks:    []string{"inbound"},
		Params:    map[string]string{"pipeline": "loud"},
	}
	steps := []struct {
		msg  string
		want transport.Inbound
	}{
		{connectedMsg, transport.Inbound{Kind: transport.KindIgnore}},
		{startMsg, transport.Inbound{Kind: transport.KindStart, Start: wantStart}},
		{mediaMsg(2, 1, "inbound", frames[0]), transport.Inbound{Kind: transport.KindAudio, Audio: frames[0]}},
		{mediaMsg(3, 2, "inbound", frames[1]), transport.Inbound{Kind: transport.KindAudio, Audio: frames[1]}},
		{dtmfMsg(4, "5"), transport.Inbound{Kind: transport.KindDTMF, Digit: '5'}},
		{mediaMsg(5, 3, "inbound", frames[2]), transport.Inbound{Kind: transport.KindAudio, Audio: frames[2]}},
		{dtmfMsg(6, "#"), transport.Inbound{Kind: transport.KindDTMF, Digit: '#'}},
		{markMsg(7, "greeting \"done\" ✓"), transport.Inbound{Kind: transport.KindMark, Mark: "greeting \"done\" ✓"}},
		{`{"event":"some_future_event","sequenceNumber":"8","streamSid":"` + streamSid + `"}`, transport.Inbound{Kind: transport.KindIgnore}},
		{stopMsg, transport.Inbound{Kind: transport.KindStop}},
	}
	// One Inbound for the whole call, as the call loop keeps it: every
	// Decode must overwrite what the previous one left.
	var in transport.Inbound
	for i, st := range steps {
		if err := s.Decode(transport.Text, []byte(st.msg), &in); err != nil {
			t.Fatalf("message %d: %v\n%s", i, err, st.msg)
		}
		if !reflect.DeepEqual(in, st.want) {
			t.Errorf("message %d decoded to\n%+v\nwant\n%+v", i, in, st.want)
		}
	}
}

func TestTwilioIgnoresOutboundTrack(t *testing.T) {
	s := started(t)
	var in transport.Inbound
	if err := s.Decode(transport.Text, []byte(mediaMsg(2, 1, "outbound", tone(0, 160))), &in); err != nil {
		t.Fatal(err)
	}
	if in.Kind != transport.KindIgnore {
		t.Errorf("outbound-track media decoded as %v, want ignore", in.Kind)
	}
}

// TestTwilioMediaScanner feeds media messages that are valid JSON in forms
// Twilio does not happen to use; each must give the same audio.
func TestTwilioMediaScanner(t *testing.T) {
	audio := tone(0, 8)
	b64 := base64.StdEncoding.EncodeToString(audio) // "nSTdGSoDBrU="
	escaped := strings.ReplaceAll(`{"event":"media","media":{"payload":"`+b64+`"}}`, "S", `\u0053`)
	for _, msg := range []string{
		`{"event":"media","media":{"payload":"` + b64 + `"}}`,
		`{"media":{"chunk":"1","payload":"` + b64 + `","track":"inbound"},"event":"media"}`,
		" \r\n\t{ \"event\" :\t\"media\" , \"media\" : { \"payload\" : \"" + b64 + "\" } } \n",
		`{"event":"media","extra":[1,-2.5e+3,true,false,null,{"a":[]}],"media":{"payload":"` + b64 + `"}}`,
		`{"event":"media","media":{"payload":"AAAA"},"media":{"payload":"` + b64 + `"}}`,
		`{"event":"med\u0069a","media":{"payload":"` + strings.ReplaceAll(b64, "/", `\/`) + `"}}`,
		escaped,
	} {
		s := started(t)
		var in transport.Inbound
		if err := s.Decode(transport.Text, []byte(msg), &in); err != nil {
			t.Errorf("%s: %v", msg, err)
			continue
		}
		if in.Kind != transport.KindAudio || string(in.Audio) != string(audio) {
			t.Errorf("%s: decoded %v %x, want audio %x", msg, in.Kind, in.Audio, audio)
		}
	}
}

func TestTwilioOutbound(t *testing.T) {
	s := session(transport.Twilio())
	if _, _, ok := s.Mark("early"); ok {
		t.Error("Mark before start rendered a message; there is no streamSid to send it to")
	}
	if _, _, ok := s.Clear(); ok {
		t.Error("Clear before start rendered a message; there is no streamSid to send it to")
	}
	frame := tone(0, 160)
	if _, msg := s.Audio(frame); !json.Valid(msg) {
		t.Errorf("Audio before start rendered invalid JSON: %s", msg)
	}
	s = started(t)

	typ, msg := s.Audio(frame)
	var media struct {
		Event     string `json:"event"`
		StreamSid string `json:"streamSid"`
		Media     struct {
			Payload string `json:"payload"`
		} `json:"media"`
	}
	decodeExactly(t, typ, msg, &media)
	got, err := base64.StdEncoding.DecodeString(media.Media.Payload)
	if err != nil || media.Event != "media" || media.StreamSid != streamSid || string(got) != string(frame) {
		t.Errorf("media message %s: event %q, streamSid %q, payload %x (%v); want media, %s, %x",
			msg, media.Event, media.StreamSid, got, err, streamSid, frame)
	}

	name := "bot \"reply\" 1\n\x01é"
	typ, msg, ok := s.Mark(name)
	var mark struct {
		Event     string `json:"event"`
		StreamSid string `json:"streamSid"`
		Mark      struct {
			Name string `json:"name"`
		} `json:"mark"`
	}
	decodeExactly(t, typ, msg, &mark)
	if !ok || mark.Event != "mark" || mark.StreamSid != streamSid || mark.Mark.Name != name {
		t.Errorf("mark message %s (ok %v): want event mark, streamSid %s, name %q", msg, ok, streamSid, name)
	}

	typ, msg, ok = s.Clear()
	var clear struct {
		Event     string `json:"event"`
		StreamSid string `json:"streamSid"`
	}
	decodeExactly(t, typ, msg, &clear)
	if !ok || clear.Event != "clear" || clear.StreamSid != streamSid {
		t.Errorf("clear message %s (ok %v): want event clear, streamSid %s", msg, ok, streamSid)
	}

	if _, _, ok := s.Event("vad", "speech_start", nil, 20); ok {
		t.Error("Event rendered a message; Twilio accepts only media, mark and clear")
	}
}

// decodeExactly checks that msg is a text message holding one JSON object
// with exactly the members of v, and decodes it into v.
func decodeExactly(t *testing.T, typ transport.MessageType, msg []byte, v any) {
	t.Helper()
	if typ != transport.Text {
		t.Errorf("message type %d, want Text", typ)
	}
	dec := json.NewDecoder(strings.NewReader(string(msg)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	if dec.More() {
		t.Fatalf("%s: data after the object", msg)
	}
}

func TestTwilioErrors(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(tone(0, 160))
	tests := []struct {
		name        string
		typ         transport.MessageType
		msg         string
		noStart     bool
		want        string
		unsupported bool
	}{
		{"invalid JSON", transport.Text, `{"event":"media","media":{"payload":"` + good + `"}`, false,
			"twilio: invalid JSON at byte 255: message ends early, expected ',' or '}' after an object member", false},
		{"not an object", transport.Text, `["media"]`, false, "twilio: message is JSON but not an object", false},
		{"trailing data", transport.Text, `{"event":"stop"} x`, false, "twilio: invalid JSON at byte 17: unexpected data after the JSON value", false},
		{"no event", transport.Text, `{"media":{"payload":"` + good + `"}}`, false, `twilio: message without an "event" member`, false},
		{"bad base64", transport.Text, `{"event":"media","media":{"payload":"` + good[:12] + "*" + good[13:] + `"}}`, false,
			"twilio: bad base64 in media payload at byte 12", false},
		{"binary message", transport.Binary, string(tone(0, 160)), false,
			"twilio: binary message on a Twilio stream: Twilio sends JSON text messages only", true},
		{"media before start", transport.Text, mediaMsg(1, 1, "inbound", tone(0, 160)), true,
			"twilio: media before start: Twilio sends a start message first", false},
		{"audio too long", transport.Text, mediaMsg(2, 1, "inbound", tone(0, maxAudio+8)), false,
			"twilio: audio frame of 1608 bytes exceeds the limit of 1600", false},
		{"audio not whole ms", transport.Text, mediaMsg(2, 1, "inbound", tone(0, 159)), false,
			"twilio: audio frame of 159 bytes is not a multiple of 8 (whole milliseconds of 8 kHz μ-law)", false},
		{"empty audio", transport.Text, mediaMsg(2, 1, "inbound", nil), false, "twilio: empty audio frame", false},
		{"payload not a string", transport.Text, `{"event":"media","media":{"payload":42}}`, false,
			"twilio: media message without a string media.payload", false},
		{"wrong media format", transport.Text, strings.Replace(strings.Replace(startMsg, "audio/x-mulaw", "audio/x-l16", 1), "8000", "16000", 1), true,
			`twilio: unsupported media format "audio/x-l16" at 16000 Hz, 1 channel(s); voxhost takes "audio/x-mulaw" at 8000 Hz, 1 channel`, true},
		{"start without streamSid", transport.Text, `{"event":"start","start":{"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`, true,
			"twilio: start message without start.streamSid", false},
		{"bad dtmf digit", transport.Text, dtmfMsg(3, "55"), false, `twilio: dtmf.digit "55" is not one of 0-9 * # A-D`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := session(transport.Twilio())
			if !tt.noStart {
				s = started(t)
			}
			var in transport.Inbound
			err := s.Decode(tt.typ, []byte(tt.msg), &in)
			var perr *transport.ProtocolError
			if !errors.As(err, &perr) {
				t.Fatalf("error %v (%T), want a *ProtocolError", err, err)
			}
			if err.Error() != tt.want || perr.Protocol != "twilio" || perr.Unsupported != tt.unsupported {
				t.Errorf("error %q (unsupported %v)\nwant  %q (unsupported %v)", err, perr.Unsupported, tt.want, tt.unsupported)
			}
			if in.Kind != transport.KindIgnore || in.Audio != nil {
				t.Errorf("a failed Decode left %+v, want the zero Inbound", in)
			}
		})
	}
}

func TestNewSessionRejectsTinyLimit(t *testing.T) {
	for _, p := range []transport.Protocol{transport.Raw(), transport.Twilio()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: a session for 0 ms frames did not panic; no frame could ever pass", p.Name())
				}
			}()
			p.NewSession(transport.SessionConfig{})
		}()
	}
}

// session makes a session of p for frames of up to maxAudio bytes of
// μ-law (200 ms), as the server would.
func session(p transport.Protocol) transport.Session {
	s, err := p.NewSession(transport.SessionConfig{MaxFrameMs: maxAudio / 8})
	if err != nil {
		panic(err)
	}
	return s
}
