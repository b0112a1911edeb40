package botsim_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/internal/botsim"
)

// The simulator answers setup with setupComplete and echoes 16 kHz audio
// at the API's 24 kHz, a part of a modelTurn.
func TestGeminiSetupThenEcho(t *testing.T) {
	sim, url := botsim.Start(t, botsim.Config{})
	conn := dial(t, url+"/gemini", nil)
	send(t, conn, `{"setup":{"model":"models/gemini-live-2.5-flash","generationConfig":{"responseModalities":["AUDIO"]}}}`)
	if m := readJSON(t, conn, websocket.MessageBinary); m["setupComplete"] == nil {
		t.Fatalf("first answer %v, want setupComplete", m)
	}
	pcm := make([]byte, 640) // 20 ms at 16 kHz
	send(t, conn, `{"realtimeInput":{"audio":{"mimeType":"audio/pcm;rate=16000","data":"`+base64.StdEncoding.EncodeToString(pcm)+`"}}}`)
	m := readJSON(t, conn, websocket.MessageBinary)
	parts := m["serverContent"].(map[string]any)["modelTurn"].(map[string]any)["parts"].([]any)
	blob := parts[0].(map[string]any)["inlineData"].(map[string]any)
	audio, _ := base64.StdEncoding.DecodeString(blob["data"].(string))
	if blob["mimeType"] != "audio/pcm;rate=24000" || len(audio) != 960 {
		t.Errorf("echo %v with %d bytes, want audio/pcm;rate=24000 with 960", blob["mimeType"], len(audio))
	}
	rec := waitCall(t, sim, func(c botsim.Call) bool { return c.AudioIn == 640 })
	if rec.InputFormat != (codec.Format{Encoding: codec.L16, Rate: 16000}) || len(rec.Sessions) != 1 {
		t.Errorf("recorded input %v, %d setups", rec.InputFormat, len(rec.Sessions))
	}
}

// What the service refuses it refuses by closing the socket with the
// reason: audio before setup, a member the schema does not have, a
// setup without a model.
func TestGeminiRefusesByClosing(t *testing.T) {
	for _, c := range []struct{ msg, reason string }{
		{`{"realtimeInput":{"audio":{"mimeType":"audio/pcm;rate=16000","data":"AAAA"}}}`, "setup must be the first message"},
		{`{"setup":{"model":"models/m","voice":"Puck"}}`, `unknown field \"voice\"`},
		{`{"setup":{"model":"gemini-live-2.5-flash"}}`, `is not a model name`},
	} {
		_, url := botsim.Start(t, botsim.Config{})
		conn := dial(t, url+"/gemini", nil)
		send(t, conn, c.msg)
		_, _, err := conn.Read(ctx(t))
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: %v, want a close with %q", c.msg, err, c.reason)
		}
	}
}
