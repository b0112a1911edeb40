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

// Plivo's messages as its "Stream Event Protocol" page
// (plivo.com/docs/voice/audio-streaming/audio-streaming) prints them:
//
//	"Plivo sends the start message immediately when the WebSocket
//	connection is established. It contains metadata about the Stream and is
//	only sent once at the beginning."
//	"Plivo sends media messages continuously throughout the call."
//
// and its checkpoint page (plivo.com/docs/voice/xml/the-stream-element/checkpoint-event):
//
//	"Send a checkpoint event via WebSocket when the desired audio events are
//	queued. Plivo will respond with playedStream, indicating that audio
//	events buffered before the Checkpoint were successfully played out to
//	the end user. playedStream will only be emitted if the preceding events
//	were played successfully."
const (
	plivoCallID   = "12345678-1234-1234-1234-123456789abc"
	plivoStreamID = "87654321-4321-4321-4321-cba987654321"
	plivoAccount  = "MAXXXXXXXXXXXXXXXXXX"
)

func plivoStartMsg(encoding string, rate int, extraHeaders string) string {
	return fmt.Sprintf(`{
  "event": "start",
  "sequenceNumber": 1,
  "start": {
    "callId": "12345678-1234-1234-1234-123456789abc",
    "streamId": "87654321-4321-4321-4321-cba987654321",
    "accountId": "MAXXXXXXXXXXXXXXXXXX",
    "tracks": ["inbound"],
    "mediaFormat": {
      "encoding": %q,
      "sampleRate": %d
    }
  },
  "extra_headers": %s
}`, encoding, rate, extraHeaders)
}

var plivoDocStart = plivoStartMsg("audio/x-mulaw", 8000, `"userId=12345;sessionId=abc-xyz"`)

func plivoMediaMsg(seq int, track string, audio []byte) string {
	return fmt.Sprintf(`{
  "event": "media",
  "sequenceNumber": %d,
  "streamId": "87654321-4321-4321-4321-cba987654321",
  "media": {
    "track": %q,
    "timestamp": "1705312200000",
    "chunk": %d,
    "payload": %q
  },
  "extra_headers": "userId=12345;sessionId=abc-xyz"
}`, seq, track, seq-1, base64.StdEncoding.EncodeToString(audio))
}

// The dtmf message: "dtmf: Sent when caller presses keys. Contains the
// digit pressed", read as the page's handler reads it, event.dtmf.digit.
func plivoDTMFMsg(seq int, digit string) string {
	return fmt.Sprintf(`{"event":"dtmf","sequenceNumber":%d,"streamId":%q,"dtmf":{"digit":%q}}`, seq, plivoStreamID, digit)
}

const (
	plivoPlayedMsg = `{
"event": "playedStream",
"streamId": "20170ada-f610-433b-8758-c02a2aab3662",
"name": "customer greeting audio"
}`
	plivoCheckpointMsg = `{
"event": "checkpoint",
"streamId": "20170ada-f610-433b-8758-c02a2aab3662",
"name": "customer greeting audio"
}`
)

// plivoClearedMsg is clearedAudio: "Confirmation that the audio queue was
// cleared."
func plivoClearedMsg(seq int) string {
	return fmt.Sprintf(`{"sequenceNumber":%d,"event":"clearedAudio","streamId":%q}`, seq, plivoStreamID)
}

func plivoStarted(t testing.TB) transport.Session {
	t.Helper()
	return startWith(t, transport.Plivo(), "", plivoDocStart)
}

