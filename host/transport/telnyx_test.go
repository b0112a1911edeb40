package transport_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// Telnyx's messages as its pages print them: "Media Streaming over
// Websockets" (developers.telnyx.com/docs/voice/programmable-voice/media-streaming)
// and the AsyncAPI page "Stream call media over WebSocket"
// (developers.telnyx.com/api-reference/websockets/stream-call-media-over-websocket),
// whose start example this is, custom_parameters included:
//
//	"When the WebSocket connection is established, the following event is
//	being sent: { "event": "connected", "version": "1.0.0" }"
//	"An event over WebSockets which contains information in the mediaFormat
//	section about the encoding and stream_id that identifies a particular
//	stream"
const (
	telnyxStreamID  = "32DE0DEA-53CB-4B21-89A4-9E1819C043BC"
	telnyxCallID    = "v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ"
	telnyxUserID    = "3E6F995F-85F7-4705-9741-53B116D28237"
	telnyxConnected = `{ 
  "event": "connected", 
  "version": "1.0.0"
}`
)

func telnyxStartMsg(encoding string, rate int) string {
	return fmt.Sprintf(`{
  "event": "start",
  "sequence_number": "1",
  "stream_id": "32DE0DEA-53CB-4B21-89A4-9E1819C043BC",
  "start": {
    "user_id": "3E6F995F-85F7-4705-9741-53B116D28237",
    "call_control_id": "v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ",
    "call_session_id": "ff55a038-6f5d-11ef-9692-02420aeffb1f",
    "from": "+13122010094",
    "to": "+13122123456",
    "tags": [
      "TAG1",
      "TAG2"
    ],
    "client_state": "aGF2ZSBhIG5pY2UgZGF5ID1d",
    "custom_parameters": {
      "customer_id": "customer_123"
    },
    "media_format": {
      "encoding": %q,
      "sample_rate": %d,
      "channels": 1
    }
  }
}`, encoding, rate)
}

// telnyxDocPayload is the payload of the guide's media example: 99 ms of
// PCMU. "The payload contains a base64-encoded RTP payload (no headers)."
const telnyxDocPayload = "no+JhoaJjpzSHxAKBgYJDhtEopGKh4aIjZm7JhILBwYIDRg1qZSLh4aIjJevLBUMBwYHDBUsr5eMiIaHi5SpNRgNCAYHCxImu5mNiIaHipGiRBsOCQYGChAf0pyOiYaGiY+e/x4PCQYGCQ4cUp+QioaGiY6bxCIRCgcGCA0ZO6aSi4eGiI2YtSkUCwcGCAwXL6yVjIeGh4yVrC8XDAgGBwsUKbWYjYiGh4uSpjsZDQgGBwoRIsSbjomGhoqQn1IcDgkGBgkPHv+ej4mGhomOnNIfEAoGBgkOG0SikYqHhoiNmbsmEgsHBggNGDWplIuHhoiMl68sFQwHBgcMFSyvl4yIhoeLlKk1GA0IBgcLEia7mY2IhoeKkaJEGw4JBgYKEB/SnI6JhoaJj57/Hg8JBgYJDhxSn5CKhoaJjpvEIhEKBwYIDRk7ppKLh4aIjZi1KRQLBwYIDBcvrJWMh4aHjJWsLxcMCAYHCxQptZiNiIaHi5KmOxkNCAYHChEixJuOiYaGipCfUhwOCQYGCQ8e/56PiYaGiY6c0h8QCgYGCQ4bRKKRioeGiI2ZuyYSCwcGCA0YNamUi4eGiIyXrywVDAcGBwwVLK+XjIiGh4uUqTUYDQgGBwsSJruZjYiGh4qRokQbDgkGBgoQH9KcjomGhomPnv8eDwkGBgkOHFKfkIqGhomOm8QiEQoHBggNGTumkouHhoiNmLUpFAsHBggMFy+slYyHhoeMlawvFwwIBgcLFCm1mI2IhoeLkqY7GQ0IBgcKESLEm46JhoaKkJ9SHA4JBgYJDx7/no+JhoaJjpzSHxAKBgYJDhtEopGKh4aIjZm7JhILBwYIDRg1qZSLh4aIjJevLBUMBwYHDBUsr5eMiIaHi5SpNRgNCAYHCxImu5mNiIaHipGiRBsOCQYGChAf0pyOiYaGiY+e/x4PCQYGCQ4cUp+QioaGiY6bxCIRCgcGCA0ZO6aSi4eGiI2YtSkUCwcGCAwXL6yVjIeGh4yVrC8XDAgGBwsUKbWYjYiGh4uSpjsZDQgGBwoRIsSbjomGhoqQn1Ic"

