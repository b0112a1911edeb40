package transport_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/signal"
)

// Vonage's messages as its guide "WebSockets"
// (https://developer.vonage.com/en/voice/voice-api/concepts/websockets)
// shows them:
//
//   - "The initial message sent on an established WebSocket connection
//     will be text-based and contain a JSON payload, it will have the event
//     field set to websocket:connected and detail the audio format in
//     content-type, along with any other metadata that you have put in the
//     headers property of the WebSocket endpoint in your NCCO connect
//     action. The headers property is not present on the JSON payload so
//     the properties are at the top-level of the JSON." For headers
//     {"language": "en-GB", "caller-id": "447700900123"}: vonageConnected.
//   - "Each message will be a 20ms sample of the audio from the call. If
//     you choose the 8kHz rate each message will be 320 bytes. Choosing the
//     16kHz rate will result in each message being 640 bytes."
//   - DTMF: {"event":"websocket:dtmf","digit":"5","duration":260}, "one
//     event for each keypress".
//   - "You can send audio back into the call by writing binary messages to
//     the WebSocket. The audio must be in the same format [...] It is
//     important that each message is 320 or 640 bytes (depending on sample
//     rate) and contains 20ms of audio. You can send the messages at a
//     faster than real-time rate and they will be buffered".
//
// The commands {"action":"clear"} ("Instructs Vonage to immediately stop
// playback and discard queued audio", answered by websocket:cleared) and
// {"action":"notify","payload":{...}} ("Requests a notification when
// previously-queued audio has finished playing", answered by
// websocket:notify with the payload) are as the same guide's AsyncAPI
// rendering at asyncapi.apis.io/asyncapis/vonage describes them and as
// pipecat's serializers/vonage.py sends and reads them.
const vonageConnected = `{
    "event":"websocket:connected",
    "content-type":"audio/l16;rate=16000",
    "language": "en-GB",
    "caller-id": "447700900123"
}`

var vonage16k = codec.Format{Encoding: codec.L16, Rate: 16000}

// vonageConnectedAt is websocket:connected with the content-type of rate
// and no headers.
func vonageConnectedAt(rate string) string {
	return `{"event":"websocket:connected","content-type":"audio/l16;rate=` + rate + `"}`
}

// speechAt returns ms of the speech-like signal at rate, L16.
func speechAt(rate, ms int) []byte { return signal.Speech(rate, float64(ms)/1000) }

// vonageStarted returns a Vonage session that decoded connected.
func vonageStarted(t testing.TB, connected string) transport.Session {
	t.Helper()
	s := session(transport.Vonage())
	var in transport.Inbound
	if err := s.Decode(transport.Text, []byte(connected), &in); err != nil || in.Kind != transport.KindStart {
		t.Fatalf("websocket:connected: %v, %v", in.Kind, err)
	}
	return s
}

