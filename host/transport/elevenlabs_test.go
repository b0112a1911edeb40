package transport_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// The shapes below are the agent's events as @elevenlabs/types 0.23.0's
// AsyncAPI contracts declare them (generated/types/asyncapi-types.ts):
//
//   - ConversationInitiationClientToOrchestratorEvent: type
//     "conversation_initiation_client_data", conversation_config_override
//     {agent {first_message, language, prompt {prompt, llm}}, tts
//     {voice_id}}, dynamic_variables.
//   - UserAudio: user_audio_chunk, base64.
//   - AudioClientEvent: type "audio", audio_event {audio_base_64, event_id}.
//   - Interruption: type "interruption", interruption_event {event_id}.
//   - Ping: type "ping", ping_event {event_id, ping_ms}; PongClientToOrchestratorEvent:
//     type "pong", event_id.
//   - ErrorClientEvent: type "error", error_event {code (1000, 1002, 1008
//     or 1011), message, error_type}.
//   - ConversationInitiationMetadata: conversation_initiation_metadata_event
//     {conversation_id, agent_output_audio_format, user_input_audio_format}:
//     pcm_8000 ... pcm_48000 or ulaw_8000.

func elevenAudioMsg(id int, audio []byte) string {
	return fmt.Sprintf(`{"type":"audio","audio_event":{"audio_base_64":%q,"event_id":%d}}`, base64.StdEncoding.EncodeToString(audio), id)
}

func TestElevenLabsInitiation(t *testing.T) {
	tests := []struct {
		opts map[string]string
		want string
	}{
		{nil, `{"type":"conversation_initiation_client_data"}`},
		{map[string]string{"first_message": "Hi, Acme here.", "prompt": "Be \"brief\".", "llm": "gpt-4o-mini", "language": "de", "voice_id": "21m00Tcm4TlvDq8ikWAM",
			"dynamic.customer": "Ada", "dynamic.account": "42"},
			`{"type":"conversation_initiation_client_data","conversation_config_override":{"agent":{"first_message":"Hi, Acme here.","language":"de","prompt":{"prompt":"Be \"brief\".","llm":"gpt-4o-mini"}},"tts":{"voice_id":"21m00Tcm4TlvDq8ikWAM"}},"dynamic_variables":{"account":"42","customer":"Ada"}}`},
		{map[string]string{"voice_id": "v"}, `{"type":"conversation_initiation_client_data","conversation_config_override":{"tts":{"voice_id":"v"}}}`},
		{map[string]string{"llm": "m"}, `{"type":"conversation_initiation_client_data","conversation_config_override":{"agent":{"prompt":{"llm":"m"}}}}`},
	}
	for _, tt := range tests {
		got := opened(t, newBot(t, "elevenlabs-agent", codec.Telephony, tt.opts))
		if len(got) != 1 || got[0].msg != tt.want || !json.Valid([]byte(got[0].msg)) {
			t.Errorf("%v: %v\nwant %s", tt.opts, got, tt.want)
		}
	}
	d, _ := transport.LookupDialect("elevenlabs-agent")
	for opts, want := range map[string]string{
		"agent_id": `the elevenlabs-agent dialect has no option "agent_id" (it takes dynamic.NAME, first_message, language, llm, prompt, signed_url and voice_id)`,
		"dynamic.": "the elevenlabs-agent dialect's dynamic variable option needs a name after dynamic.",
	} {
		if err := transport.CheckOptions(d, map[string]string{opts: "x"}); err == nil || err.Error() != want {
			t.Errorf("%s: %v", opts, err)
		}
	}
	if err := d.CheckFormat(codec.Format{Encoding: codec.Alaw, Rate: 8000}); err == nil {
		t.Error("A-law accepted")
	}
}

func TestElevenLabsServerEvents(t *testing.T) {
	b := newBot(t, "elevenlabs-agent", codec.Telephony, nil)
	frame := tone(0, 160)
	var in transport.Inbound
	decode := func(msg string) {
		t.Helper()
		if err := b.Decode(transport.Text, []byte(msg), &in); err != nil {
			t.Fatalf("%.80s: %v", msg, err)
		}
	}
	decode(`{"type":"conversation_initiation_metadata","conversation_initiation_metadata_event":{"conversation_id":"conv_1","agent_output_audio_format":"ulaw_8000","user_input_audio_format":"ulaw_8000"}}`)
	if in.Kind != transport.KindReady {
		t.Fatalf("metadata: %v", in.Kind)
	}
	decode(elevenAudioMsg(3, frame))
	if in.Kind != transport.KindAudio || !bytes.Equal(in.Audio, frame) {
		t.Fatalf("audio: %v", in.Kind)
	}
	decode(`{"type":"interruption","interruption_event":{"event_id":4}}`)
	if in.Kind != transport.KindClear {
		t.Fatalf("interruption: %v", in.Kind)
	}
	decode(elevenAudioMsg(4, frame)) // sent before the agent heard the caller
	if in.Kind != transport.KindIgnore {
		t.Fatalf("audio of the interrupted turn: %v", in.Kind)
	}
	decode(elevenAudioMsg(5, frame))
	if in.Kind != transport.KindAudio {
		t.Fatalf("audio of the next turn: %v", in.Kind)
	}
	decode(`{"type":"ping","ping_event":{"event_id":7,"ping_ms":null}}`)
	if in.Kind != transport.KindIgnore || in.ReplyType != transport.Text || string(in.Reply) != `{"type":"pong","event_id":7}` {
		t.Fatalf("ping: %v %q", in.Kind, in.Reply)
	}
	decode(`{"type":"error","error_event":{"code":1008,"message":"Override for field 'prompt' is not allowed by config.","error_type":"override_error"}}`)
	if in.Kind != transport.KindError || in.Text != "override_error: Override for field 'prompt' is not allowed by config." {
		t.Fatalf("error: %v %q", in.Kind, in.Text)
	}
	for _, msg := range []string{`{"type":"user_transcript","user_transcription_event":{"user_transcript":"hello","event_id":2}}`,
		`{"type":"agent_response","agent_response_event":{"agent_response":"Hi"}}`,
		`{"type":"client_tool_call","client_tool_call":{"tool_name":"x","tool_call_id":"c1","parameters":{}}}`, `{"type":"brand_new"}`} {
		if decode(msg); in.Kind != transport.KindIgnore {
			t.Errorf("%s: %v", msg, in.Kind)
		}
	}
	for msg, want := range map[string]string{
		`{"type":"conversation_initiation_metadata","conversation_initiation_metadata_event":{"agent_output_audio_format":"pcm_16000","user_input_audio_format":"ulaw_8000"}}`: `elevenlabs-agent: the agent's agent output audio format is "pcm_16000", the route's upstream carries ulaw_8000: set the upstream's codec and rate to the agent's, or the agent's formats to ulaw_8000`,
		`{"type":"ping","ping_event":{"event_id":"7"}}`: "elevenlabs-agent: ping without a numeric ping_event.event_id",
		`{"type":"audio","audio_event":{"event_id":9}}`: "elevenlabs-agent: audio event without a string audio_event.audio_base_64",
	} {
		if err := b.Decode(transport.Text, []byte(msg), &in); err == nil || err.Error() != want {
			t.Errorf("%.70s: %v\nwant %s", msg, err, want)
		}
	}
}
