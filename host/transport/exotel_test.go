package transport_test

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// Exotel's messages as its AgentStream "WebSocket protocol" page
// (developer.exotel.com/docs/agentstream/websocket-protocol) prints them,
// under "Events — Exotel → your server" and "Events — your server →
// Exotel (Voicebot only)"; its audio: "Raw PCM (linear16) — uncompressed
// | 16-bit signed, little-endian | Mono | Default sample rate 8 000 Hz |
// Supported rates 8 000 · 16 000 · 24 000 Hz | Transport Base64 | Chunk
// size 3 200–100 000 bytes, multiple of 320".
const (
	exotelSid       = "MZxxxxxxxxxxxxxxxxxxxxxxxx"
	exotelCallSid   = "CAxxxxxxxxxxxxxxxxxxxxxxxx"
	exotelAccount   = "ACxxxxxxxxxxxxxxxxxxxxxxxx"
	exotelConnected = `{ "event": "connected" }`
)

func exotelStartMsg(mediaFormat string) string {
	return `{
  "event": "start",
  "sequence_number": "1",
  "stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
  "start": {
    "stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
    "call_sid": "CAxxxxxxxxxxxxxxxxxxxxxxxx",
    "account_sid": "ACxxxxxxxxxxxxxxxxxxxxxxxx",
    "from": "+919876543210",
    "to": "+918047491899",
    "custom_parameters": { "key1": "value1" },
    "media_format": ` + mediaFormat + `
  }
}`
}

var exotelDocStart = exotelStartMsg(`{
      "encoding": "audio/x-raw",
      "sample_rate": "8000",
      "bit_rate": "16"
    }`)

func exotelMediaMsg(seq, chunk int, pcm []byte) string {
	return fmt.Sprintf(`{
  "event": "media",
  "sequence_number": "%d",
  "stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
  "media": {
    "chunk": "%d",
    "timestamp": "%d",
    "payload": %q
  }
}`, seq, chunk, (chunk-1)*100, base64.StdEncoding.EncodeToString(pcm))
}

func exotelDTMFMsg(seq int, dtmf string) string {
	return fmt.Sprintf(`{
  "event": "dtmf",
  "sequence_number": "%d",
  "stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
  "dtmf": %s
}`, seq, dtmf)
}

// "mark (Voicebot only): Sent when audio you previously sent has finished
// playing."
func exotelMarkMsg(seq int, name string) string {
	return fmt.Sprintf(`{
  "event": "mark",
  "sequence_number": "%d",
  "stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
  "mark": { "name": %q }
}`, seq, name)
}

// "reason: stopped (applet ended) · callended (caller hung up)"
func exotelStopMsg(seq int) string {
	return fmt.Sprintf(`{
  "event": "stop",
  "sequence_number": "%d",
  "stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
  "stop": {
    "call_sid": "CAxxxxxxxxxxxxxxxxxxxxxxxx",
    "account_sid": "ACxxxxxxxxxxxxxxxxxxxxxxxx",
    "reason": "callended"
  }
}`, seq)
}

var l16At8k = codec.Format{Encoding: codec.L16, Rate: 8000}

func exotelStarted(t testing.TB) transport.Session {
	t.Helper()
	return startWith(t, transport.Exotel(), "", exotelConnected, exotelDocStart)
}

func TestExotelConversation(t *testing.T) {
	p := transport.Exotel()
	if p.Name() != "exotel" || p.Path() != "/exotel" || p.StartsOnConnect() || !p.Buffers() {
		t.Fatalf("Name %q, Path %q, StartsOnConnect %v, Buffers %v", p.Name(), p.Path(), p.StartsOnConnect(), p.Buffers())
	}
	if ac, ok := p.(transport.AudioChunker); !ok {
		t.Error("Exotel takes audio in chunks of 3,200 bytes or more; the protocol must say so")
	} else if minBytes, multiple := ac.AudioChunk(l16At8k); minBytes != 3200 || multiple != 320 {
		t.Errorf("AudioChunk %d, %d; want 3200, 320", minBytes, multiple)
	}
	// About every 100 ms, as the page says Exotel streams.
	chunks := [][]byte{pcmAt(8000, 1600), pcmAt(8000, 3200)[1600:]}
	wantStart := &transport.Start{StreamID: exotelSid, CallID: exotelCallSid, AccountID: exotelAccount,
		Params: map[string]string{"key1": "value1", "from": "+919876543210", "to": "+918047491899"}}
	s := session(p)
	decodeSteps(t, s, []decodeStep{
		{transport.Text, exotelConnected, transport.Inbound{}},
		{transport.Text, exotelDocStart, transport.Inbound{Kind: transport.KindStart, Start: wantStart}},
		{transport.Text, exotelMediaMsg(3, 2, chunks[0]), transport.Inbound{Kind: transport.KindAudio, Audio: chunks[0]}},
		{transport.Text, exotelDTMFMsg(7, `{ "digit": "5", "duration": "100" }`), transport.Inbound{Kind: transport.KindDTMF, Digit: '5'}},
		{transport.Text, exotelMediaMsg(8, 3, chunks[1]), transport.Inbound{Kind: transport.KindAudio, Audio: chunks[1]}},
		{transport.Text, exotelMarkMsg(15, "my-label"), transport.Inbound{Kind: transport.KindMark, Mark: "my-label"}},
		{transport.Text, exotelStopMsg(20), transport.Inbound{Kind: transport.KindStop}},
	})
	if s.Format() != l16At8k {
		t.Errorf("Format %v, want 8 kHz L16", s.Format())
	}
}