func TestPlivoConversation(t *testing.T) {
	p := transport.Plivo()
	if p.Name() != "plivo" || p.Path() != "/plivo" || p.StartsOnConnect() || !p.Buffers() {
		t.Fatalf("Name %q, Path %q, StartsOnConnect %v, Buffers %v", p.Name(), p.Path(), p.StartsOnConnect(), p.Buffers())
	}
	if md, ok := p.(transport.MarkDropper); !ok || !md.ClearDropsMarks() {
		t.Error("Plivo's clearAudio drops the checkpoints queued behind it; the protocol must say so")
	}
	frames := [][]byte{tone(0, 160), tone(160, 160)}
	wantStart := &transport.Start{StreamID: plivoStreamID, CallID: plivoCallID, AccountID: plivoAccount, Tracks: []string{"inbound"},
		Params: map[string]string{"userId": "12345", "sessionId": "abc-xyz"}}
	s := session(p)
	decodeSteps(t, s, []decodeStep{
		{transport.Text, plivoDocStart, transport.Inbound{Kind: transport.KindStart, Start: wantStart}},
		{transport.Text, plivoMediaMsg(42, "inbound", frames[0]), transport.Inbound{Kind: transport.KindAudio, Audio: frames[0]}},
		{transport.Text, plivoDTMFMsg(7, "5"), transport.Inbound{Kind: transport.KindDTMF, Digit: '5'}},
		{transport.Text, plivoMediaMsg(43, "inbound", frames[1]), transport.Inbound{Kind: transport.KindAudio, Audio: frames[1]}},
		{transport.Text, plivoMediaMsg(44, "outbound", frames[1]), transport.Inbound{}},
		{transport.Text, plivoPlayedMsg, transport.Inbound{Kind: transport.KindMark, Mark: "customer greeting audio"}},
		{transport.Text, plivoClearedMsg(0), transport.Inbound{}},
		{transport.Text, `{"event":"some_future_event"}`, transport.Inbound{}},
	})
}

// What the host sends Plivo is in its pages' form: playAudio ("media: JSON
// object containing contentType: audio/x-l16, audio/x-mulaw, sampleRate:
// 8000, 16000, payload: Base64-encoded raw audio"), checkpoint and
// clearAudio ("The clearAudio event interrupts audio previously sent to
// Plivo via the playAudio event. Plivo clears all buffered media
// events"), each with the streamId.
func TestPlivoOutbound(t *testing.T) {
	s := session(transport.Plivo())
	if _, _, ok := s.Mark("early"); ok {
		t.Error("Mark before start rendered a message; there is no streamId to send it to")
	}
	if _, _, ok := s.Clear(); ok {
		t.Error("Clear before start rendered a message; there is no streamId to send it to")
	}
	for _, tt := range []struct {
		start       string
		frame       []byte
		contentType string
		rate        int
	}{
		{plivoDocStart, tone(0, 160), "audio/x-mulaw", 8000},
		{plivoStartMsg("audio/x-l16", 16000, `""`), pcmAt(16000, 640), "audio/x-l16", 16000},
		{plivoStartMsg("audio/x-l16", 8000, `""`), pcmAt(8000, 320), "audio/x-l16", 8000},
	} {
		s := startWith(t, transport.Plivo(), "", tt.start)
		if f := s.Format(); f.Rate != tt.rate || (f.Encoding == codec.L16) != (tt.contentType == "audio/x-l16") {
			t.Errorf("Format %v, want %s at %d Hz", f, tt.contentType, tt.rate)
		}
		typ, msg := s.Audio(tt.frame)
		var play struct {
			Event string `json:"event"`
			Media struct {
				ContentType string `json:"contentType"`
				SampleRate  int    `json:"sampleRate"`
				Payload     []byte `json:"payload"`
			} `json:"media"`
			StreamID string `json:"streamId"`
		}
		decodeExactly(t, typ, msg, &play)
		if play.Event != "playAudio" || play.Media.ContentType != tt.contentType || play.Media.SampleRate != tt.rate ||
			string(play.Media.Payload) != string(tt.frame) || play.StreamID != plivoStreamID {
			t.Errorf("playAudio %s", msg)
		}
	}
	s = plivoStarted(t)
	if typ, msg, ok := s.Mark("customer greeting audio"); !ok || typ != transport.Text || !jsonEqual(t, string(msg), strings.Replace(plivoCheckpointMsg, "20170ada-f610-433b-8758-c02a2aab3662", plivoStreamID, 1)) {
		t.Errorf("checkpoint %s", msg)
	}
	if _, msg, ok := s.Clear(); !ok || string(msg) != `{"event":"clearAudio","streamId":"`+plivoStreamID+`"}` {
		t.Errorf("clearAudio %s", msg)
	}
	if _, _, ok := s.Event("vad", "speech_start", nil, 0); ok {
		t.Error("Event rendered a message; Plivo takes playAudio, checkpoint, clearAudio and sendDTMF only")
	}
}

