package transport_test

import (
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// The fuzz targets of the speech providers' dialects: whatever a provider
// sends, Decode returns a *ProtocolError or a kind it documents, audio
// within the bounds, error texts bounded, and replies the provider's
// schema takes.

// checkSpeechDecode applies the rules every speech dialect's Decode keeps.
func checkSpeechDecode(t *testing.T, b transport.BotSession, typ transport.MessageType, msg []byte, f codec.Format) *transport.Inbound {
	t.Helper()
	var in transport.Inbound
	checkBotDecodeError(t, b.Decode(typ, msg, &in), msg, &in)
	switch in.Kind {
	case transport.KindAudio:
		wantBotAudio(t, in.Audio, f)
	case transport.KindError:
		if len(in.Text) > 303 || !utf8.ValidString(in.Text) {
			t.Fatalf("error text %q of %d bytes", in.Text, len(in.Text))
		}
	case transport.KindClear, transport.KindIgnore, transport.KindReady:
	default:
		t.Fatalf("decoded as %v", in.Kind)
	}
	for _, e := range in.Events {
		if !slices.Contains(transport.BotEventNames, e.Name) || !json.Valid(e.Data) {
			t.Fatalf("event %q with data %.100q", e.Name, e.Data)
		}
	}
	return &in
}

func FuzzGeminiBotDecode(f *testing.F) {
	f.Add(geminiAudioMsg(pcm24k(480), pcm24k(2)))
	f.Add(`{"serverContent":{"interrupted":true}}`)
	f.Add(`{"goAway":{"timeLeft":"5s"}}`)
	f.Add(`{"setupComplete":{},"usageMetadata":{"totalTokenCount":3}}`)
	f.Add(`{"serverContent":{"inputTranscription":{"text":"a","finished":true},"outputTranscription":{"text":"b"}}}`)
	f.Add(`{"toolCall":{"functionCalls":[{"id":"c1","name":"f","args":{"q":[1,{"r":null}]}}]}}`)
	f.Fuzz(func(t *testing.T, msg string) {
		b := newBot(t, "gemini-live", l16At24k, geminiOpts)
		checkSpeechDecode(t, b, transport.Binary, []byte(msg), l16At24k)
	})
}

func FuzzDeepgramBotDecode(f *testing.F) {
	f.Add(`{"type":"UserStartedSpeaking"}`)
	f.Add(`{"type":"Error","description":"d","code":"c"}`)
	f.Add(`{"type":"ConversationText","role":"assistant","content":"hi"}`)
	f.Add(`{"type":"FunctionCallRequest","functions":[{"id":"c1","name":"f","arguments":"{\"q\":1}","client_side":true}]}`)
	f.Fuzz(func(t *testing.T, msg string) {
		b := newBot(t, "deepgram-agent", codec.Telephony, deepgramOpts)
		checkSpeechDecode(t, b, transport.Text, []byte(msg), codec.Telephony)
	})
}

// FuzzElevenLabsBotDecode also checks that a ping's pong is the
// PongClientToOrchestratorEvent the agent takes: type pong and the ping's
// event_id, a whole number.
func FuzzElevenLabsBotDecode(f *testing.F) {
	f.Add(elevenAudioMsg(1, tone(0, 160)))
	f.Add(`{"type":"ping","ping_event":{"event_id":12,"ping_ms":40}}`)
	f.Add(`{"type":"interruption","interruption_event":{"event_id":3}}`)
	f.Add(`{"type":"error","error_event":{"code":1011,"message":"m","error_type":"unknown"}}`)
	f.Add(`{"type":"client_tool_call","client_tool_call":{"tool_name":"f","tool_call_id":"c1","parameters":{"q":1},"event_id":5}}`)
	f.Add(`{"type":"user_transcript","user_transcription_event":{"user_transcript":"hi","event_id":2}}`)
	f.Fuzz(func(t *testing.T, msg string) {
		b := newBot(t, "elevenlabs-agent", codec.Telephony, nil)
		in := checkSpeechDecode(t, b, transport.Text, []byte(msg), codec.Telephony)
		if in.Reply == nil {
			return
		}
		var pong struct {
			Type    string          `json:"type"`
			EventID json.RawMessage `json:"event_id"`
		}
		if err := json.Unmarshal(in.Reply, &pong); err != nil || pong.Type != "pong" || in.ReplyType != transport.Text {
			t.Fatalf("replied %q: %v", in.Reply, err)
		}
		var id float64
		if json.Unmarshal(pong.EventID, &id) != nil {
			t.Fatalf("pong's event_id %s is not a number", pong.EventID)
		}
	})
}
