package admin_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestCalls lists a live call with its plugins' costs, finds it by id,
// counts it by outcome once it ended, and GET /pipelines keeps its stage's
// cost over the route's calls.
func TestCalls(t *testing.T) {
	h := startHost(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+h.url[len("http"):]+"/ws?call_id=console-test-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	// 128 frames: the default sampling times two of them.
	for range 128 {
		if err := c.Write(ctx, websocket.MessageBinary, make([]byte, 160)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	status, body := h.admin("GET", "/calls", token, nil)
	calls, _ := body["calls"].([]any)
	if status != http.StatusOK || len(calls) != 1 {
		t.Fatalf("GET /calls: %d %v", status, body)
	}
	status, one := h.admin("GET", "/calls/console-test-1", token, nil)
	inbound, _ := one["inbound"].([]any)
	if status != http.StatusOK || one["route"] != "p" || one["frames"] != float64(128) || len(inbound) != 1 {
		t.Fatalf("GET /calls/console-test-1: %d %v", status, one)
	}
	if st := inbound[0].(map[string]any); st["samples"] != float64(2) || st["mean_ns"].(float64) <= 0 {
		t.Errorf("the stage's cost: %v", st)
	}
	if status, body := h.admin("GET", "/calls/raw-9", token, nil); status != http.StatusNotFound {
		t.Errorf("GET /calls/raw-9: %d %v", status, body)
	}
	if status, _ := h.admin("GET", "/calls", "", nil); status != http.StatusUnauthorized {
		t.Errorf("GET /calls without the token: %d", status)
	}
	c.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body = h.admin("GET", "/calls", token, nil)
		ended, _ := body["ended"].(map[string]any)
		if len(body["calls"].([]any)) == 0 && ended["completed"] == float64(1) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the call ended, GET /calls: %v", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, body = h.admin("GET", "/pipelines", token, nil)
	pipelines, _ := body["pipelines"].([]any)
	if len(pipelines) != 1 {
		t.Fatalf("GET /pipelines: %v", body)
	}
	stages, _ := pipelines[0].(map[string]any)["stages"].([]any)
	cost, _ := stages[0].(map[string]any)["cost"].(map[string]any)
	if cost["frames"] != float64(2) || cost["mean_ns"].(float64) <= 0 || cost["p50_ns"].(float64) <= 0 || cost["p99_ns"].(float64) < cost["p50_ns"].(float64) {
		t.Errorf("GET /pipelines, the stage's cost after its call ended: %v", stages[0])
	}
}
