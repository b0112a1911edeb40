package transport_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/url"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// What the tests of the JSON carriers (telnyx, plivo, exotel, auto) share.

// sessionQuery makes a session of p for frames of up to maxAudio bytes of
// μ-law, as session does, connected with the query q.
func sessionQuery(t testing.TB, p transport.Protocol, q string) transport.Session {
	t.Helper()
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.NewSession(transport.SessionConfig{MaxFrameMs: maxAudio / 8, Query: v})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startWith returns a session of p, connected with query q, that has
// decoded the messages msgs, the last of them a start.
func startWith(t testing.TB, p transport.Protocol, q string, msgs ...string) transport.Session {
	t.Helper()
	s := sessionQuery(t, p, q)
	var in transport.Inbound
	for _, m := range msgs {
		if err := s.Decode(transport.Text, []byte(m), &in); err != nil {
			t.Fatalf("%v\n%s", err, m)
		}
	}
	if in.Kind != transport.KindStart {
		t.Fatalf("the last message decoded as %v, want start", in.Kind)
	}
	return s
}

// pcmAt returns n bytes of L16 at rate: a 440 Hz sine, little-endian.
func pcmAt(rate, n int) []byte {
	pcm := make([]byte, n&^1)
	for i := range len(pcm) / 2 {
		v := 12000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(v)))
	}
	return pcm
}

// swapped returns the 16-bit samples of b with their bytes swapped: L16 in
// network byte order.
func swapped(b []byte) []byte {
	out := make([]byte, len(b))
	for i := 0; i+1 < len(b); i += 2 {
		out[i], out[i+1] = b[i+1], b[i]
	}
	return out
}