// What the host sends Exotel is in the page's form: media ("send audio to
// caller"), mark ("tag a playback position") and clear ("flush buffered
// audio (barge-in)"), each with the stream_sid.
func TestExotelOutbound(t *testing.T) {
	s := session(transport.Exotel())
	if _, _, ok := s.Mark("early"); ok {
		t.Error("Mark before start rendered a message; there is no stream_sid to send it to")
	}
	if _, _, ok := s.Clear(); ok {
		t.Error("Clear before start rendered a message; there is no stream_sid to send it to")
	}
	s = exotelStarted(t)
	frame := pcmAt(8000, 320)
	typ, msg := s.Audio(frame)
	want := `{
  "event": "media",
  "stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
  "media": { "payload": "` + base64.StdEncoding.EncodeToString(frame) + `" }
}`
	if typ != transport.Text || !jsonEqual(t, string(msg), want) {
		t.Errorf("media %s\nwant %s", msg, want)
	}
	if _, msg, ok := s.Mark("turn-3-end"); !ok || !jsonEqual(t, string(msg), `{
  "event": "mark",
  "stream_sid": "MZxxxxxxxxxxxxxxxxxxxxxxxx",
  "mark": { "name": "turn-3-end" }
}`) {
		t.Errorf("mark %s", msg)
	}
	if _, msg, ok := s.Clear(); !ok || string(msg) != `{"event":"clear","stream_sid":"MZxxxxxxxxxxxxxxxxxxxxxxxx"}` {
		t.Errorf("clear %s", msg)
	}
	if _, _, ok := s.Event("vad", "speech_start", nil, 0); ok {
		t.Error("Event rendered a message; Exotel takes media, mark and clear only")
	}
}

// The rate comes from the applet URL's ?sample-rate= ("Pass as query
// param: ?sample-rate=16000"), or the start's media_format where it has
// one; an applet may stream μ-law ("Set the MediaFormat parameter in the
// applet configuration to audio/x-mulaw;rate=8000, audio/L16;rate=8000,
// or audio/L16;rate=16000").
func TestExotelFormats(t *testing.T) {
	noFormat := strings.Replace(exotelDocStart, `"media_format"`, `"other"`, 1)
	l16 := func(rate int) codec.Format { return codec.Format{Encoding: codec.L16, Rate: rate} }
	for _, tt := range []struct {
		query, start string
		want         codec.Format
	}{
		{"", noFormat, l16(8000)},
		{"sample-rate=16000", noFormat, l16(16000)},
		{"sample-rate=24000", noFormat, l16(24000)},
		{"sample-rate=16000", exotelStartMsg(`{"encoding":"audio/x-raw","sample_rate":"16000","bit_rate":"16"}`), l16(16000)},
		{"sample-rate=16000", exotelDocStart, l16(8000)},
		{"", exotelStartMsg(`{"encoding":"audio/L16;rate=16000"}`), l16(16000)},
		{"", exotelStartMsg(`{"encoding":"audio/x-mulaw;rate=8000"}`), codec.Telephony},
	} {
		s := startWith(t, transport.Exotel(), tt.query, tt.start)
		if s.Format() != tt.want {
			t.Errorf("?%s, start %s: Format %v, want %v", tt.query, tt.start, s.Format(), tt.want)
		}
		frame := make([]byte, 20*tt.want.BytesPerMs())
		if _, msg := s.Audio(frame); string(payloadOf(t, msg)) != string(frame) {
			t.Errorf("%v: the media sent does not carry the frame", tt.want)
		}
	}
	for _, q := range []string{"sample-rate=44100", "sample-rate=fast"} {
		v := map[string][]string{"sample-rate": {strings.TrimPrefix(q, "sample-rate=")}}
		if _, err := transport.Exotel().NewSession(transport.SessionConfig{MaxFrameMs: 100, Query: v}); err == nil ||
			!strings.Contains(err.Error(), "is not a rate Exotel streams (want 8000, 16000 or 24000)") {
			t.Errorf("?%s: %v", q, err)
		}
	}
	// custom_parameters as an object, as a string of URL parameters, or
	// none ("Up to 3 key-value pairs appended to the URL").
	for params, want := range map[string]map[string]string{
		`{ "key1": "value1" }`: {"key1": "value1"},
		`"a=1&b=two"`:          {"a": "1", "b": "two"},
		`""`:                   nil,
	} {
		msg := strings.Replace(strings.Replace(exotelDocStart, `{ "key1": "value1" }`, params, 1), `"from": "+919876543210",
    "to": "+918047491899",`, "", 1)
		var in transport.Inbound
		if err := session(transport.Exotel()).Decode(transport.Text, []byte(msg), &in); err != nil || !reflect.DeepEqual(in.Start.Params, want) {
			t.Errorf("custom_parameters %s: %v, %v; want %v", params, in.Start, err, want)
		}
	}
}