func telnyxMediaMsg(track, payload string) string {
	return `{ 
 "event": "media",
 "sequence_number": "4",
 "media": { 
   "track": "` + track + `", 
   "chunk": "2",
   "timestamp": "5",
   "payload": "` + payload + `"
 },
 "stream_id": "32DE0DEA-53CB-4B21-89A4-9E1819C043BC" 
}`
}

// "In case of DTMF events on the call, the following message will be sent
// over websocket"; "When the media immediately preceding the mark finishes
// you will receive the same mark back"; "In case of any case of error
// during media streaming, an error frame in the following format is sent"
// (with the code and title of the page's table); "And the stop event over
// WebSockets connection is sent".
func telnyxDTMFMsg(digit string) string {
	return `{
  "event": "dtmf",
  "stream_id": "32DE0DEA-53CB-4B21-89A4-9E1819C043BC",
  "occurred_at": "2025-06-05T08:54:19.698408Z",
  "sequence_number": "5",
  "dtmf": {
    "digit": "` + digit + `"
  }
}`
}

func telnyxMarkMsg(name string) string {
	return `{
  "event": "mark",
  "stream_id": "32DE0DEA-53CB-4B21-89A4-9E1819C043BC",
  "sequence_number": "5",
  "mark": {
    "name": "` + name + `"
  }
}`
}

const telnyxErrorMsg = `{
  "event": "error",
  "payload": {
    "code": 100003,
    "title": "malformed_frame",
    "detail": "Received frame was not formed correctly"
  },
  "stream_id": "32DE0DEA-53CB-4B21-89A4-9E1819C043BC"
}`

const telnyxStopMsg = `{ 
 "event": "stop",
 "sequence_number": "5",
 "stop": {
  "user_id": "3E6F995F-85F7-4705-9741-53B116D28237",
  "call_control_id": "v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ"
  },
  "stream_id": "32DE0DEA-53CB-4B21-89A4-9E1819C043BC" 
}`

// telnyxStarted is a Telnyx session that has decoded the PCMU start.
func telnyxStarted(t testing.TB) transport.Session {
	t.Helper()
	return startWith(t, transport.Telnyx(), "", telnyxConnected, telnyxStartMsg("PCMU", 8000))
}