// payloadOf returns the base64 media.payload of a rendered message.
func payloadOf(t *testing.T, msg []byte) []byte {
	t.Helper()
	var m struct {
		Media struct {
			Payload string `json:"payload"`
		} `json:"media"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	b, err := base64.StdEncoding.DecodeString(m.Media.Payload)
	if err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	return b
}

// checkCarrierFuzz is the fuzz check of a carrier's decoder d, server or
// client role, on msg: no panic, an error only as a *ProtocolError that
// does not call valid JSON malformed, and audio only from a message whose
// event is mediaEvent and whose media.payload, by encoding/json, is the
// audio (its samples' bytes swapped when swap). A server session's audio
// must render back out as the same payload.
func checkCarrierFuzz(t *testing.T, d decoder, msg string, mediaEvent string, swap bool) transport.Inbound {
	t.Helper()
	var in transport.Inbound
	err := d.Decode(transport.Text, []byte(msg), &in)
	checkBotDecodeError(t, err, []byte(msg), &in)
	if err != nil || in.Kind != transport.KindAudio {
		return in
	}
	var m struct {
		Event string `json:"event"`
		Media struct {
			Payload string `json:"payload"`
		} `json:"media"`
	}
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		t.Fatalf("accepted media that encoding/json rejects: %v", err)
	}
	want, err := base64.StdEncoding.DecodeString(m.Media.Payload)
	if swap {
		want = swapped(want)
	}
	if m.Event != mediaEvent || err != nil || string(want) != string(in.Audio) {
		t.Fatalf("decoded %x, but encoding/json sees event %q, payload %q (%v)", in.Audio, m.Event, m.Media.Payload, err)
	}
	if len(in.Audio) == 0 || len(in.Audio) > maxAudio {
		t.Fatalf("audio of %d bytes passed", len(in.Audio))
	}
	if s, ok := d.(transport.Session); ok {
		audio := string(in.Audio)
		_, out := s.Audio(in.Audio)
		if back := payloadOf(t, out); swap && string(swapped(back)) != audio || !swap && string(back) != audio {
			t.Fatalf("rendered %s, which does not carry the audio back", out)
		}
	}
	return in
}

// checkLimits checks that each of the messages, decoded by a fresh session
// from newSession, is refused as breaking a bound of limits.go.
func checkLimits(t *testing.T, newSession func() transport.Session, msgs map[string]string) {
	t.Helper()
	for name, msg := range msgs {
		var in transport.Inbound
		err := newSession().Decode(transport.Text, []byte(msg), &in)
		perr, ok := err.(*transport.ProtocolError)
		if !ok || !perr.Limit {
			t.Errorf("%s: %v, want a *ProtocolError of a limit", name, err)
		}
	}
}

// ulawOf returns the μ-law of the A-law frame a: what a caller that sends
// A-law and takes μ-law back must hear of it.
func ulawOf(a []byte) []byte {
	pcm := make([]byte, 2*len(a))
	codec.DecodeAlaw(pcm, a)
	u := make([]byte, len(a))
	codec.EncodeUlaw(u, pcm)
	return u
}

// alawTone is n bytes of A-law: the 440 Hz sine.
func alawTone(n int) []byte {
	a := make([]byte, n)
	codec.EncodeAlaw(a, pcmAt(8000, 2*n))
	return a
}

// The call loop's budget holds for the carriers too: no allocation to
// decode a media message or render one, in either role, whatever the
// conversion (A-law to μ-law, L16 byte order) and through /auto.
func TestCarrierAudioPathsDoNotAllocate(t *testing.T) {
	frame, alaw, pcm16, pcm8 := tone(0, 160), alawTone(160), pcmAt(16000, 640), pcmAt(8000, 320)
	b64 := base64.StdEncoding.EncodeToString
	telnyx := telnyxStarted(t)
	telnyxAlaw := startWith(t, transport.Telnyx(), "", telnyxStartMsg("PCMA", 8000))
	telnyxL16 := startWith(t, transport.Telnyx(), "", telnyxStartMsg("L16", 16000))
	plivo := plivoStarted(t)
	exotel := exotelStarted(t)
	auto := startWith(t, transport.Auto(), "", telnyxConnected, telnyxStartMsg("PCMU", 8000))
	telnyxBot := newBot(t, "telnyx", codec.Format{Encoding: codec.L16, Rate: 16000}, nil)
	plivoBot := newBot(t, "plivo", codec.Telephony, nil)
	exotelBot := newBot(t, "exotel", l16At8k, nil)
	var in transport.Inbound
	decode := func(d decoder, msg string) func() {
		m := []byte(msg)
		return func() {
			if err := d.Decode(transport.Text, m, &in); err != nil || in.Kind != transport.KindAudio {
				t.Fatal(err, in.Kind)
			}
		}
	}
	tests := []struct {
		name string
		run  func()
	}{
		{"telnyx decode media", decode(telnyx, telnyxMediaMsg("inbound", b64(frame)))},
		{"telnyx render audio", func() { telnyx.Audio(frame) }},
		{"telnyx render mark", func() { telnyx.Mark("reply-1") }},
		{"telnyx render A-law as μ-law", func() { telnyxAlaw.Audio(alaw) }},
		{"telnyx decode L16", decode(telnyxL16, telnyxMediaMsg("inbound", b64(swapped(pcm16))))},
		{"telnyx render L16", func() { telnyxL16.Audio(pcm16) }},
		{"plivo decode media", decode(plivo, plivoMediaMsg(2, "inbound", frame))},
		{"plivo render playAudio", func() { plivo.Audio(frame) }},
		{"plivo render checkpoint", func() { plivo.Mark("reply-1") }},
		{"exotel decode media", decode(exotel, exotelMediaMsg(2, 1, pcm8))},
		{"exotel render media", func() { exotel.Audio(pcm8) }},
		{"auto decode media", decode(auto, telnyxMediaMsg("inbound", b64(frame)))},
		{"auto render audio", func() { auto.Audio(frame) }},
		{"telnyx bot render L16", func() { telnyxBot.Audio(pcm16) }},
		{"telnyx bot decode L16", decode(telnyxBot, `{"event":"media","media":{"payload":"`+b64(pcm16)+`"}}`)},
		{"plivo bot render media", func() { plivoBot.Audio(frame) }},
		{"plivo bot decode playAudio", decode(plivoBot, `{"event":"playAudio","media":{"contentType":"audio/x-mulaw","sampleRate":8000,"payload":"`+b64(frame)+`"}}`)},
		{"exotel bot render media", func() { exotelBot.Audio(pcm8) }},
		{"exotel bot decode media", decode(exotelBot, `{"event":"media","media":{"payload":"`+b64(pcm8)+`"}}`)},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(200, tt.run); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tt.name, n)
		}
	}
}

// BenchmarkCarrierMedia decodes and renders a 20 ms media message of each
// carrier, beside Twilio's (BenchmarkTwilioDecodeMedia), whose scanner they
// share.
func BenchmarkCarrierMedia(b *testing.B) {
	frame, pcm := tone(0, 160), pcmAt(8000, 320)
	b64 := base64.StdEncoding.EncodeToString
	for _, c := range []struct {
		name  string
		s     transport.Session
		msg   string
		frame []byte
	}{
		{"telnyx", telnyxStarted(b), telnyxMediaMsg("inbound", b64(frame)), frame},
		{"plivo", plivoStarted(b), plivoMediaMsg(2, "inbound", frame), frame},
		{"exotel", exotelStarted(b), exotelMediaMsg(2, 1, pcm), pcm},
	} {
		msg := []byte(c.msg)
		var in transport.Inbound
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.s.Decode(transport.Text, msg, &in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/render", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.s.Audio(c.frame)
			}
		})
	}
}