func TestVonageConformance(t *testing.T) {
	p := transport.Vonage()
	if p.Name() != "vonage" || p.Path() != "/vonage" || p.StartsOnConnect() || !p.Buffers() {
		t.Fatalf("vonage: name %q, path %q, starts on connect %v, buffers %v", p.Name(), p.Path(), p.StartsOnConnect(), p.Buffers())
	}
	if got, err := transport.LookupProtocol("vonage"); err != nil || got.Path() != "/vonage" {
		t.Fatalf("LookupProtocol(vonage) = %v, %v", got, err)
	}
	s := session(p)
	if s.Format() != vonage16k {
		t.Errorf("format before connected: %v, want 16 kHz L16", s.Format())
	}
	if ok := third(s.Mark("m")) || third(s.Clear()); ok {
		t.Error("a mark or clear rendered before websocket:connected")
	}

	var in transport.Inbound
	if err := s.Decode(transport.Text, []byte(vonageConnected), &in); err != nil {
		t.Fatal(err)
	}
	want := &transport.Start{Params: map[string]string{"language": "en-GB", "caller-id": "447700900123"}}
	if in.Kind != transport.KindStart || !reflect.DeepEqual(in.Start, want) || in.Reply != nil {
		t.Fatalf("connected decoded to %v %+v, want the headers as custom parameters", in.Kind, in.Start)
	}
	if s.Format() != vonage16k {
		t.Fatalf("format %v, want 16 kHz L16", s.Format())
	}

	// 640-byte messages of 20 ms, byte for byte both ways.
	binaryFramesBothWays(t, s, speechAt(16000, 60), 640)

	decodeSteps(t, s, []decodeStep{
		{transport.Text, `{"event":"websocket:dtmf","digit":"5","duration":260}`, transport.Inbound{Kind: transport.KindDTMF, Digit: '5'}},
		{transport.Text, `{"event":"websocket:dtmf","dtmf":{"digit":"#","duration":100}}`, transport.Inbound{Kind: transport.KindDTMF, Digit: '#'}},
		{transport.Text, `{"event":"websocket:notify","payload":{"name":"reply \"1\" ✓"}}`, transport.Inbound{Kind: transport.KindMark, Mark: `reply "1" ✓`}},
		{transport.Text, `{"event":"websocket:notify","payload":{"reply_id":"r1"}}`, transport.Inbound{}},
		{transport.Text, `{"event":"websocket:cleared"}`, transport.Inbound{}},
		{transport.Text, `{"event":"websocket:something-new","x":1}`, transport.Inbound{}},
	})

	if got, want := sentOf(s.Mark(`reply "1" ✓`)), (sent{transport.Text, `{"action":"notify","payload":{"name":"reply \"1\" ✓"}}`}); got != want {
		t.Errorf("mark: %+v, want %+v", got, want)
	}
	if got, want := sentOf(s.Clear()), (sent{transport.Text, `{"action":"clear"}`}); got != want {
		t.Errorf("clear: %+v, want %+v", got, want)
	}
	if third(s.Event("vad", "speech_start", nil, 0)) || third(s.Hangup()) {
		t.Error("Vonage takes no plugin events and ends with the close alone")
	}
}

// binaryFramesBothWays checks that s, a session of a protocol of binary
// audio, decodes each frame of audio in frames of n bytes as it is and
// renders it back as it is.
func binaryFramesBothWays(t *testing.T, s transport.Session, audio []byte, n int) {
	t.Helper()
	var in transport.Inbound
	for off := 0; off < len(audio); off += n {
		frame := audio[off : off+n]
		if err := s.Decode(transport.Binary, frame, &in); err != nil || in.Kind != transport.KindAudio || !bytes.Equal(in.Audio, frame) {
			t.Fatalf("frame at %d: %v %v", off, in.Kind, err)
		}
		if typ, out := s.Audio(frame); typ != transport.Binary || !bytes.Equal(out, frame) {
			t.Fatalf("frame at %d rendered as %v of %d bytes", off, typ, len(out))
		}
	}
}

// The content-type sets the format: L16 at 8, 16 or 24 kHz, 16 kHz when
// the NCCO names none; anything else is refused as unsupported.
func TestVonageContentTypes(t *testing.T) {
	for _, tt := range []struct {
		connected string
		rate      int
	}{
		{vonageConnectedAt("8000"), 8000},
		{vonageConnectedAt("16000"), 16000},
		{vonageConnectedAt("24000"), 24000},
		{`{"event":"websocket:connected","content-type":"Audio/L16; rate=8000"}`, 8000},
		{`{"event":"websocket:connected"}`, 16000},
	} {
		s := vonageStarted(t, tt.connected)
		f := codec.Format{Encoding: codec.L16, Rate: tt.rate}
		if s.Format() != f {
			t.Errorf("%s: format %v, want %v", tt.connected, s.Format(), f)
		}
		frame := speechAt(tt.rate, 20)
		var in transport.Inbound
		if err := s.Decode(transport.Binary, frame, &in); err != nil || len(in.Audio) != 20*tt.rate/1000*2 {
			t.Errorf("%s: a 20 ms frame: %v", tt.connected, err)
		}
	}
	for _, ct := range []string{"audio/l16;rate=44100", "audio/pcmu;rate=8000", "audio/x-mulaw"} {
		var in transport.Inbound
		err := session(transport.Vonage()).Decode(transport.Text, []byte(`{"event":"websocket:connected","content-type":"`+ct+`"}`), &in)
		perr := wantProtocolError(t, err, "vonage", "vonage: unsupported content-type \""+ct+"\"; voxhost takes audio/l16;rate=8000, 16000 or 24000")
		if !perr.Unsupported {
			t.Errorf("%s: not marked unsupported", ct)
		}
	}
}