func TestTelnyxConversation(t *testing.T) {
	p := transport.Telnyx()
	if p.Name() != "telnyx" || p.Path() != "/telnyx" || p.StartsOnConnect() || !p.Buffers() {
		t.Fatalf("Name %q, Path %q, StartsOnConnect %v, Buffers %v", p.Name(), p.Path(), p.StartsOnConnect(), p.Buffers())
	}
	doc, _ := base64.StdEncoding.DecodeString(telnyxDocPayload)
	frame := tone(0, 160)
	wantStart := &transport.Start{StreamID: telnyxStreamID, CallID: telnyxCallID, AccountID: telnyxUserID,
		Params: map[string]string{"customer_id": "customer_123", "from": "+13122010094", "to": "+13122123456"}}
	s := session(p)
	decodeSteps(t, s, []decodeStep{
		{transport.Text, telnyxConnected, transport.Inbound{}},
		{transport.Text, telnyxStartMsg("PCMU", 8000), transport.Inbound{Kind: transport.KindStart, Start: wantStart}},
		{transport.Text, telnyxMediaMsg("inbound", telnyxDocPayload), transport.Inbound{Kind: transport.KindAudio, Audio: doc}},
		{transport.Text, telnyxMediaMsg("inbound", base64.StdEncoding.EncodeToString(frame)), transport.Inbound{Kind: transport.KindAudio, Audio: frame}},
		// The far end's own audio, on a stream of both_tracks.
		{transport.Text, telnyxMediaMsg("outbound", telnyxDocPayload), transport.Inbound{}},
		{transport.Text, telnyxDTMFMsg("1"), transport.Inbound{Kind: transport.KindDTMF, Digit: '1'}},
		{transport.Text, telnyxMarkMsg("some_mark_name"), transport.Inbound{Kind: transport.KindMark, Mark: "some_mark_name"}},
		{transport.Text, telnyxErrorMsg, transport.Inbound{Kind: transport.KindError, Text: "error 100003 malformed_frame: Received frame was not formed correctly"}},
		{transport.Text, `{"event":"some_future_event","stream_id":"` + telnyxStreamID + `"}`, transport.Inbound{}},
		{transport.Text, telnyxStopMsg, transport.Inbound{Kind: transport.KindStop}},
	})
	if s.Format() != codec.Telephony {
		t.Errorf("Format %v, want 8 kHz μ-law", s.Format())
	}
}

// What the host sends Telnyx is in the guide's own form: "The RTP
// streaming can be sent using media events: { "event": "media", "media":
// { "payload": … } }", "{ "event": "clear" }" and "Example mark message
// sent to the stream: { "event": "mark", "mark": { "name":
// "some_mark_name" } }". None carries a stream id.
func TestTelnyxOutbound(t *testing.T) {
	s := telnyxStarted(t)
	frame := tone(0, 160)
	typ, msg := s.Audio(frame)
	var media struct {
		Event string `json:"event"`
		Media struct {
			Payload []byte `json:"payload"`
		} `json:"media"`
	}
	decodeExactly(t, typ, msg, &media)
	if media.Event != "media" || string(media.Media.Payload) != string(frame) {
		t.Errorf("media message %s", msg)
	}
	typ, msg, ok := s.Mark("some_mark_name")
	var mark struct {
		Event string `json:"event"`
		Mark  struct {
			Name string `json:"name"`
		} `json:"mark"`
	}
	decodeExactly(t, typ, msg, &mark)
	if !ok || mark.Event != "mark" || mark.Mark.Name != "some_mark_name" {
		t.Errorf("mark message %s", msg)
	}
	if typ, msg, ok := s.Clear(); !ok || typ != transport.Text || string(msg) != `{"event":"clear"}` {
		t.Errorf("clear message %s", msg)
	}
	if _, _, ok := s.Event("vad", "speech_start", nil, 20); ok {
		t.Error("Event rendered a message; Telnyx takes media, mark and clear only")
	}
	if _, _, ok := s.Hangup(); ok {
		t.Error("Hangup rendered a message; Telnyx hangs up with its REST API")
	}
}