// extra_headers comes as the pages write it, "k=v;k2=v2", as the older
// XML page does ("Example: test1=12,test2=123"), or as an object.
func TestPlivoExtraHeaders(t *testing.T) {
	for headers, want := range map[string]map[string]string{
		`"userId=12345;sessionId=abc-xyz"`: {"userId": "12345", "sessionId": "abc-xyz"},
		`"test1=12,test2=123"`:             {"test1": "12", "test2": "123"},
		`"pipeline=loud;name=J%C3%BCrgen"`: {"pipeline": "loud", "name": "Jürgen"},
		`"{}"`:                             {},
		`{"a":"b"}`:                        {"a": "b"},
		`""`:                               nil,
		`null`:                             nil,
	} {
		var in transport.Inbound
		if err := session(transport.Plivo()).Decode(transport.Text, []byte(plivoStartMsg("audio/x-mulaw", 8000, headers)), &in); err != nil {
			t.Errorf("%s: %v", headers, err)
			continue
		}
		if !reflect.DeepEqual(in.Start.Params, want) {
			t.Errorf("%s: parameters %v, want %v", headers, in.Start.Params, want)
		}
	}
}

func TestPlivoErrors(t *testing.T) {
	good := tone(0, 160)
	tests := []struct {
		name        string
		msgs        []string
		want        string
		unsupported bool
	}{
		{"media before start", []string{plivoMediaMsg(2, "inbound", good)}, "plivo: media before start: Plivo sends a start message first", false},
		{"empty audio", []string{plivoDocStart, plivoMediaMsg(2, "inbound", nil)}, "plivo: empty audio frame", false},
		{"start without streamId", []string{`{"event":"start","start":{"callId":"c"}}`}, "plivo: start message without start.streamId", false},
		{"A-law", []string{plivoStartMsg("audio/x-alaw", 8000, `""`)},
			`plivo: unsupported mediaFormat "audio/x-alaw" at 8000 Hz; voxhost takes audio/x-mulaw at 8000 Hz or audio/x-l16 at 8000 or 16000 Hz`, true},
		{"μ-law at 16 kHz", []string{plivoStartMsg("audio/x-mulaw", 16000, `""`)},
			`plivo: unsupported mediaFormat "audio/x-mulaw" at 16000 Hz; voxhost takes audio/x-mulaw at 8000 Hz or audio/x-l16 at 8000 or 16000 Hz`, true},
		{"bad extra_headers", []string{plivoStartMsg("audio/x-mulaw", 8000, `"{\"a\":1}"`)},
			"plivo: bad extra_headers: json: cannot unmarshal number into Go value of type string", false},
		{"playedStream without a name", []string{plivoDocStart, `{"event":"playedStream"}`}, "plivo: playedStream message without a string name", false},
		{"bad dtmf digit", []string{plivoDocStart, plivoDTMFMsg(7, "x")}, `plivo: dtmf.digit "x" is not one of 0-9 * # A-D`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := session(transport.Plivo())
			var in transport.Inbound
			var err error
			for _, m := range tt.msgs {
				err = s.Decode(transport.Text, []byte(m), &in)
			}
			if perr := wantProtocolError(t, err, "plivo", tt.want); perr.Unsupported != tt.unsupported {
				t.Errorf("Unsupported %v, want %v", perr.Unsupported, tt.unsupported)
			}
			if !reflect.DeepEqual(in, transport.Inbound{}) {
				t.Errorf("a failed Decode left %+v", in)
			}
		})
	}
	checkLimits(t, func() transport.Session { return session(transport.Plivo()) }, map[string]string{
		"long callId":     `{"event":"start","start":{"streamId":"s","callId":"` + strings.Repeat("c", transport.MaxIDBytes+1) + `"}}`,
		"too many tracks": `{"event":"start","start":{"streamId":"s","tracks":["a","b","c","d","e"]}}`,
		"long header":     `{"event":"start","start":{"streamId":"s"},"extra_headers":"k=` + strings.Repeat("v", transport.MaxParamValueBytes+1) + `"}`,
		"long name":       `{"event":"playedStream","name":"` + strings.Repeat("m", transport.MaxMarkBytes+1) + `"}`,
	})
}

