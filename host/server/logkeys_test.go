package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/server"
)

// lockedBuffer collects a logger's lines from the calls' goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// topKeys returns the keys of a JSON object in order, repeats included:
// what a map would hide.
func topKeys(line string) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// TestJSONLogCarriesEachKeyOnce is issue 26's finding 7: a Twilio call's
// JSON log lines carried "call" twice, the host's id and then the
// caller's callSid, and a parser keeping the last key logged the caller's
// value alone. Each key now appears once: the host's id as call, the
// caller's as caller_call.
func TestJSONLogCarriesEachKeyOnce(t *testing.T) {
	logs := &lockedBuffer{}
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	c := dial(t, h.url+"/twilio")
	ctx := context.Background()
	for _, msg := range [][]byte{
		[]byte(`{"event":"connected","protocol":"Call","version":"1.0.0"}`),
		twilioMsg("start", 1, `"start":{"accountSid":"AC1","streamSid":"MZ00000000000000000000000000000001","callSid":"CAcaller","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{}}`),
		twilioMsg("stop", 2, `"stop":{"accountSid":"AC1","callSid":"CAcaller"}`),
	} {
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after stop: %v", err)
	}
	// The call's last line is written as it ends, which may be after the
	// close reached the client.
	waitFor(t, func() bool { return strings.Contains(logs.String(), "CAcaller") && h.ActiveCalls() == 0 })
	seen := false
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		keys, err := topKeys(line)
		if err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		count := map[string]int{}
		for _, k := range keys {
			if count[k]++; count[k] == 2 {
				t.Errorf("key %q twice: %s", k, line)
			}
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		if v["caller_call"] == "CAcaller" {
			seen = true
			if id, _ := v["call"].(string); !strings.HasPrefix(id, "twilio-") {
				t.Errorf("call = %q, want the host's own id: %s", v["call"], line)
			}
		}
	}
	if !seen {
		t.Fatalf("no line carries caller_call=CAcaller:\n%s", logs.String())
	}
}