// The stream's codec is media_format's; what goes back is what Telnyx was
// told as stream_bidirectional_codec: PCMU by default, at 8 kHz, which an
// A-law call gets transcoded to; L16 in network byte order.
func TestTelnyxFormats(t *testing.T) {
	alaw := alawTone(160)
	pcm := pcmAt(16000, 640)
	l16 := func(rate int) codec.Format { return codec.Format{Encoding: codec.L16, Rate: rate} }
	tests := []struct {
		name      string
		query     string
		start     string
		in, want  []byte // a frame of the stream as Telnyx sends it, and as the host reads it
		out, sent []byte // a frame the host sends, and what goes to Telnyx
		format    codec.Format
	}{
		{"PCMU", "", telnyxStartMsg("PCMU", 8000), tone(0, 160), tone(0, 160), tone(0, 160), tone(0, 160), codec.Telephony},
		{"PCMA, PCMU back", "", telnyxStartMsg("PCMA", 8000), alaw, alaw, alaw, ulawOf(alaw), codec.Format{Encoding: codec.Alaw, Rate: 8000}},
		{"PCMA both ways", "stream_bidirectional_codec=PCMA", telnyxStartMsg("PCMA", 8000), alaw, alaw, alaw, alaw, codec.Format{Encoding: codec.Alaw, Rate: 8000}},
		{"L16 at 16 kHz", "", telnyxStartMsg("L16", 16000), swapped(pcm), pcm, pcm, swapped(pcm), l16(16000)},
		{"L16 at 8 kHz, PCMU back", "", telnyxStartMsg("L16", 8000), swapped(pcm[:320]), pcm[:320], pcm[:320], ulawOfPCM(pcm[:320]), l16(8000)},
		{"PCMU, L16 back", "stream_bidirectional_codec=L16", telnyxStartMsg("PCMU", 8000), tone(0, 160), tone(0, 160), tone(0, 160), swapped(pcmOfUlaw(tone(0, 160))), codec.Telephony},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startWith(t, transport.Telnyx(), tt.query, tt.start)
			if s.Format() != tt.format {
				t.Errorf("Format %v, want %v", s.Format(), tt.format)
			}
			var in transport.Inbound
			if err := s.Decode(transport.Text, []byte(telnyxMediaMsg("inbound", base64.StdEncoding.EncodeToString(tt.in))), &in); err != nil {
				t.Fatal(err)
			}
			if string(in.Audio) != string(tt.want) {
				t.Errorf("decoded %x, want %x", in.Audio, tt.want)
			}
			if _, msg := s.Audio(tt.out); string(payloadOf(t, msg)) != string(tt.sent) {
				t.Errorf("sent %x, want %x", payloadOf(t, msg), tt.sent)
			}
		})
	}
}

func pcmOfUlaw(u []byte) []byte {
	pcm := make([]byte, 2*len(u))
	codec.DecodeUlaw(pcm, u)
	return pcm
}

func ulawOfPCM(pcm []byte) []byte {
	u := make([]byte, len(pcm)/2)
	codec.EncodeUlaw(u, pcm)
	return u
}