// plivoStopBot stands in a stop for the close that ends a Plivo stream,
// so that checkRoundTrip can end with one: the server role takes a stop.
type plivoStopBot struct{ transport.BotSession }

func (plivoStopBot) Stop() (transport.MessageType, []byte, bool) {
	return transport.Text, []byte(`{"event":"stop"}`), true
}

// TestPlivoDialectConformance: the plivo dialect says to a bot what Plivo
// says to a <Stream> URL, member for member, as the page prints it.
func TestPlivoDialectConformance(t *testing.T) {
	call := transport.CallInfo{CallID: plivoCallID, StreamID: plivoStreamID, AccountID: plivoAccount,
		Params: map[string]string{"userId": "12345", "sessionId": "abc-xyz"}}
	d, _ := transport.LookupDialect("plivo")
	b := d.NewBotSession(transport.BotConfig{Format: codec.Telephony, MaxAudio: maxAudio, Call: call})
	got := opened(t, b)
	// The pairs go out in key order.
	if want := strings.Replace(plivoDocStart, "userId=12345;sessionId=abc-xyz", "sessionId=abc-xyz;userId=12345", 1); len(got) != 1 || !jsonEqual(t, got[0].msg, want) {
		t.Fatalf("Open sent %v\nwant %s", got, want)
	}
	var media struct {
		Event          string `json:"event"`
		SequenceNumber int    `json:"sequenceNumber"`
		StreamID       string `json:"streamId"`
		Media          struct {
			Track     string `json:"track"`
			Timestamp string `json:"timestamp"`
			Chunk     int    `json:"chunk"`
			Payload   []byte `json:"payload"`
		} `json:"media"`
	}
	var stamps []int64
	for i, frame := range [][]byte{tone(0, 160), tone(160, 160)} {
		typ, msg := b.Audio(frame)
		decodeExactly(t, typ, msg, &media)
		var ms int64
		fmt.Sscan(media.Media.Timestamp, &ms)
		stamps = append(stamps, ms)
		if media.Event != "media" || media.SequenceNumber != i+2 || media.StreamID != plivoStreamID || media.Media.Track != "inbound" ||
			media.Media.Chunk != i+1 || string(media.Media.Payload) != string(frame) {
			t.Errorf("media %s", msg)
		}
	}
	// "media.timestamp: Unix timestamp in milliseconds", of the audio.
	if stamps[1]-stamps[0] != 20 || stamps[0] < 1_600_000_000_000 {
		t.Errorf("timestamps %v: want Unix ms, 20 ms apart", stamps)
	}
	for i, st := range []struct {
		got  sent
		want string
	}{
		{render(t)(b.DTMF('5')), plivoDTMFMsg(4, "5")},
		{render(t)(b.MarkPlayed("customer greeting audio")),
			`{"event":"playedStream","sequenceNumber":5,"streamId":"` + plivoStreamID + `","name":"customer greeting audio"}`},
		{render(t)(b.Event("vad", "speech_start", nil, 40)),
			`{"event":"playedStream","sequenceNumber":6,"streamId":"` + plivoStreamID + `","name":"voxhost:vad:speech_start"}`},
	} {
		if !jsonEqual(t, st.got.msg, st.want) {
			t.Errorf("message %d:\n%s\nwant\n%s", i, st.got.msg, st.want)
		}
	}
	if _, _, ok := b.Stop(); ok {
		t.Error("Stop rendered a message; a Plivo stream ends with the socket's close")
	}
	send, bargeIns := collect()
	if err := b.Interrupted(40, false, send); err != nil || len(*bargeIns) != 0 {
		t.Errorf("a barge-in the host detected sent %v (%v); Plivo has no message for one", *bargeIns, err)
	}
	if err := b.Interrupted(40, true, send); err != nil || len(*bargeIns) != 1 ||
		!jsonEqual(t, (*bargeIns)[0].msg, plivoClearedMsg(7)) {
		t.Errorf("the bot's clearAudio was answered with %v (%v), want clearedAudio", *bargeIns, err)
	}
}