// Vonage takes 20 ms messages only: a shorter frame goes out padded with
// silence, a 20 ms one or longer as it is.
func TestVonageShortFramesArePadded(t *testing.T) {
	s := vonageStarted(t, vonageConnected)
	audio := speechAt(16000, 40)
	typ, out := s.Audio(audio[:200])
	if typ != transport.Binary || len(out) != 640 || !bytes.Equal(out[:200], audio[:200]) || !bytes.Equal(out[200:], make([]byte, 440)) {
		t.Fatalf("a 200-byte frame went out as %v of %d bytes", typ, len(out))
	}
	for _, n := range []int{640, 1280} {
		if _, out := s.Audio(audio[:n]); !bytes.Equal(out, audio[:n]) {
			t.Errorf("a %d-byte frame changed", n)
		}
	}
	s8 := vonageStarted(t, vonageConnectedAt("8000"))
	if _, out := s8.Audio(audio[:2]); len(out) != 320 {
		t.Errorf("at 8 kHz a short frame went out as %d bytes, want 320", len(out))
	}
}

func TestVonageMalformed(t *testing.T) {
	started := func(*testing.T) decoder { return vonageStarted(t, vonageConnected) }
	fresh := func(*testing.T) decoder { return session(transport.Vonage()) }
	long := strings.Repeat("x", transport.MaxParamValueBytes+1)
	checkMalformed(t, "vonage", []malformed{
		{"audio first", fresh, transport.Binary, string(speechAt(16000, 20)), "vonage: audio before websocket:connected: Vonage sends that text message first", false, false},
		{"empty audio", started, transport.Binary, "", "vonage: empty audio frame", false, false},
		{"odd audio", started, transport.Binary, "abc", "vonage: audio frame of 3 bytes is not a multiple of 32 (whole milliseconds of 16 kHz L16)", false, false},
		{"long audio", started, transport.Binary, string(make([]byte, 6432)), "vonage: audio frame of 6432 bytes exceeds the limit of 6400", false, false},
		{"not json", fresh, transport.Text, `{"event":"websocket:connected"`, "vonage: invalid JSON at byte 30: message ends early, expected ',' or '}' after an object member", false, false},
		{"no event", fresh, transport.Text, `{"action":"clear"}`, `vonage: text message without an "event" member`, false, false},
		{"event not a string", fresh, transport.Text, `{"event":5}`, `vonage: "event" is not a string`, false, false},
		{"second connected", started, transport.Text, vonageConnected, "vonage: a second websocket:connected on one stream", false, false},
		{"content-type not a string", fresh, transport.Text, `{"event":"websocket:connected","content-type":16000}`, "vonage: websocket:connected content-type is not a string", false, false},
		{"rate", fresh, transport.Text, vonageConnectedAt("11025"), `vonage: unsupported content-type "audio/l16;rate=11025"; voxhost takes audio/l16;rate=8000, 16000 or 24000`, true, false},
		{"long header", fresh, transport.Text, `{"event":"websocket:connected","x":"` + long + `"}`, "vonage: websocket:connected headers[\"x\"] is 513 bytes, longer than 512", false, true},
		{"dtmf without digit", started, transport.Text, `{"event":"websocket:dtmf","duration":260}`, `vonage: websocket:dtmf without a string "digit"`, false, false},
		{"dtmf digit", started, transport.Text, `{"event":"websocket:dtmf","digit":"55"}`, `vonage: websocket:dtmf digit "55" is not one of 0-9 * # A-D`, false, false},
		{"long mark", started, transport.Text, `{"event":"websocket:notify","payload":{"name":"` + long + `"}}`, "vonage: websocket:notify payload.name of 513 bytes is longer than 256", false, true},
		{"type", started, transport.MessageType(9), "x", "vonage: message of unknown WebSocket type 9", false, false},
	})
}

// malformed is a message a server role refuses, decoded by the session s
// makes, and the refusal.
type malformed struct {
	name        string
	s           func(*testing.T) decoder
	typ         transport.MessageType
	msg         string
	want        string // the error's text
	unsupported bool
	limit       bool
}