func TestTelnyxErrors(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(tone(0, 160))
	start := telnyxStartMsg("PCMU", 8000)
	tests := []struct {
		name        string
		query       string
		msgs        []string // the last one fails
		want        string
		unsupported bool
	}{
		{"invalid JSON", "", []string{`{"event":"media"`}, "telnyx: invalid JSON at byte 16: message ends early, expected ',' or '}' after an object member", false},
		{"no event", "", []string{`{"media":{"payload":"` + good + `"}}`}, `telnyx: message without an "event" member`, false},
		{"media before start", "", []string{telnyxConnected, telnyxMediaMsg("inbound", good)}, "telnyx: media before start: Telnyx sends a start message first", false},
		{"bad base64", "", []string{start, telnyxMediaMsg("inbound", good[:12]+"*"+good[13:])}, "telnyx: bad base64 in media payload at byte 12", false},
		{"audio not whole ms", "", []string{start, telnyxMediaMsg("inbound", base64.StdEncoding.EncodeToString(tone(0, 159)))},
			"telnyx: audio frame of 159 bytes is not a multiple of 8 (whole milliseconds of 8 kHz μ-law)", false},
		{"payload not a string", "", []string{start, `{"event":"media","media":{"payload":5}}`}, "telnyx: media message without a string media.payload", false},
		{"start without start", "", []string{`{"event":"start","stream_id":"s"}`}, "telnyx: start message without a start object", false},
		{"start without stream_id", "", []string{`{"event":"start","start":{"call_control_id":"c"}}`}, "telnyx: start message without stream_id", false},
		{"G722", "", []string{telnyxStartMsg("G722", 8000)},
			`telnyx: unsupported media_format "G722" at 8000 Hz, 1 channel(s); voxhost takes PCMU or PCMA at 8000 Hz, or L16 at 8000, 16000 or 24000 Hz, 1 channel`, true},
		{"L16 at 16 kHz, PCMU back", "stream_bidirectional_codec=PCMU", []string{telnyxStartMsg("L16", 16000)},
			"telnyx: the stream is 16 kHz L16, but stream_bidirectional_codec=PCMU is carried at 8000 Hz only and voxhost sends at the stream's rate: start the stream with stream_bidirectional_codec L16 and ?stream_bidirectional_codec=L16 on its stream_url", true},
		{"bad dtmf digit", "", []string{start, telnyxDTMFMsg("11")}, `telnyx: dtmf.digit "11" is not one of 0-9 * # A-D`, false},
		{"mark without a mark", "", []string{start, `{"event":"mark"}`}, "telnyx: mark message without a mark object", false},
		{"error without a payload", "", []string{start, `{"event":"error"}`}, "telnyx: error message without a payload object", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sessionQuery(t, transport.Telnyx(), tt.query)
			var in transport.Inbound
			var err error
			for _, m := range tt.msgs {
				err = s.Decode(transport.Text, []byte(m), &in)
			}
			perr := wantProtocolError(t, err, "telnyx", tt.want)
			if perr.Unsupported != tt.unsupported {
				t.Errorf("Unsupported %v, want %v", perr.Unsupported, tt.unsupported)
			}
			if !reflect.DeepEqual(in, transport.Inbound{}) {
				t.Errorf("a failed Decode left %+v", in)
			}
		})
	}
	var in transport.Inbound
	err := session(transport.Telnyx()).Decode(transport.Binary, tone(0, 160), &in)
	if perr := wantProtocolError(t, err, "telnyx", "telnyx: binary message: Telnyx sends JSON text messages only"); !perr.Unsupported {
		t.Error("a binary message is not refused as unsupported")
	}
	if _, err := transport.Telnyx().NewSession(transport.SessionConfig{MaxFrameMs: 100, Query: map[string][]string{"stream_bidirectional_codec": {"OPUS"}}}); err == nil ||
		err.Error() != `telnyx: stream_bidirectional_codec="OPUS" is not a codec voxhost sends (want PCMU, PCMA or L16)` {
		t.Errorf("an OPUS stream_bidirectional_codec: %v", err)
	}
}

func TestTelnyxStartBounds(t *testing.T) {
	start := func(streamID, callID, params string) string {
		return `{"event":"start","stream_id":"` + streamID + `","start":{"call_control_id":"` + callID + `","custom_parameters":` + params + `}}`
	}
	checkLimits(t, func() transport.Session { return session(transport.Telnyx()) }, map[string]string{
		"long stream_id":       start(strings.Repeat("a", transport.MaxIDBytes+1), "c", "{}"),
		"call id with a space": start("s", "v3:a b", "{}"),
		"too many params":      start("s", "c", params(transport.MaxParams+1, "v")),
		"long mark":            `{"event":"mark","mark":{"name":"` + strings.Repeat("m", transport.MaxMarkBytes+1) + `"}}`,
	})
}