// What a bot sends Plivo: playAudio (pipecat's form, with the streamId),
// checkpoint and clearAudio.
func TestPlivoDialectDecodesWhatBotsSend(t *testing.T) {
	b := newBot(t, "plivo", codec.Telephony, nil)
	frame := tone(0, 160)
	text := transport.Text
	play := `{"event":"playAudio","media":{"contentType":"audio/x-mulaw","sampleRate":8000,"payload":"` + base64.StdEncoding.EncodeToString(frame) + `"},"streamId":"` + plivoStreamID + `"}`
	decodeSteps(t, b, []decodeStep{
		{text, play, transport.Inbound{Kind: transport.KindAudio, Audio: frame}},
		{text, plivoCheckpointMsg, transport.Inbound{Kind: transport.KindMark, Mark: "customer greeting audio"}},
		{text, `{"event":"clearAudio","streamId":"` + plivoStreamID + `"}`, transport.Inbound{Kind: transport.KindClear}},
		{text, `{"event":"sendDTMF","dtmf":"123"}`, transport.Inbound{}},
	})
	decodeErrors(t, "plivo", func(t *testing.T) transport.BotSession { return newBot(t, "plivo", codec.Telephony, nil) }, []decodeError{
		{"binary", transport.Binary, string(frame), "plivo: binary message: Plivo takes JSON text messages only", false},
		{"no payload", text, `{"event":"playAudio","media":{}}`, "plivo: media message without a string media.payload", false},
		{"checkpoint without a name", text, `{"event":"checkpoint"}`, "plivo: checkpoint message without a string name", false},
	})
}

func TestPlivoDialectRoundTrip(t *testing.T) {
	for _, f := range []codec.Format{codec.Telephony, {Encoding: codec.L16, Rate: 16000}} {
		t.Run(f.String(), func(t *testing.T) {
			bot := newBot(t, "plivo", f, nil)
			srv := session(transport.Plivo())
			want := &transport.Start{StreamID: streamSid, CallID: callSid, AccountID: accountSid, Tracks: []string{"inbound"}, Params: testCall.Params}
			if got := serverDecode(t, srv)(opened(t, bot)[0]); got.Kind != transport.KindStart || !reflect.DeepEqual(got.Start, want) || srv.Format() != f {
				t.Errorf("start decoded as %v %+v in %v, want %+v in %v", got.Kind, got.Start, srv.Format(), want, f)
			}
			checkRoundTrip(t, plivoStopBot{bot}, srv)
		})
	}
}

func FuzzPlivoDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg string) {
		checkCarrierFuzz(t, plivoStarted(t), msg, "media", false)
	})
}

func FuzzPlivoBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg string) {
		in := checkCarrierFuzz(t, newBot(t, "plivo", codec.Telephony, nil), msg, "playAudio", false)
		switch in.Kind {
		case transport.KindAudio, transport.KindMark, transport.KindClear, transport.KindIgnore:
		default:
			t.Fatalf("a bot's message decoded as %v", in.Kind)
		}
	})
}
