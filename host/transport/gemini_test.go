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

// The shapes below are the Live API's messages as @google/genai 3.3.0's
// genai.d.ts declares them (LiveClientMessage, LiveServerMessage):
//
//   - LiveClientSetup: model ("The fully qualified name of the publisher
//     model"), generationConfig {responseModalities: Modality[],
//     speechConfig {voiceConfig {prebuiltVoiceConfig {voiceName}},
//     languageCode}}, systemInstruction: Content {parts: [{text}]},
//     inputAudioTranscription, outputAudioTranscription:
//     AudioTranscriptionConfig.
//   - LiveClientRealtimeInput: audio: Blob {data: base64, mimeType}.
//   - LiveServerContent: modelTurn: Content {parts: [{inlineData: Blob}]},
//     turnComplete, interrupted ("If true, indicates that a client message
//     has interrupted current model generation"), inputTranscription,
//     outputTranscription: Transcription {text, finished}.
//   - LiveServerGoAway: timeLeft ("The remaining time before the
//     connection will be terminated as ABORTED", a Duration string).

var geminiOpts = map[string]string{"model": "gemini-2.5-flash-native-audio-preview-09-2025"}

// geminiAudioMsg is a serverContent with the parts' audio.
func geminiAudioMsg(parts ...[]byte) string {
	var p []map[string]any
	for _, a := range parts {
		p = append(p, map[string]any{"inlineData": map[string]any{"mimeType": "audio/pcm;rate=24000", "data": base64.StdEncoding.EncodeToString(a)}})
	}
	b, _ := json.Marshal(map[string]any{"serverContent": map[string]any{"modelTurn": map[string]any{"role": "model", "parts": p}}})
	return string(b)
}

func TestGeminiSetup(t *testing.T) {
	tests := []struct {
		name string
		opts map[string]string
		want string
	}{
		{"model only", geminiOpts,
			`{"setup":{"model":"models/gemini-2.5-flash-native-audio-preview-09-2025","generationConfig":{"responseModalities":["AUDIO"]}}}`},
		{"everything", map[string]string{"model": "models/gemini-live-2.5-flash", "voice": "Puck", "language": "de-DE",
			"instructions": "Sei \"kurz\".", "transcripts": "true"},
			`{"setup":{"model":"models/gemini-live-2.5-flash","generationConfig":{"responseModalities":["AUDIO"],"speechConfig":{"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Puck"}},"languageCode":"de-DE"}},"systemInstruction":{"parts":[{"text":"Sei \"kurz\"."}]},"inputAudioTranscription":{},"outputAudioTranscription":{}}}`},
		{"language only", map[string]string{"model": "m", "language": "en-US"},
			`{"setup":{"model":"models/m","generationConfig":{"responseModalities":["AUDIO"],"speechConfig":{"languageCode":"en-US"}}}}`},
	}
	for _, tt := range tests {
		got := opened(t, newBot(t, "gemini-live", l16At24k, tt.opts))
		if len(got) != 1 || got[0].typ != transport.Text || got[0].msg != tt.want {
			t.Errorf("%s: %v\nwant %s", tt.name, got, tt.want)
		}
		if !json.Valid([]byte(got[0].msg)) {
			t.Errorf("%s: not JSON", tt.name)
		}
	}
}

func TestGeminiOptionsRefused(t *testing.T) {
	d, _ := transport.LookupDialect("gemini-live")
	tests := []struct {
		opts map[string]string
		want string
	}{
		{nil, "the gemini-live dialect needs options.model, the Live model to run (e.g. gemini-2.5-flash-native-audio-preview-09-2025)"},
		{map[string]string{"model": "m", "vocie": "Puck"}, `the gemini-live dialect has no option "vocie" (it takes instructions, language, model, transcripts and voice)`},
		{map[string]string{"model": "m", "transcripts": "yes"}, `the gemini-live dialect's transcripts is true or false, not "yes"`},
	}
	for _, tt := range tests {
		if err := transport.CheckOptions(d, tt.opts); err == nil || err.Error() != tt.want {
			t.Errorf("%v: %v\nwant %s", tt.opts, err, tt.want)
		}
	}
	for _, f := range []codec.Format{codec.Telephony, {Encoding: codec.L16, Rate: 16000}} {
		want := "the gemini-live dialect carries L16 at 24000 Hz (the Live API's output rate; it resamples what it is sent to its 16 kHz), not " + f.String()
		if err := d.CheckFormat(f); err == nil || err.Error() != want {
			t.Errorf("%v: %v", f, err)
		}
	}
}

