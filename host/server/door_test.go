package server_test

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestSurgeIsRefusedAtTheDoor serves the calls through Serve's listener,
// with TestAdmissionByPredictedCost's prices: two calls fit, a third does
// not. The third is answered by the door (on Linux, where the listener
// hands over a connection with its request: voxhost_door_refusals_total)
// as the handler would answer it — 503, Retry-After 2, the prediction,
// the connection closed — under the same metrics; the door lets other
// paths through meanwhile, and takes a call again once one has ended: the
// calls it let through do not stay counted against the next.
func TestSurgeIsRefusedAtTheDoor(t *testing.T) {
	h := pricedHost(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go h.Serve(context.Background(), ln)
	t.Cleanup(func() { ln.Close() })
	url := "ws://" + ln.Addr().String() + "/ws"
	first, second := admitTwo(t, url)
	defer first.CloseNow()
	defer second.CloseNow()

	door := counter(t, h, "voxhost_door_refusals_total")
	shed := counterOrZero(t, h, `voxhost_calls_shed_total{reason="predicted_cpu"}`)
	rejected := counterOrZero(t, h, `voxhost_rejected_connections_total{reason="predicted_cpu"}`)
	status, retry, body := refusal(t, url)
	if status != http.StatusServiceUnavailable || retry != "2" || !strings.Contains(body, "overloaded: the calls admitted are predicted to use ") {
		t.Fatalf("third call: HTTP %d, Retry-After %q, %q; want 503, 2 and the prediction", status, retry, body)
	}
	if d := counter(t, h, "voxhost_door_refusals_total") - door; runtime.GOOS == "linux" && d != 1 {
		t.Errorf("door refusals counted %v, want 1", d)
	}
	if d := counter(t, h, `voxhost_calls_shed_total{reason="predicted_cpu"}`) - shed; d != 1 {
		t.Errorf("predicted_cpu shed counted %v, want 1", d)
	}
	if d := counter(t, h, `voxhost_rejected_connections_total{reason="predicted_cpu"}`) - rejected; d != 1 {
		t.Errorf("predicted_cpu refusals counted %v, want 1", d)
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz while calls are refused: %v %v, want 200", resp, err)
	}
	resp.Body.Close()

	first.Close(websocket.StatusNormalClosure, "")
	waitFor(t, func() bool { return h.ActiveCalls() == 1 })
	third := dial(t, url)
	defer third.CloseNow()
	echoes(t, third, 3)
}
