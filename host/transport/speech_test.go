package transport_test

import (
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// What the speech providers' dialects share, each in its provider's
// messages: the set-up's acknowledgement is KindReady, transcripts and
// tool calls are events of one shape whichever provider said them, and a
// message of a type the provider's schema does not have is Unknown.

// speechEvents is an Inbound of KindIgnore carrying events, each a name
// and its data.
func speechEvents(nameData ...string) transport.Inbound {
	in := transport.Inbound{}
	for i := 0; i < len(nameData); i += 2 {
		in.Events = append(in.Events, transport.BotEvent{Name: nameData[i], Data: []byte(nameData[i+1])})
	}
	return in
}

const (
	callerSaid = `{"text":"Where is my order?","final":true}`
	botSaid    = `{"text":"Let me look it up.","final":true}`
	toolCalled = `{"calls":[{"id":"call_1","name":"lookup_order","arguments":{"order":"A-1"}}]}`
)

func TestSpeechDialectsReadyEventsAndUnknown(t *testing.T) {
	unknown := transport.Inbound{Unknown: true}
	ready := transport.Inbound{Kind: transport.KindReady}
	tests := []struct {
		dialect string
		f       codec.Format
		opts    map[string]string
		steps   []decodeStep
	}{
		{"gemini-live", l16At24k, geminiOpts, []decodeStep{
			{transport.Binary, `{"setupComplete":{}}`, ready},
			{transport.Binary, `{"serverContent":{"inputTranscription":{"text":"Where is my order?","finished":true}}}`, speechEvents(transport.BotEventCallerTranscript, callerSaid)},
			{transport.Binary, `{"serverContent":{"outputTranscription":{"text":"Let me"}}}`, speechEvents(transport.BotEventBotTranscript, `{"text":"Let me","final":false}`)},
			{transport.Binary, `{"toolCall":{"functionCalls":[{"id":"call_1","name":"lookup_order","args":{"order":"A-1"}}]}}`, speechEvents(transport.BotEventToolCall, toolCalled)},
			{transport.Binary, `{"toolCall":{"functionCalls":[{"id":"c2","name":"hang_up"}]}}`, speechEvents(transport.BotEventToolCall, `{"calls":[{"id":"c2","name":"hang_up","arguments":{}}]}`)},
			{transport.Binary, `{"serverContent":{"interrupted":true,"inputTranscription":{"text":"Stop","finished":true}}}`,
				transport.Inbound{Kind: transport.KindClear, Events: speechEvents(transport.BotEventCallerTranscript, `{"text":"Stop","final":true}`).Events}},
			{transport.Binary, `{"serverContent":{"turnComplete":true}}`, transport.Inbound{}},
			{transport.Binary, `{"voiceActivity":{"voiceActivityType":"ACTIVITY_START"}}`, transport.Inbound{}},
			{transport.Binary, `{"somethingNew":{"x":[1]}}`, unknown},
		}},
		{"deepgram-agent", codec.Telephony, deepgramOpts, []decodeStep{
			{transport.Text, `{"type":"Welcome","request_id":"r1"}`, transport.Inbound{}},
			{transport.Text, `{"type":"SettingsApplied"}`, ready},
			{transport.Text, `{"type":"ConversationText","role":"user","content":"Where is my order?"}`, speechEvents(transport.BotEventCallerTranscript, callerSaid)},
			{transport.Text, `{"type":"ConversationText","role":"assistant","content":"Let me look it up."}`, speechEvents(transport.BotEventBotTranscript, botSaid)},
			{transport.Text, `{"type":"FunctionCallRequest","functions":[{"id":"call_1","name":"lookup_order","arguments":"{\"order\":\"A-1\"}","client_side":true}]}`,
				speechEvents(transport.BotEventToolCall, toolCalled)},
			{transport.Text, `{"type":"FunctionCallRequest","functions":[{"id":"c2","name":"f","arguments":"not json","client_side":true}]}`,
				speechEvents(transport.BotEventToolCall, `{"calls":[{"id":"c2","name":"f","arguments":"not json"}]}`)},
			{transport.Text, `{"type":"AgentThinking","content":"hmm"}`, transport.Inbound{}},
			{transport.Text, `{"type":"History","role":"user","content":"earlier"}`, transport.Inbound{}},
			{transport.Text, `{"type":"SomethingNew"}`, unknown},
		}},
		{"elevenlabs-agent", codec.Telephony, nil, []decodeStep{
			{transport.Text, `{"type":"conversation_initiation_metadata","conversation_initiation_metadata_event":{"conversation_id":"c1","agent_output_audio_format":"ulaw_8000","user_input_audio_format":"ulaw_8000"}}`, ready},
			{transport.Text, `{"type":"user_transcript","user_transcription_event":{"user_transcript":"Where is my order?","event_id":2}}`, speechEvents(transport.BotEventCallerTranscript, callerSaid)},
			{transport.Text, `{"type":"agent_response","agent_response_event":{"agent_response":"Let me look it up.","event_id":3}}`, speechEvents(transport.BotEventBotTranscript, botSaid)},
			{transport.Text, `{"type":"client_tool_call","client_tool_call":{"tool_name":"lookup_order","tool_call_id":"call_1","parameters":{"order":"A-1"},"event_id":4}}`,
				speechEvents(transport.BotEventToolCall, toolCalled)},
			{transport.Text, `{"type":"vad_score","vad_score_event":{"vad_score":0.9}}`, transport.Inbound{}},
			{transport.Text, `{"type":"something_new"}`, unknown},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.dialect, func(t *testing.T) { decodeSteps(t, newBot(t, tt.dialect, tt.f, tt.opts), tt.steps) })
	}
}

// A bot's text is bounded: a transcript is cut, marked so, at a character
// boundary; one message carries at most three events.
func TestSpeechDialectEventsAreBounded(t *testing.T) {
	long := strings.Repeat("é", 1500) // 3,000 bytes
	in := decodeBot(t, newBot(t, "deepgram-agent", codec.Telephony, deepgramOpts), transport.Text,
		[]byte(`{"type":"ConversationText","role":"user","content":"`+long+`"}`))
	if want := `{"text":"` + strings.Repeat("é", 1000) + `...","final":true}`; len(in.Events) != 1 || string(in.Events[0].Data) != want {
		t.Errorf("a long transcript became %d events, the first of %d bytes", len(in.Events), len(in.Events[0].Data))
	}
	in = decodeBot(t, newBot(t, "gemini-live", l16At24k, geminiOpts), transport.Binary,
		[]byte(`{"serverContent":{"inputTranscription":{"text":"a"},"outputTranscription":{"text":"b"}},"toolCall":{"functionCalls":[{"id":"1","name":"f"}]}}`))
	if len(in.Events) != 3 {
		t.Errorf("%d events from a message with both transcriptions and a tool call", len(in.Events))
	}
}

// Gemini is told of a barge-in the host detected with an empty
// clientContent, which interrupts the model's generation; the others have
// no message for one (their doc comments say why).
func TestSpeechDialectsHostBargeIn(t *testing.T) {
	gemini := newBot(t, "gemini-live", l16At24k, geminiOpts)
	send, got := collect()
	if err := gemini.Interrupted(400, false, send); err != nil || len(*got) != 1 || (*got)[0].msg != `{"clientContent":{"turnComplete":false}}` {
		t.Errorf("gemini's host barge-in sent %v (%v)", *got, err)
	}
	send, got = collect()
	if err := gemini.Interrupted(400, true, send); err != nil || len(*got) != 0 {
		t.Errorf("gemini's own interruption was answered with %v (%v)", *got, err)
	}
	wantNoBargeInMessage(t, newBot(t, "deepgram-agent", codec.Telephony, deepgramOpts), "Deepgram's Voice Agent API")
	wantNoBargeInMessage(t, newBot(t, "elevenlabs-agent", codec.Telephony, nil), "ElevenLabs' conversation socket")
}

// The speech providers acknowledge the set-up; the host waits for their
// message, which the acknowledger names.
func TestSpeechDialectsAcknowledge(t *testing.T) {
	for dialect, want := range map[string]string{"gemini-live": "setupComplete", "deepgram-agent": "SettingsApplied",
		"elevenlabs-agent": "conversation_initiation_metadata"} {
		d, _ := transport.LookupDialect(dialect)
		if ack, ok := d.(transport.SetupAcknowledger); !ok || ack.Acknowledgement() != want {
			t.Errorf("%s: waits for %v, want %s", dialect, ack, want)
		}
	}
	for _, dialect := range []string{"twilio", "raw", "openai-realtime"} {
		d, _ := transport.LookupDialect(dialect)
		if _, ok := d.(transport.SetupAcknowledger); ok {
			t.Errorf("%s waits for an acknowledgement", dialect)
		}
	}
}

// ElevenLabs' signed URL: get-signed-url beside the conversation socket,
// its answer read, its refusal in ElevenLabs' words.
func TestElevenLabsSignedURL(t *testing.T) {
	d, _ := transport.LookupDialect("elevenlabs-agent")
	signer := d.(transport.URLSigner)
	const dial = "wss://api.elevenlabs.io/v1/convai/conversation?agent_id=agent_1"
	if got, err := signer.SignURL(dial, nil); got != "" || err != nil {
		t.Errorf("without signed_url: %q, %v", got, err)
	}
	yes := map[string]string{"signed_url": "true"}
	if got, err := signer.SignURL(dial, yes); got != "https://api.elevenlabs.io/v1/convai/conversation/get-signed-url?agent_id=agent_1" || err != nil {
		t.Errorf("signing endpoint %q, %v", got, err)
	}
	if _, err := signer.SignURL("wss://api.elevenlabs.io/v1/convai/conversation", yes); err == nil ||
		err.Error() != "the elevenlabs-agent dialect's signed_url needs the agent in the upstream url (?agent_id=...)" {
		t.Errorf("without an agent: %v", err)
	}
	const signed = "wss://api.elevenlabs.io/v1/convai/conversation?agent_id=agent_1&conversation_signature=s1"
	for _, tt := range []struct {
		status     int
		body, want string
	}{
		{200, `{"signed_url":"` + signed + `"}`, ""},
		{401, `{"detail":{"status":"invalid_api_key","message":"Invalid API key"}}`, "get-signed-url answered HTTP 401: invalid_api_key: Invalid API key"},
		{502, `<html>bad gateway</html>`, "get-signed-url answered HTTP 502"},
		{200, `{}`, "get-signed-url answered without a signed_url"},
		{200, `{"signed_url":"https://elsewhere/"}`, "get-signed-url answered with a signed_url that is not a ws:// or wss:// url"},
	} {
		got, err := signer.SignedURL(tt.status, []byte(tt.body))
		switch {
		case tt.want == "" && (err != nil || got != signed):
			t.Errorf("%s: %q, %v", tt.body, got, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%s: %v, want %s", tt.body, err, tt.want)
		}
	}
}