func TestGeminiAudioBothWays(t *testing.T) {
	b := newBot(t, "gemini-live", l16At24k, geminiOpts)
	pcm := pcm24k(480)
	typ, msg := b.Audio(pcm)
	var m struct {
		RealtimeInput struct {
			Audio struct{ MimeType, Data string }
		}
	}
	if err := json.Unmarshal(msg, &m); err != nil || typ != transport.Text {
		t.Fatal(typ, err)
	}
	if m.RealtimeInput.Audio.MimeType != "audio/pcm;rate=24000" || m.RealtimeInput.Audio.Data != base64.StdEncoding.EncodeToString(pcm) {
		t.Errorf("realtimeInput %+v", m)
	}

	// Two parts in one message decode together, in text or binary.
	one, two := pcm24k(240), pcm24k(100)[2:]
	for _, mt := range []transport.MessageType{transport.Text, transport.Binary} {
		var in transport.Inbound
		if err := b.Decode(mt, []byte(geminiAudioMsg(one, two)), &in); err != nil || in.Kind != transport.KindAudio {
			t.Fatal(err, in.Kind)
		}
		if !bytes.Equal(in.Audio, append(append([]byte{}, one...), two...)) {
			t.Errorf("%v: audio of %d bytes, want the parts' %d", mt, len(in.Audio), len(one)+len(two))
		}
	}
}

func TestGeminiServerMessages(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		kind transport.Kind
		text string
	}{
		{"setupComplete", `{"setupComplete":{}}`, transport.KindReady, ""},
		{"interrupted", `{"serverContent":{"interrupted":true}}`, transport.KindClear, ""},
		{"not interrupted", `{"serverContent":{"interrupted":false,"turnComplete":true}}`, transport.KindIgnore, ""},
		{"transcription", `{"serverContent":{"outputTranscription":{"text":"Hallo","finished":false}}}`, transport.KindIgnore, ""},
		{"toolCall", `{"toolCall":{"functionCalls":[{"id":"f1","name":"lookup","args":{"q":1}}]}}`, transport.KindIgnore, ""},
		{"usageMetadata", `{"usageMetadata":{"promptTokenCount":10,"totalTokenCount":12}}`, transport.KindIgnore, ""},
		{"goAway", `{"goAway":{"timeLeft":"10s"}}`, transport.KindError, "goAway: the service closes the session in 10s"},
		{"goAway without time", `{"goAway":{}}`, transport.KindError, "goAway: the service closes the session soon"},
		{"unknown member", `{"somethingNew":{"x":[1,2,{"y":null}]}}`, transport.KindIgnore, ""},
		{"text part", `{"serverContent":{"modelTurn":{"parts":[{"text":"hi"}]}}}`, transport.KindIgnore, ""},
	}
	b := newBot(t, "gemini-live", l16At24k, geminiOpts)
	for _, tt := range tests {
		var in transport.Inbound
		if err := b.Decode(transport.Binary, []byte(tt.msg), &in); err != nil || in.Kind != tt.kind || in.Text != tt.text {
			t.Errorf("%s: %v, kind %v text %q; want kind %v text %q", tt.name, err, in.Kind, in.Text, tt.kind, tt.text)
		}
	}
}

func TestGeminiMalformed(t *testing.T) {
	b := newBot(t, "gemini-live", l16At24k, geminiOpts)
	tests := []struct{ msg, want string }{
		{`{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"data":"!!!!"}}]}}}`, "gemini-live: bad base64 in inlineData.data at byte 0"},
		{`{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"data":"AA=="}}]}}}`, "gemini-live: audio of 1 bytes is not a whole number of 2-byte l16 samples"},
		{`{"serverContent":{"modelTurn":{"parts":[1 2]}}}`, "gemini-live: invalid JSON at byte 42: expected ',' or ']' after an array element"},
		{`[]`, "gemini-live: message is JSON but not an object"},
		{fmt.Sprintf(`{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"data":%q}}]}}}`, base64.StdEncoding.EncodeToString(make([]byte, maxAudio+2))), "gemini-live: audio frame of 1602 bytes exceeds the limit of 1600"},
	}
	for _, tt := range tests {
		var in transport.Inbound
		err := b.Decode(transport.Text, []byte(tt.msg), &in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%.60s: %v, want %s", tt.msg, err, tt.want)
		}
	}
}