// TestTelnyxDialectConformance: the telnyx dialect says to a bot what
// Telnyx says to a stream_url, member for member, as the pages above
// print it, but for the start's call_session_id, tags and client_state,
// which the host does not have.
func TestTelnyxDialectConformance(t *testing.T) {
	call := transport.CallInfo{CallID: telnyxCallID, StreamID: telnyxStreamID, AccountID: telnyxUserID,
		Params: map[string]string{"customer_id": "customer_123", "from": "+13122010094", "to": "+13122123456"}}
	d, _ := transport.LookupDialect("telnyx")
	b := d.NewBotSession(transport.BotConfig{Format: codec.Telephony, MaxAudio: maxAudio, Call: call})
	got := opened(t, b)
	if len(got) != 2 {
		t.Fatalf("Open sent %d messages, want connected and start", len(got))
	}
	docStart := strings.NewReplacer(`"call_session_id": "ff55a038-6f5d-11ef-9692-02420aeffb1f",`, "",
		`"tags": [
      "TAG1",
      "TAG2"
    ],`, "", `"client_state": "aGF2ZSBhIG5pY2UgZGF5ID1d",`, "").Replace(telnyxStartMsg("PCMU", 8000))
	frame := tone(0, 160)
	audio := func(f []byte) sent {
		typ, msg := b.Audio(f)
		return sent{typ, string(msg)}
	}
	media := func(seq, chunk, ms int, f []byte) string {
		return fmt.Sprintf(`{"event":"media","sequence_number":"%d","media":{"track":"inbound","chunk":"%d","timestamp":"%d","payload":%q},"stream_id":%q}`,
			seq, chunk, ms, base64.StdEncoding.EncodeToString(f), telnyxStreamID)
	}
	for i, st := range []struct {
		got  sent
		want string
	}{
		{got[0], telnyxConnected},
		{got[1], docStart},
		{audio(frame), media(2, 1, 0, frame)},
		{audio(frame), media(3, 2, 20, frame)},
		{render(t)(b.MarkPlayed("some_mark_name")), strings.Replace(telnyxMarkMsg("some_mark_name"), `"5"`, `"4"`, 1)},
		{render(t)(b.Event("vad", "speech_start", nil, 40)), telnyxMarkMsg("voxhost:vad:speech_start")},
		{render(t)(b.Stop()), strings.Replace(telnyxStopMsg, `"5"`, `"6"`, 1)},
	} {
		if st.got.typ != transport.Text || !jsonEqual(t, st.got.msg, st.want) {
			t.Errorf("message %d:\n%s\nwant\n%s", i, st.got.msg, st.want)
		}
	}

	// A key carries occurred_at, the time Telnyx saw it: here, now.
	_, msg, _ := b.DTMF('1')
	var dtmf struct {
		OccurredAt time.Time `json:"occurred_at"`
	}
	if err := json.Unmarshal(msg, &dtmf); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	if d := time.Since(dtmf.OccurredAt); d < 0 || d > time.Minute {
		t.Errorf("occurred_at %v is not now", dtmf.OccurredAt)
	}
	if !jsonEqual(t, strings.Replace(string(msg), dtmf.OccurredAt.Format("2006-01-02T15:04:05.000000Z"), "2025-06-05T08:54:19.698408Z", 1),
		strings.Replace(telnyxDTMFMsg("1"), `"5"`, `"7"`, 1)) {
		t.Errorf("dtmf message %s", msg)
	}

	wantNoBargeInMessage(t, b, "Telnyx")
}

