package transport_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// The shapes below are the Realtime API's events as openai-python's
// src/openai/types/realtime/ declares them (generated from OpenAI's
// OpenAPI spec):
//
//   - ResponseAudioDeltaEvent: type "response.output_audio.delta" (beta
//     "response.audio.delta"), event_id, response_id, item_id,
//     output_index, content_index, delta: "Base64-encoded audio data delta."
//   - InputAudioBufferSpeechStartedEvent: type
//     "input_audio_buffer.speech_started", event_id, audio_start_ms,
//     item_id: "The ID of the user message item that will be created when
//     speech stops."
//   - RealtimeErrorEvent: type "error", event_id, error: RealtimeError
//     {message: "A human-readable error message.", type, code, event_id,
//     param}; "Most errors are recoverable and the session will stay open".
//   - InputAudioBufferAppendEvent: type "input_audio_buffer.append",
//     audio: "Base64-encoded audio bytes."
//   - ResponseCancelEvent: type "response.cancel", "Send this event to
//     cancel an in-progress response."
//   - ConversationItemTruncateEvent: type "conversation.item.truncate",
//     item_id, content_index ("Set this to `0`."), audio_end_ms:
//     "Inclusive duration up to which audio is truncated, in milliseconds.
//     If the audio_end_ms is greater than the actual audio duration, the
//     server will respond with an error."
//   - SessionUpdateEvent: type "session.update", session:
//     RealtimeSessionCreateRequest {type: "realtime", audio:
//     {input: {format, turn_detection}, output: {format, voice}},
//     instructions}; RealtimeAudioFormats: {type: "audio/pcm", rate: 24000}
//     | {type: "audio/pcmu"}; turn_detection: {type: "server_vad"} |
//     {type: "semantic_vad"}, "This can be set to `null` to turn off".

// openaiDeltaMsg is an audio delta event.
func openaiDeltaMsg(typ, itemID string, audio []byte) string {
	return fmt.Sprintf(`{"type":%q,"event_id":"event_4950","response_id":"resp_001","item_id":%q,"output_index":0,"content_index":0,"delta":%q}`,
		typ, itemID, base64.StdEncoding.EncodeToString(audio))
}

const (
	openaiSpeechStarted   = `{"type":"input_audio_buffer.speech_started","event_id":"event_1516","audio_start_ms":1000,"item_id":"msg_003"}`
	openaiResponseCreated = `{"type":"response.created","event_id":"event_2930","response":{"object":"realtime.response","id":"resp_001","status":"in_progress","output":[]}}`
	openaiResponseDone    = `{"type":"response.done","event_id":"event_3132","response":{"object":"realtime.response","id":"resp_001","status":"completed","output":[]}}`
)

func TestOpenAISessionUpdate(t *testing.T) {
	tests := []struct {
		name string
		f    codec.Format
		opts map[string]string
		want string
	}{
		{"ga defaults", l16At24k, nil,
			`{"type":"session.update","session":{"type":"realtime","audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"turn_detection":{"type":"server_vad"}},"output":{"format":{"type":"audio/pcm","rate":24000}}}}}`},
		{"ga μ-law, voice, instructions, semantic vad", codec.Telephony,
			map[string]string{"api": "ga", "voice": "marin", "instructions": "Be brief.\n\"Kind\", too.", "turn_detection": "semantic_vad"},
			`{"type":"session.update","session":{"type":"realtime","audio":{"input":{"format":{"type":"audio/pcmu"},"turn_detection":{"type":"semantic_vad"}},"output":{"format":{"type":"audio/pcmu"},"voice":"marin"}},"instructions":"Be brief.\n\"Kind\", too."}}`},
		{"ga without turn detection", l16At24k, map[string]string{"turn_detection": "none"},
			`{"type":"session.update","session":{"type":"realtime","audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"turn_detection":null},"output":{"format":{"type":"audio/pcm","rate":24000}}}}}`},
		{"beta pcm16", l16At24k, map[string]string{"api": "beta", "voice": "alloy", "instructions": "Hi"},
			`{"type":"session.update","session":{"input_audio_format":"pcm16","output_audio_format":"pcm16","turn_detection":{"type":"server_vad"},"voice":"alloy","instructions":"Hi"}}`},
		{"beta g711_ulaw without turn detection", codec.Telephony, map[string]string{"api": "beta", "turn_detection": "none"},
			`{"type":"session.update","session":{"input_audio_format":"g711_ulaw","output_audio_format":"g711_ulaw","turn_detection":null}}`},
	}
	for _, tt := range tests {
		got := opened(t, newBot(t, "openai-realtime", tt.f, tt.opts))
		if len(got) != 1 || got[0].typ != transport.Text || !jsonEqual(t, got[0].msg, tt.want) {
			t.Errorf("%s: Open sent %v\nwant %s", tt.name, got, tt.want)
		}
	}
}

