package transport_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// The shapes below are the Voice Agent API's messages as @deepgram/sdk
// 5.13.0's api/resources/agent/resources/v1/types declare them:
//
//   - AgentV1Settings: type "Settings", audio {input {encoding,
//     sample_rate}, output {encoding, sample_rate, container}}, agent
//     {language, listen {provider}, think {provider, prompt}, speak
//     {provider}, greeting}.
//   - AgentV1UserStartedSpeaking: type "UserStartedSpeaking".
//   - AgentV1Error, AgentV1Warning: type, description, code.
//   - AgentV1ConversationText: type, role, content.

var deepgramOpts = map[string]string{"think_model": "gpt-4o-mini"}

func TestDeepgramSettings(t *testing.T) {
	tests := []struct {
		name string
		f    codec.Format
		opts map[string]string
		want string
	}{
		{"μ-law, defaults", codec.Telephony, deepgramOpts,
			`{"type":"Settings","audio":{"input":{"encoding":"mulaw","sample_rate":8000},"output":{"encoding":"mulaw","sample_rate":8000,"container":"none"}},"agent":{"listen":{"provider":{"type":"deepgram","version":"v1"}},"think":{"provider":{"type":"open_ai","model":"gpt-4o-mini"}},"speak":{"provider":{"type":"deepgram","model":"aura-2-thalia-en"}}}}`},
		{"L16 16 kHz, everything", codec.Format{Encoding: codec.L16, Rate: 16000},
			map[string]string{"think_provider": "anthropic", "think_model": "claude-3-5-haiku-latest", "prompt": "Be \"brief\".",
				"listen_model": "nova-3", "speak_provider": "open_ai", "speak_model": "tts-1", "speak_voice": "alloy", "language": "en", "greeting": "Hello!"},
			`{"type":"Settings","audio":{"input":{"encoding":"linear16","sample_rate":16000},"output":{"encoding":"linear16","sample_rate":16000,"container":"none"}},"agent":{"language":"en","listen":{"provider":{"type":"deepgram","version":"v1","model":"nova-3"}},"think":{"provider":{"type":"anthropic","model":"claude-3-5-haiku-latest"},"prompt":"Be \"brief\"."},"speak":{"provider":{"type":"open_ai","model":"tts-1","voice":"alloy"}},"greeting":"Hello!"}}`},
	}
	for _, tt := range tests {
		got := opened(t, newBot(t, "deepgram-agent", tt.f, tt.opts))
		if len(got) != 1 || got[0].typ != transport.Text || got[0].msg != tt.want || !json.Valid([]byte(got[0].msg)) {
			t.Errorf("%s: %v\nwant %s", tt.name, got, tt.want)
		}
	}
}

func TestDeepgramOptionsAndFormatsRefused(t *testing.T) {
	d, _ := transport.LookupDialect("deepgram-agent")
	tests := []struct {
		opts map[string]string
		want string
	}{
		{nil, "the deepgram-agent dialect needs options.think_model, the open_ai model the agent thinks with (e.g. gpt-4o-mini)"},
		{map[string]string{"think_model": "m", "voice": "x"}, `the deepgram-agent dialect has no option "voice" (it takes greeting, language, listen_model, prompt, speak_model, speak_provider, speak_voice, think_model and think_provider)`},
		{map[string]string{"think_model": "m", "think_provider": "aws_bedrock"}, `the deepgram-agent dialect's think_provider is open_ai, anthropic, google or groq, not "aws_bedrock"`},
		{map[string]string{"think_model": "m", "speak_provider": "open_ai"}, "the deepgram-agent dialect's open_ai speak_provider needs speak_model and speak_voice (e.g. tts-1 and alloy)"},
		{map[string]string{"think_model": "m", "speak_voice": "alloy"}, "the deepgram-agent dialect's deepgram speak_provider takes its voice in speak_model (e.g. aura-2-thalia-en), not speak_voice"},
	}
	for _, tt := range tests {
		if err := transport.CheckOptions(d, tt.opts); err == nil || err.Error() != tt.want {
			t.Errorf("%v: %v\nwant %s", tt.opts, err, tt.want)
		}
	}
	for _, f := range []codec.Format{{Encoding: codec.L16, Rate: 24000}, {Encoding: codec.L16, Rate: 8000}} {
		if err := d.CheckFormat(f); err != nil {
			t.Errorf("%v refused: %v", f, err)
		}
	}
	if err := d.CheckFormat(codec.Format{Encoding: codec.Alaw, Rate: 8000}); err == nil {
		t.Error("A-law accepted")
	}
}

func TestDeepgramServerMessages(t *testing.T) {
	b := newBot(t, "deepgram-agent", codec.Telephony, deepgramOpts)
	frame := tone(0, 160)
	var in transport.Inbound
	if err := b.Decode(transport.Binary, frame, &in); err != nil || in.Kind != transport.KindAudio || !bytes.Equal(in.Audio, frame) {
		t.Fatalf("binary audio: %v %v", err, in.Kind)
	}
	if typ, msg := b.Audio(frame); typ != transport.Binary || !bytes.Equal(msg, frame) {
		t.Fatalf("caller audio sent as %v", typ)
	}
	tests := []struct {
		msg  string
		kind transport.Kind
		text string
	}{
		{`{"type":"Welcome","request_id":"fc553ec9-5874-49ca-a47c-b670d525a4b1"}`, transport.KindIgnore, ""},
		{`{"type":"SettingsApplied"}`, transport.KindReady, ""},
		{`{"type":"UserStartedSpeaking"}`, transport.KindClear, ""},
		{`{"type":"ConversationText","role":"user","content":"Hello"}`, transport.KindIgnore, ""},
		{`{"type":"FunctionCallRequest","functions":[{"id":"f1","name":"lookup","arguments":"{}","client_side":true}]}`, transport.KindIgnore, ""},
		{`{"type":"Error","description":"Failed to resolve think provider","code":"UNPARSABLE_SETTINGS"}`, transport.KindError, "Error: Failed to resolve think provider (UNPARSABLE_SETTINGS)"},
		{`{"type":"Warning","description":"Audio is silent"}`, transport.KindError, "Warning: Audio is silent"},
		{`{"type":"Error"}`, transport.KindError, "Error: without a string description"},
		{`{"type":"SomethingNew","x":[1]}`, transport.KindIgnore, ""},
	}
	for _, tt := range tests {
		if err := b.Decode(transport.Text, []byte(tt.msg), &in); err != nil || in.Kind != tt.kind || in.Text != tt.text {
			t.Errorf("%s: %v, kind %v text %q", tt.msg, err, in.Kind, in.Text)
		}
	}
	for msg, want := range map[string]string{
		`{"role":"user"}`: `deepgram-agent: message without a "type" member`,
		`{"type":5}`:      `deepgram-agent: "type" is not a string`,
	} {
		if err := b.Decode(transport.Text, []byte(msg), &in); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", msg, err, want)
		}
	}
	if err := b.Decode(transport.Binary, frame[:0], &in); err == nil {
		t.Error("empty audio accepted")
	}
}