// checkMalformed checks that each message fails with its error from
// protocol, flagged as it should be, leaving the zero Inbound.
func checkMalformed(t *testing.T, protocol string, tests []malformed) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := transport.Inbound{Kind: transport.KindStop, Mark: "m"}
			perr := wantProtocolError(t, tt.s(t).Decode(tt.typ, []byte(tt.msg), &in), protocol, tt.want)
			if perr.Unsupported != tt.unsupported || perr.Limit != tt.limit {
				t.Errorf("unsupported %v, limit %v; want %v, %v", perr.Unsupported, perr.Limit, tt.unsupported, tt.limit)
			}
			if !reflect.DeepEqual(in, transport.Inbound{}) {
				t.Errorf("a failed Decode left %+v", in)
			}
		})
	}
}

// TestVonageDialect: the vonage dialect says to a bot what Vonage says to
// an NCCO's WebSocket, as in the guide quoted above, and reads the bot's
// commands.
func TestVonageDialect(t *testing.T) {
	d, err := transport.LookupDialect("vonage")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []codec.Format{{Encoding: codec.L16, Rate: 8000}, vonage16k, l16At24k} {
		if err := d.CheckFormat(f); err != nil {
			t.Errorf("%v: %v", f, err)
		}
	}
	if err := d.CheckFormat(codec.Telephony); err == nil || err.Error() != "the vonage dialect carries L16 at 8000, 16000 or 24000 Hz (audio/l16;rate=N), not 8 kHz μ-law" {
		t.Errorf("μ-law: %v", err)
	}
	b := newBot(t, "vonage", vonage16k, nil)
	got := opened(t, b)
	want := `{"event":"websocket:connected","content-type":"audio/l16;rate=16000","lang":"en","pipeline":"loud"}`
	if len(got) != 1 || got[0].typ != transport.Text || got[0].msg != want {
		t.Fatalf("Open sent %+v, want %s", got, want)
	}

	pcm := speechAt(16000, 20)
	if typ, out := b.Audio(pcm); typ != transport.Binary || !bytes.Equal(out, pcm) {
		t.Errorf("audio rendered as %v of %d bytes", typ, len(out))
	}
	for _, r := range []struct {
		name string
		got  sent
		want string
	}{
		{"dtmf", sentOf(b.DTMF('7')), `{"event":"websocket:dtmf","digit":"7"}`},
		{"mark played", sentOf(b.MarkPlayed(`{"reply_id":"r1"}`)), `{"event":"websocket:notify","payload":{"reply_id":"r1"}}`},
		{"event", sentOf(b.Event("vad", "speech_start", []byte(`{"energy":0.5}`), 1240)),
			`{"event":"websocket:notify","payload":{"voxhost":{"event":"plugin","plugin":"vad","name":"speech_start","data":{"energy":0.5},"t_ms":1240}}}`},
	} {
		if r.got.typ != transport.Text || r.got.msg != r.want {
			t.Errorf("%s: %v %s, want %s", r.name, r.got.typ, r.got.msg, r.want)
		}
	}
	send, sentMsgs := collect()
	if err := b.Interrupted(300, false, send); err != nil || len(*sentMsgs) != 0 {
		t.Errorf("a barge-in the host detected sent %v (%v); Vonage has no message for it", *sentMsgs, err)
	}
	if err := b.Interrupted(300, true, send); err != nil || len(*sentMsgs) != 1 || (*sentMsgs)[0].msg != `{"event":"websocket:cleared"}` {
		t.Errorf("the bot's clear was answered with %v (%v), want websocket:cleared", *sentMsgs, err)
	}
	if third(b.Stop()) || third(b.DTMF('x')) {
		t.Error("Vonage has no stop message, and x is no key")
	}

	decodeSteps(t, b, []decodeStep{
		{transport.Binary, string(pcm[:6]), transport.Inbound{Kind: transport.KindAudio, Audio: pcm[:6]}},
		{transport.Text, `{"action":"clear"}`, transport.Inbound{Kind: transport.KindClear}},
		{transport.Text, `{"action":"notify","payload":{"reply_id":"r1"}}`, transport.Inbound{Kind: transport.KindMark, Mark: `{"reply_id":"r1"}`}},
		{transport.Text, `{"action":"notify","payload": [1, 2] }`, transport.Inbound{Kind: transport.KindMark, Mark: `[1, 2]`}},
		{transport.Text, `{"type":"rtvi","data":{}}`, transport.Inbound{}},
		{transport.Text, `{"action":"transfer"}`, transport.Inbound{}},
	})
	long := strings.Repeat("x", transport.MaxMarkBytes)
	decodeErrors(t, "vonage", func(t *testing.T) transport.BotSession { return newBot(t, "vonage", vonage16k, nil) }, []decodeError{
		{"odd audio", transport.Binary, "abc", "vonage: audio of 3 bytes is not a whole number of 2-byte l16 samples", false},
		{"long audio", transport.Binary, string(make([]byte, maxAudio+2)), "vonage: audio frame of 1602 bytes exceeds the limit of 1600", false},
		{"not json", transport.Text, `{"action":`, "vonage: invalid JSON at byte 10: message ends early, expected a value", false},
		{"notify without payload", transport.Text, `{"action":"notify"}`, `vonage: notify without a "payload"`, false},
		{"long payload", transport.Text, `{"action":"notify","payload":"` + long + `"}`, "vonage: notify payload of 258 bytes is longer than 256", true},
	})
}

