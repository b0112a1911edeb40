package botsim_test

import (
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/internal/botsim"
)

// The simulator greets with Welcome and refuses audio before Settings
// with Error UNPARSABLE_CLIENT_MESSAGE, then closes, as the API's Error
// ends a session.
func TestDeepgramWelcomesThenRefusesAudioBeforeSettings(t *testing.T) {
	_, url := botsim.Start(t, botsim.Config{})
	conn := dial(t, url+"/deepgram", nil)
	if m := event(t, conn); m["type"] != "Welcome" || m["request_id"] == "" {
		t.Fatalf("first message %v, want Welcome with a request_id", m)
	}
	if err := conn.Write(ctx(t), websocket.MessageBinary, make([]byte, 160)); err != nil {
		t.Fatal(err)
	}
	if m := event(t, conn); m["type"] != "Error" || m["code"] != "UNPARSABLE_CLIENT_MESSAGE" || m["description"] != "audio before Settings" {
		t.Fatalf("answer %v, want Error UNPARSABLE_CLIENT_MESSAGE", m)
	}
	_, _, err := conn.Read(ctx(t))
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation || !strings.Contains(err.Error(), "audio before Settings") {
		t.Errorf("then %v, want the close", err)
	}
}