// What a bot sends Telnyx, in the guide's examples: media, mark and clear.
func TestTelnyxDialectDecodesWhatBotsSend(t *testing.T) {
	b := newBot(t, "telnyx", codec.Telephony, nil)
	frame, odd := tone(0, 160), tone(0, 37)
	text := transport.Text
	decodeSteps(t, b, []decodeStep{
		{text, `{"event":"media","media":{"payload":"` + base64.StdEncoding.EncodeToString(frame) + `"}}`, transport.Inbound{Kind: transport.KindAudio, Audio: frame}},
		{text, `{"event":"media","media":{"payload":"` + base64.StdEncoding.EncodeToString(odd) + `"}}`, transport.Inbound{Kind: transport.KindAudio, Audio: odd}},
		{text, `{"event":"mark","mark":{"name":"some_mark_name"}}`, transport.Inbound{Kind: transport.KindMark, Mark: "some_mark_name"}},
		{text, `{"event":"clear"}`, transport.Inbound{Kind: transport.KindClear}},
		{text, `{"event":"dtmf","dtmf":{"digit":"1"}}`, transport.Inbound{}},
	})
	l16 := newBot(t, "telnyx", codec.Format{Encoding: codec.L16, Rate: 16000}, nil)
	pcm := pcmAt(16000, 640)
	decodeSteps(t, l16, []decodeStep{
		{text, `{"event":"media","media":{"payload":"` + base64.StdEncoding.EncodeToString(swapped(pcm)) + `"}}`, transport.Inbound{Kind: transport.KindAudio, Audio: pcm}},
	})
	if _, msg := l16.Audio(pcm); string(payloadOf(t, []byte(msg))) != string(swapped(pcm)) {
		t.Error("the L16 dialect does not send network byte order")
	}
	decodeErrors(t, "telnyx", func(t *testing.T) transport.BotSession { return newBot(t, "telnyx", codec.Telephony, nil) }, []decodeError{
		{"binary", transport.Binary, string(frame), "telnyx: binary message: Telnyx takes JSON text messages only", false},
		{"no media object", text, `{"event":"media","media":"x"}`, "telnyx: media message without a media object", false},
		{"empty payload", text, `{"event":"media","media":{"payload":""}}`, "telnyx: empty audio frame", false},
		{"mark too long", text, `{"event":"mark","mark":{"name":"` + strings.Repeat("m", transport.MaxMarkBytes+1) + `"}}`,
			"telnyx: mark.name of 257 bytes is longer than 256", true},
	})
}

// The dialect's messages read in the server role as Telnyx's own, and the
// server role's in the dialect as a bot's, at PCMU and at L16.
func TestTelnyxDialectRoundTrip(t *testing.T) {
	for _, f := range []codec.Format{codec.Telephony, {Encoding: codec.L16, Rate: 16000}} {
		t.Run(f.String(), func(t *testing.T) {
			bot := newBot(t, "telnyx", f, nil)
			srv := session(transport.Telnyx())
			decode := serverDecode(t, srv)
			open := opened(t, bot)
			if got := decode(open[0]); got.Kind != transport.KindIgnore {
				t.Errorf("connected decoded as %v", got.Kind)
			}
			want := &transport.Start{StreamID: streamSid, CallID: callSid, AccountID: accountSid, Params: testCall.Params}
			if got := decode(open[1]); got.Kind != transport.KindStart || !reflect.DeepEqual(got.Start, want) || srv.Format() != f {
				t.Errorf("start decoded as %v %+v in %v, want %+v in %v", got.Kind, got.Start, srv.Format(), want, f)
			}
			checkRoundTrip(t, bot, srv)
		})
	}
	// The call's from and to go out as Telnyx's and come back as parameters.
	d, _ := transport.LookupDialect("telnyx")
	params := map[string]string{"from": "+13122010094", "to": "+13122123456", "lang": "de"}
	bot := d.NewBotSession(transport.BotConfig{Format: codec.Telephony, MaxAudio: maxAudio, Call: transport.CallInfo{CallID: "c", Params: params}})
	srv := session(transport.Telnyx())
	open := opened(t, bot)
	if got := serverDecode(t, srv)(open[1]); !reflect.DeepEqual(got.Start.Params, params) {
		t.Errorf("parameters came back as %v, want %v", got.Start.Params, params)
	}
}

func FuzzTelnyxDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg string) {
		checkCarrierFuzz(t, telnyxStarted(t), msg, "media", false)
	})
}

func FuzzTelnyxBotDecode(f *testing.F) {
	l16 := codec.Format{Encoding: codec.L16, Rate: 16000}
	f.Fuzz(func(t *testing.T, msg string) {
		in := checkCarrierFuzz(t, newBot(t, "telnyx", l16, nil), msg, "media", true)
		if in.Kind == transport.KindAudio {
			wantBotAudio(t, in.Audio, l16)
		}
		if in.Kind != transport.KindAudio && in.Kind != transport.KindMark && in.Kind != transport.KindClear && in.Kind != transport.KindIgnore {
			t.Fatalf("a bot's message decoded as %v", in.Kind)
		}
	})
}