// sentOf copies what a render returned.
func sentOf(typ transport.MessageType, msg []byte, ok bool) sent {
	if !ok {
		return sent{}
	}
	return sent{typ, string(msg)}
}

// TestVonageRoundTrip: what the dialect sends decodes in the server role
// as Vonage's own messages, and what the server role sends decodes in the
// dialect as a bot's.
func TestVonageRoundTrip(t *testing.T) {
	call := testCall
	call.Params = map[string]string{"language": "en-GB", "caller-id": "447700900123", "pipeline": "loud"}
	d, _ := transport.LookupDialect("vonage")
	b := d.NewBotSession(transport.BotConfig{Format: l16At24k, MaxAudio: maxAudio, Call: call})
	srv := session(transport.Vonage())
	decode := serverDecode(t, srv)
	open := opened(t, b)
	if in := decode(open[0]); in.Kind != transport.KindStart || !reflect.DeepEqual(in.Start.Params, call.Params) || srv.Format() != l16At24k {
		t.Fatalf("the dialect's connected decoded to %v %+v at %v", in.Kind, in.Start, srv.Format())
	}
	pcm := pcm24k(960)
	if in := decode(audioSent(b.Audio(pcm))); in.Kind != transport.KindAudio || !bytes.Equal(in.Audio, pcm) {
		t.Errorf("audio decoded to %v of %d bytes", in.Kind, len(in.Audio))
	}
	for _, c := range []byte("0123456789*#ABCD") {
		if in := decode(sentOf(b.DTMF(c))); in.Kind != transport.KindDTMF || in.Digit != c {
			t.Errorf("dtmf %c decoded to %v %q", c, in.Kind, in.Digit)
		}
	}
	// A mark goes out as a notify, comes back to the bot as its payload,
	// and the bot's acknowledgement reads as the mark again.
	typ, msg, _ := srv.Mark(`turn "2"`)
	in := decodeBot(t, b, typ, msg)
	if in.Kind != transport.KindMark {
		t.Fatalf("the server's notify decoded to %v", in.Kind)
	}
	if back := decode(sentOf(b.MarkPlayed(in.Mark))); back.Kind != transport.KindMark || back.Mark != `turn "2"` {
		t.Errorf("the notify's payload came back as %v %q", back.Kind, back.Mark)
	}
	typ, msg, _ = srv.Clear()
	if in := decodeBot(t, b, typ, msg); in.Kind != transport.KindClear {
		t.Errorf("the server's clear decoded to %v", in.Kind)
	}
	send, got := collect()
	if err := b.Interrupted(0, true, send); err != nil {
		t.Fatal(err)
	}
	if in := decode((*got)[0]); in.Kind != transport.KindIgnore {
		t.Errorf("websocket:cleared decoded to %v", in.Kind)
	}
	if in := decode(sentOf(b.Event("vad", "speech_start", nil, 5))); in.Kind != transport.KindIgnore {
		t.Errorf("a plugin event's notify decoded to %v, want a notify the host did not send", in.Kind)
	}
	if typ, msg := srv.Audio(pcm); !bytes.Equal(decodeBot(t, b, typ, msg).Audio, pcm) {
		t.Error("the server's audio did not reach the bot as it was")
	}
}

func audioSent(typ transport.MessageType, msg []byte) sent { return sent{typ, string(msg)} }