func TestExotelErrors(t *testing.T) {
	tests := []struct {
		name        string
		msgs        []string
		want        string
		unsupported bool
	}{
		{"media before start", []string{exotelConnected, exotelMediaMsg(2, 1, pcmAt(8000, 320))}, "exotel: media before start: Exotel sends a start message first", false},
		{"half a sample", []string{exotelDocStart, exotelMediaMsg(2, 1, []byte{1, 2, 3})},
			"exotel: audio frame of 3 bytes is not a multiple of 16 (whole milliseconds of 8 kHz L16)", false},
		{"start without stream_sid", []string{`{"event":"start","start":{"call_sid":"c"}}`}, "exotel: start message without start.stream_sid", false},
		{"8-bit", []string{exotelStartMsg(`{"encoding":"audio/x-raw","sample_rate":"8000","bit_rate":"8"}`)},
			`exotel: unsupported media_format "audio/x-raw" at 8000 Hz, 8 bits; voxhost takes audio/x-raw of 16 bits at 8000, 16000 or 24000 Hz, or audio/x-mulaw at 8000 Hz`, true},
		{"44.1 kHz", []string{exotelStartMsg(`{"encoding":"audio/x-raw","sample_rate":"44100","bit_rate":"16"}`)},
			`exotel: unsupported media_format "audio/x-raw" at 44100 Hz, 16 bits; voxhost takes audio/x-raw of 16 bits at 8000, 16000 or 24000 Hz, or audio/x-mulaw at 8000 Hz`, true},
		{"a rate that is no number", []string{exotelStartMsg(`{"encoding":"audio/x-raw","sample_rate":"fast"}`)},
			`exotel: bad start message: "fast" is not an integer`, false},
		{"custom_parameters of numbers", []string{strings.Replace(exotelDocStart, `"value1"`, `1`, 1)},
			"exotel: bad start.custom_parameters: json: cannot unmarshal number into Go value of type string", false},
		{"bad dtmf", []string{exotelDocStart, exotelDTMFMsg(7, `{"digit":""}`)}, `exotel: dtmf.digit "" is not one of 0-9 * # A-D`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := session(transport.Exotel())
			var in transport.Inbound
			var err error
			for _, m := range tt.msgs {
				err = s.Decode(transport.Text, []byte(m), &in)
			}
			if perr := wantProtocolError(t, err, "exotel", tt.want); perr.Unsupported != tt.unsupported {
				t.Errorf("Unsupported %v, want %v", perr.Unsupported, tt.unsupported)
			}
		})
	}
	checkLimits(t, func() transport.Session { return session(transport.Exotel()) }, map[string]string{
		"long call_sid": `{"event":"start","stream_sid":"s","start":{"call_sid":"` + strings.Repeat("c", transport.MaxIDBytes+1) + `"}}`,
		"long from":     `{"event":"start","stream_sid":"s","start":{"from":"` + strings.Repeat("1", transport.MaxParamValueBytes+1) + `"}}`,
		"long mark":     exotelMarkMsg(2, strings.Repeat("m", transport.MaxMarkBytes+1)),
	})
}