func TestOpenAIOptions(t *testing.T) {
	d, _ := transport.LookupDialect("openai-realtime")
	tests := []struct {
		opts map[string]string
		want string // "" means accepted
	}{
		{nil, ""},
		{map[string]string{"api": "beta", "voice": "x", "instructions": "y", "turn_detection": "none"}, ""},
		{map[string]string{"api": "v2"}, `the openai-realtime dialect's api is ga or beta, not "v2"`},
		{map[string]string{"turn_detection": "push_to_talk"}, `the openai-realtime dialect's turn_detection is server_vad, semantic_vad or none, not "push_to_talk"`},
		{map[string]string{"model": "gpt-realtime"}, "the openai-realtime dialect takes the model in the upstream url (wss://api.openai.com/v1/realtime?model=gpt-realtime), not as an option"},
		{map[string]string{"voice": "alloy", "temprature": "0.8", "speed": "2"},
			`the openai-realtime dialect has no option "speed" (it takes api, instructions, turn_detection and voice)`},
	}
	for _, tt := range tests {
		err := transport.CheckOptions(d, tt.opts)
		if got := ""; err != nil {
			got = err.Error()
			if got != tt.want {
				t.Errorf("%v: %q, want %q", tt.opts, got, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("%v accepted, want %q", tt.opts, tt.want)
		}
	}
}

func TestOpenAIAppend(t *testing.T) {
	for _, f := range []codec.Format{l16At24k, codec.Telephony} {
		b := newBot(t, "openai-realtime", f, nil)
		audio := pcm24k(960)
		typ, msg := b.Audio(audio)
		var m struct {
			Type  string `json:"type"`
			Audio []byte `json:"audio"` // encoding/json decodes base64 into []byte
		}
		decodeExactly(t, typ, msg, &m)
		if m.Type != "input_audio_buffer.append" || string(m.Audio) != string(audio) {
			t.Errorf("%v: rendered %.80s..., want an append of the audio", f, msg)
		}
	}
}

func TestOpenAIDecode(t *testing.T) {
	b := newBot(t, "openai-realtime", l16At24k, nil)
	pcm, partial := pcm24k(960), pcm24k(34) // 20 ms, and 17 samples
	longMessage := strings.Repeat("é", 200) // 400 bytes
	text := transport.Text
	decodeSteps(t, b, []decodeStep{
		{text, `{"type":"session.created","event_id":"event_1234","session":{"type":"realtime","object":"realtime.session","id":"sess_001","model":"gpt-realtime","output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000}}}}}`,
			transport.Inbound{Kind: transport.KindIgnore}},
		{text, openaiResponseCreated, transport.Inbound{Kind: transport.KindIgnore}},
		{text, openaiDeltaMsg("response.output_audio.delta", "item_001", pcm), transport.Inbound{Kind: transport.KindAudio, Audio: pcm}},
		{text, openaiDeltaMsg("response.audio.delta", "item_001", partial), transport.Inbound{Kind: transport.KindAudio, Audio: partial}},
		// A transcript's delta is text, never audio.
		{text, `{"type":"response.output_audio_transcript.delta","event_id":"event_4","response_id":"resp_001","item_id":"item_001","output_index":0,"content_index":0,"delta":"Hello"}`,
			transport.Inbound{Kind: transport.KindIgnore}},
		// An empty delta has nothing to play.
		{text, openaiDeltaMsg("response.output_audio.delta", "item_001", nil), transport.Inbound{Kind: transport.KindIgnore}},
		{text, openaiSpeechStarted, transport.Inbound{Kind: transport.KindClear}},
		{text, `{"type":"input_audio_buffer.speech_stopped","event_id":"event_1718","audio_end_ms":2000,"item_id":"msg_003"}`, transport.Inbound{Kind: transport.KindIgnore}},
		{text, `{"type":"error","event_id":"event_890","error":{"type":"invalid_request_error","code":"invalid_event","message":"The 'type' field is missing.","param":null,"event_id":"event_567"}}`,
			transport.Inbound{Kind: transport.KindError, Text: "The 'type' field is missing."}},
		{text, `{"type":"error","event_id":"event_891","error":{"type":"server_error","message":"` + longMessage + `"}}`,
			transport.Inbound{Kind: transport.KindError, Text: longMessage[:300] + "..."}},
		{text, `{"type":"error","event_id":"event_892","error":"boom"}`,
			transport.Inbound{Kind: transport.KindError, Text: "error event without a string error.message"}},
		{text, openaiResponseDone, transport.Inbound{Kind: transport.KindIgnore}},
	})
}

func TestOpenAIErrors(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(pcm24k(960))
	decodeErrors(t, "openai-realtime", func(t *testing.T) transport.BotSession { return newBot(t, "openai-realtime", l16At24k, nil) }, []decodeError{
		{"binary", transport.Binary, string(pcm24k(960)), "openai-realtime: binary message: the Realtime API sends JSON text messages only", false},
		{"invalid JSON", transport.Text, `{"type":"error",}`, "openai-realtime: invalid JSON at byte 16: expected a string key", false},
		{"no type", transport.Text, `{"event":"media"}`, `openai-realtime: message without a "type" member`, false},
		{"type not a string", transport.Text, `{"type":["error"]}`, `openai-realtime: "type" is not a string`, false},
		{"delta not a string", transport.Text, `{"type":"response.output_audio.delta","item_id":"item_1","delta":null}`,
			"openai-realtime: audio delta without a string delta", false},
		{"no item_id", transport.Text, `{"type":"response.output_audio.delta","delta":"` + good + `"}`,
			"openai-realtime: audio delta without a string item_id", false},
		{"long item_id", transport.Text, openaiDeltaMsg("response.output_audio.delta", strings.Repeat("i", 65), pcm24k(2)),
			"openai-realtime: item_id of 65 bytes is longer than 64", true},
		{"item_id with a line break", transport.Text, openaiDeltaMsg("response.output_audio.delta", "item\n1", pcm24k(2)),
			`openai-realtime: item_id has '\n' at byte 4; ids are ASCII letters, digits and - _ . :`, true},
		{"bad base64", transport.Text, `{"type":"response.output_audio.delta","item_id":"item_1","delta":"` + good[:9] + "!" + good[10:] + `"}`,
			"openai-realtime: bad base64 in delta at byte 9", false},
		{"delta too long", transport.Text, openaiDeltaMsg("response.output_audio.delta", "item_1", pcm24k(maxAudio+2)),
			"openai-realtime: audio frame of 1602 bytes exceeds the limit of 1600", false},
		{"half a sample", transport.Text, openaiDeltaMsg("response.output_audio.delta", "item_1", []byte{1, 2, 3}),
			"openai-realtime: audio of 3 bytes is not a whole number of 2-byte l16 samples", false},
	})
}

// openaiTruncate is conversation.item.truncate as the dialect renders it.
type openaiTruncate struct {
	Type         string `json:"type"`
	ItemID       string `json:"item_id"`
	ContentIndex int    `json:"content_index"`
	AudioEndMs   int64  `json:"audio_end_ms"`
}

// interrupted calls Interrupted and returns what it sent: whether it
// cancelled, and the truncation, if any.
func interrupted(t *testing.T, b transport.BotSession, heardMs int64, byBot bool) (cancelled bool, trunc *openaiTruncate) {
	t.Helper()
	send, got := collect()
	if err := b.Interrupted(heardMs, byBot, send); err != nil {
		t.Fatal(err)
	}
	for i, m := range *got {
		switch {
		case i == 0 && m.msg == `{"type":"response.cancel"}`:
			cancelled = true
		case trunc == nil:
			trunc = new(openaiTruncate)
			decodeExactly(t, m.typ, []byte(m.msg), trunc)
			if trunc.Type != "conversation.item.truncate" || trunc.ContentIndex != 0 {
				t.Errorf("sent %s, want a truncation of content 0", m.msg)
			}
		default:
			t.Errorf("sent %s after a truncation", m.msg)
		}
	}
	return cancelled, trunc
}

// speak decodes n deltas of 20 ms of μ-law for item id, checking each is
// audio (or, if dropped, ignored).
func speak(t *testing.T, b transport.BotSession, id string, n int, dropped bool) {
	t.Helper()
	for range n {
		in := decodeBot(t, b, transport.Text, []byte(openaiDeltaMsg("response.output_audio.delta", id, tone(0, 160))))
		want := transport.KindAudio
		if dropped {
			want = transport.KindIgnore
		}
		if in.Kind != want {
			t.Fatalf("delta of %s decoded as %v, want %v", id, in.Kind, want)
		}
	}
}

// TestOpenAIBargeIn follows a call's positions through barge-ins of both
// kinds: audio_end_ms is what the caller heard of the item, counted from
// the position of its first delta in all the audio Decode returned.
func TestOpenAIBargeIn(t *testing.T) {
	b := newBot(t, "openai-realtime", codec.Telephony, nil)
	event := func(msg string) { decodeBot(t, b, transport.Text, []byte(msg)) }

	// Before any response: nothing to cancel or truncate.
	if c, tr := interrupted(t, b, 0, false); c || tr != nil {
		t.Errorf("barge-in before any response: cancel %v, truncate %+v", c, tr)
	}

	// A response starts; no audio yet: only a cancel.
	event(openaiResponseCreated)
	if c, tr := interrupted(t, b, 0, false); !c || tr != nil {
		t.Errorf("barge-in before audio: cancel %v, truncate %+v; want a cancel only", c, tr)
	}
	event(openaiResponseDone)

	// Item A: 100 ms at position 0; the host's VAD fires after 50 ms heard.
	event(openaiResponseCreated)
	speak(t, b, "item_A", 5, false)
	if c, tr := interrupted(t, b, 50, false); !c || tr == nil || tr.ItemID != "item_A" || tr.AudioEndMs != 50 {
		t.Errorf("barge-in at 50 ms of item A: cancel %v, truncate %+v; want a cancel and item_A at 50", c, tr)
	}
	// A second barge-in before response.done has nothing more to do.
	if c, tr := interrupted(t, b, 55, false); c || tr != nil {
		t.Errorf("second barge-in: cancel %v, truncate %+v; want nothing", c, tr)
	}
	// What the model had already sent of A is dropped, and does not move
	// the position on.
	speak(t, b, "item_A", 2, true)
	event(openaiResponseDone)

	// Item B starts at position 100 ms; the model's VAD hears the caller
	// when 30 ms of it were heard: no cancel (the model cancels its own
	// response), a truncation at 30.
	event(openaiResponseCreated)
	speak(t, b, "item_B", 3, false)
	if in := decodeBot(t, b, transport.Text, []byte(openaiSpeechStarted)); in.Kind != transport.KindClear {
		t.Fatalf("speech_started decoded as %v", in.Kind)
	}
	if c, tr := interrupted(t, b, 130, true); c || tr == nil || tr.ItemID != "item_B" || tr.AudioEndMs != 30 {
		t.Errorf("bot's barge-in at 130 ms: cancel %v, truncate %+v; want item_B at 30 and no cancel", c, tr)
	}
	event(openaiResponseDone)

	// Item C at 160 ms, 40 ms long, still under way: a caller who heard
	// past its end (the model is slower than real time) truncates it at
	// its length, never past; one who heard none of it at 0.
	event(openaiResponseCreated)
	speak(t, b, "item_C", 2, false)
	if c, tr := interrupted(t, b, 900, false); !c || tr == nil || tr.AudioEndMs != 40 {
		t.Errorf("barge-in past the end of item C: cancel %v, truncate %+v; want item_C at 40", c, tr)
	}
	event(openaiResponseDone)
	event(openaiResponseCreated)
	speak(t, b, "item_D", 2, false) // at 200 ms
	if _, tr := interrupted(t, b, 120, true); tr == nil || tr.ItemID != "item_D" || tr.AudioEndMs != 0 {
		t.Errorf("barge-in before item D was heard: truncate %+v, want item_D at 0", tr)
	}
	event(openaiResponseDone)

	// Item E at 240 ms, done and heard to its end: nothing to say.
	event(openaiResponseCreated)
	speak(t, b, "item_E", 2, false)
	event(openaiResponseDone)
	if c, tr := interrupted(t, b, 280, false); c || tr != nil {
		t.Errorf("barge-in after item E was heard whole: cancel %v, truncate %+v; want nothing", c, tr)
	}
	// Heard only in part, though done: the rest is cut from the
	// conversation.
	event(openaiResponseCreated)
	speak(t, b, "item_F", 5, false) // at 280 ms
	event(openaiResponseDone)
	if c, tr := interrupted(t, b, 300, false); c || tr == nil || tr.ItemID != "item_F" || tr.AudioEndMs != 20 {
		t.Errorf("barge-in in item F after its response: cancel %v, truncate %+v; want item_F at 20, no cancel", c, tr)
	}
}

// Decode and Interrupted run on the call's two goroutines at once; the
// race detector (make test runs it) checks what they share.
func TestOpenAIDecodeAndInterruptConcurrently(t *testing.T) {
	b := newBot(t, "openai-realtime", codec.Telephony, nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		var in transport.Inbound
		for i := range 200 {
			msgs := []string{openaiResponseCreated, openaiDeltaMsg("response.output_audio.delta", fmt.Sprintf("item_%d", i/10), tone(0, 160)), openaiResponseDone}
			for _, m := range msgs {
				if err := b.Decode(transport.Text, []byte(m), &in); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	send := func(transport.MessageType, []byte) error { return nil }
	for i := range 200 {
		b.Audio(tone(0, 160))
		if err := b.Interrupted(int64(i*20), i%2 == 0, send); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// Every message the dialect sends is one JSON object of a client event
// type the schema lists.
func TestOpenAIRendersValidJSON(t *testing.T) {
	b := newBot(t, "openai-realtime", codec.Telephony, map[string]string{"instructions": "\x01\xff"})
	msgs := opened(t, b)
	typ, msg := b.Audio(tone(0, 8))
	msgs = append(msgs, sent{typ, string(msg)})
	for _, m := range msgs {
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(m.msg), &v); err != nil || (v.Type != "session.update" && v.Type != "input_audio_buffer.append") {
			t.Errorf("%s: type %q, %v", m.msg, v.Type, err)
		}
	}
}