func TestVonageAudioPathDoesNotAllocate(t *testing.T) {
	s := vonageStarted(t, vonageConnected)
	b := newBot(t, "vonage", vonage16k, nil)
	frame := speechAt(16000, 20)
	var in transport.Inbound
	for _, tt := range []struct {
		name string
		run  func()
	}{
		{"decode audio", func() {
			if err := s.Decode(transport.Binary, frame, &in); err != nil {
				t.Fatal(err)
			}
		}},
		{"render audio", func() { s.Audio(frame) }},
		{"render a short frame", func() { s.Audio(frame[:100]) }},
		{"render mark", func() { s.Mark("reply-1") }},
		{"render clear", func() { s.Clear() }},
		{"bot render audio", func() { b.Audio(frame) }},
		{"bot decode audio", func() {
			if err := b.Decode(transport.Binary, frame, &in); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		if n := testing.AllocsPerRun(200, tt.run); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tt.name, n)
		}
	}
}

// FuzzVonageDecode checks the server role's decoder against encoding/json
// on text and the audio rules on binary, on a started 16 kHz stream.
func FuzzVonageDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, binary bool, msg []byte) {
		s := vonageStarted(t, vonageConnected)
		var in transport.Inbound
		if binary {
			err := s.Decode(transport.Binary, msg, &in)
			ok := len(msg) > 0 && len(msg) <= 6400 && len(msg)%32 == 0
			if ok != (err == nil) || ok && !bytes.Equal(in.Audio, msg) {
				t.Fatalf("%d bytes of audio: %v", len(msg), err)
			}
			return
		}
		err := s.Decode(transport.Text, msg, &in)
		checkBotDecodeError(t, err, msg, &in)
		var m struct {
			Event   string `json:"event"`
			Digit   string `json:"digit"`
			Payload struct {
				Name string `json:"name"`
			} `json:"payload"`
		}
		_ = json.Unmarshal(msg, &m)
		switch in.Kind {
		case transport.KindIgnore:
		case transport.KindDTMF:
			if m.Event != "websocket:dtmf" {
				t.Fatalf("dtmf %q, but encoding/json sees event %q", in.Digit, m.Event)
			}
		case transport.KindMark:
			if m.Event != "websocket:notify" || in.Mark != m.Payload.Name || len(in.Mark) > transport.MaxMarkBytes {
				t.Fatalf("mark %q, but encoding/json sees event %q, payload.name %q", in.Mark, m.Event, m.Payload.Name)
			}
			if _, out, _ := s.Mark(in.Mark); !json.Valid(out) {
				t.Fatalf("Mark rendered %s", out)
			}
		default:
			t.Fatalf("decoded as %v", in.Kind)
		}
	})
}

// FuzzVonageBotDecode checks the dialect's decoder: a bot's audio within
// its bounds, and a notify's payload sent back as valid JSON that holds
// it.
func FuzzVonageBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, binary bool, msg []byte) {
		b := newBot(t, "vonage", vonage16k, nil)
		var in transport.Inbound
		if binary {
			err := b.Decode(transport.Binary, msg, &in)
			ok := len(msg) > 0 && len(msg) <= maxAudio && len(msg)%2 == 0
			if ok != (err == nil) {
				t.Fatalf("%d bytes of audio: %v", len(msg), err)
			}
			if ok {
				wantBotAudio(t, in.Audio, vonage16k)
			}
			return
		}
		err := b.Decode(transport.Text, msg, &in)
		checkBotDecodeError(t, err, msg, &in)
		var m struct {
			Action  string          `json:"action"`
			Payload json.RawMessage `json:"payload"`
		}
		_ = json.Unmarshal(msg, &m)
		switch in.Kind {
		case transport.KindIgnore:
		case transport.KindClear:
			if m.Action != "clear" {
				t.Fatalf("clear, but encoding/json sees action %q", m.Action)
			}
		case transport.KindMark:
			_, out, _ := b.MarkPlayed(in.Mark)
			var back struct {
				Event   string          `json:"event"`
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(out, &back); err != nil || back.Event != "websocket:notify" || !jsonEqual(t, string(back.Payload), string(m.Payload)) {
				t.Fatalf("the notify of %s came back as %s (%v)", m.Payload, out, err)
			}
		default:
			t.Fatalf("a bot's message decoded as %v", in.Kind)
		}
	})
}