// TestExotelDialectConformance: the exotel dialect says to a bot what
// Exotel's Voicebot applet says, member for member, as the page prints
// it; its dtmf lacks the duration, which the host does not know.
func TestExotelDialectConformance(t *testing.T) {
	call := transport.CallInfo{CallID: exotelCallSid, StreamID: exotelSid, AccountID: exotelAccount,
		Params: map[string]string{"key1": "value1", "from": "+919876543210", "to": "+918047491899"}}
	d, _ := transport.LookupDialect("exotel")
	b := d.NewBotSession(transport.BotConfig{Format: l16At8k, MaxAudio: maxAudio, Call: call})
	got := opened(t, b)
	if len(got) != 2 {
		t.Fatalf("Open sent %d messages, want connected and start", len(got))
	}
	chunks := [][]byte{pcmAt(8000, 1600), pcmAt(8000, 1600)}
	audio := func(f []byte) sent {
		typ, msg := b.Audio(f)
		return sent{typ, string(msg)}
	}
	for i, st := range []struct {
		got  sent
		want string
	}{
		{got[0], exotelConnected},
		{got[1], exotelDocStart},
		{audio(chunks[0]), exotelMediaMsg(2, 1, chunks[0])},
		{audio(chunks[1]), exotelMediaMsg(3, 2, chunks[1])},
		{render(t)(b.DTMF('5')), exotelDTMFMsg(4, `{ "digit": "5" }`)},
		{render(t)(b.MarkPlayed("my-label")), exotelMarkMsg(5, "my-label")},
		{render(t)(b.Event("vad", "speech_start", nil, 200)), exotelMarkMsg(6, "voxhost:vad:speech_start")},
		{render(t)(b.Stop()), exotelStopMsg(7)},
	} {
		if st.got.typ != transport.Text || !jsonEqual(t, st.got.msg, st.want) {
			t.Errorf("message %d:\n%s\nwant\n%s", i, st.got.msg, st.want)
		}
	}
	wantNoBargeInMessage(t, b, "Exotel")
	if err := d.CheckFormat(codec.Telephony); err == nil ||
		err.Error() != "the exotel dialect carries L16 at 8000, 16000 or 24000 Hz (Exotel's audio/x-raw), not 8 kHz μ-law" {
		t.Errorf("CheckFormat(μ-law): %v", err)
	}
}

// What a bot sends Exotel, in the page's examples: media, mark, clear.
func TestExotelDialectDecodesWhatBotsSend(t *testing.T) {
	b := newBot(t, "exotel", l16At8k, nil)
	pcm := pcmAt(8000, 3200)
	text := transport.Text
	decodeSteps(t, b, []decodeStep{
		{text, `{"event":"media","stream_sid":"` + exotelSid + `","media":{"payload":"` + base64.StdEncoding.EncodeToString(pcm[:1600]) + `"}}`,
			transport.Inbound{Kind: transport.KindAudio, Audio: pcm[:1600]}},
		{text, `{"event":"mark","stream_sid":"` + exotelSid + `","mark":{"name":"turn-3-end"}}`, transport.Inbound{Kind: transport.KindMark, Mark: "turn-3-end"}},
		{text, `{ "event": "clear", "stream_sid": "` + exotelSid + `" }`, transport.Inbound{Kind: transport.KindClear}},
		{text, exotelStopMsg(9), transport.Inbound{}},
	})
	decodeErrors(t, "exotel", func(t *testing.T) transport.BotSession { return newBot(t, "exotel", l16At8k, nil) }, []decodeError{
		{"binary", transport.Binary, string(pcm[:320]), "exotel: binary message: Exotel takes JSON text messages only", false},
		{"half a sample", text, `{"event":"media","media":{"payload":"AQID"}}`, "exotel: audio of 3 bytes is not a whole number of 2-byte l16 samples", false},
	})
}

func TestExotelDialectRoundTrip(t *testing.T) {
	for _, f := range []codec.Format{l16At8k, {Encoding: codec.L16, Rate: 16000}} {
		t.Run(f.String(), func(t *testing.T) {
			bot := newBot(t, "exotel", f, nil)
			srv := session(transport.Exotel())
			decode := serverDecode(t, srv)
			open := opened(t, bot)
			want := &transport.Start{StreamID: streamSid, CallID: callSid, AccountID: accountSid, Params: testCall.Params}
			if got := decode(open[0]); got.Kind != transport.KindIgnore {
				t.Errorf("connected decoded as %v", got.Kind)
			}
			if got := decode(open[1]); got.Kind != transport.KindStart || !reflect.DeepEqual(got.Start, want) || srv.Format() != f {
				t.Errorf("start decoded as %v %+v in %v, want %+v in %v", got.Kind, got.Start, srv.Format(), want, f)
			}
			checkRoundTrip(t, bot, srv)
		})
	}
}

func FuzzExotelDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg string) {
		checkCarrierFuzz(t, exotelStarted(t), msg, "media", false)
	})
}

func FuzzExotelBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg string) {
		in := checkCarrierFuzz(t, newBot(t, "exotel", l16At8k, nil), msg, "media", false)
		switch in.Kind {
		case transport.KindAudio:
			wantBotAudio(t, in.Audio, l16At8k)
		case transport.KindMark, transport.KindClear, transport.KindIgnore:
		default:
			t.Fatalf("a bot's message decoded as %v", in.Kind)
		}
	})
}
