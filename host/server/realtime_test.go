package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
)

// TestAdmissionByPredictedCost prices the host's part of every call at a
// known cost (the prior, 0.3 of a core, with no call ever measured: fewer
// run than the model needs) on one slot with an 85% mark. A route's
// plugins are priced as much until its calls are measured, so a second
// call is let in only once the first call's passthrough has been measured
// at next to nothing: then two calls fit, a third is refused at the door —
// 503 with Retry-After over WebSocket, the hang-up frame over AudioSocket
// — and is taken once a call has ended. The CPU reading stays at 20%, so
// only the prediction can refuse.
func TestAdmissionByPredictedCost(t *testing.T) {
	h := pricedHost(t)
	first, second := admitTwo(t, h.url+"/ws")
	defer first.CloseNow()
	defer second.CloseNow()

	status, retry, body := refusal(t, h.url+"/ws")
	if status != http.StatusServiceUnavailable || retry != "2" || !strings.Contains(body, "overloaded: the calls admitted are predicted to use ") {
		t.Fatalf("third call: HTTP %d, Retry-After %q, %q; want 503, 2 and the prediction", status, retry, body)
	}
	if n := counter(t, h, `voxhost_calls_shed_total{reason="predicted_cpu"}`); n < 1 {
		t.Fatalf("predicted_cpu refusals counted: %v", n)
	}

	pbx := dialAudioSocket(t, serveAudioSocket(t, h, "main"))
	if kind, _, err := pbx.next(); err != nil || kind != 0x00 {
		t.Fatalf("AudioSocket call beyond the prediction: frame kind %#x, %v; want the hang-up (0x00)", kind, err)
	}

	first.Close(websocket.StatusNormalClosure, "")
	waitFor(t, func() bool { return h.ActiveCalls() == 1 })
	third := dial(t, h.url+"/ws")
	defer third.CloseNow()
	echoes(t, third, 3)
}

// pricedHost is TestAdmissionByPredictedCost's host: on one slot with an
// 85% mark, a call priced at 0.4 of a core for the host's part and its
// passthrough at what it costs warm (next to nothing): two calls fit, a
// third does not.
func pricedHost(t *testing.T) *testHost {
	return newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) {
		o.CPUHighWater, o.PluginSlots, o.CallCostPrior = 0.85, 1, 0.4
		o.CPUSampler, o.CPUSampleInterval = &fakeCPU{share: 0.2}, 5*time.Millisecond
	})
}

// admitTwo dials two calls to a pricedHost's url, both echoing.
func admitTwo(t *testing.T, url string) (first, second *websocket.Conn) {
	t.Helper()
	first = dial(t, url)
	echoes(t, first, 1)
	second = dial(t, url)
	echoes(t, second, 2)
	return first, second
}

// counterOrZero is counter for a series that may not have been made yet
// (a labelled counter appears at its first count).
func counterOrZero(t *testing.T, h *testHost, series string) float64 {
	t.Helper()
	if !strings.Contains(metrics(t, h), "\n"+series+" ") {
		return 0
	}
	return counter(t, h, series)
}

// counter reads one series from /metrics.
func counter(t *testing.T, h *testHost, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(metrics(t, h), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics", series)
	return 0
}

// TestCallOverQuotaIsDegraded: a call whose plugin spins for milliseconds
// a frame, past a quota of 1% of a core, loses that plugin (the costliest,
// by its sampled time) and goes on; under over_quota: end_call it ends,
// with the quota in its close reason.
func TestCallOverQuotaIsDegraded(t *testing.T) {
	spin := testdataPlugin("spin_frame") + " budget_ms=1000"
	h := newRoutesHost(t, plugin.Options{Logger: quietLogger()}, map[string]routeSpec{
		"main":   {inbound: spin + " | passthrough"},
		"strict": {inbound: spin, overQuota: server.QuotaEndCall},
	}, func(o *server.Options) { o.CallCPUShare = 0.01 })

	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	ctx := context.Background()
	var quotaEvent string
	for i := 0; quotaEvent == "" && i < 10000; i++ {
		if err := c.Write(ctx, websocket.MessageBinary, stamp(1, i)); err != nil {
			t.Fatal(err)
		}
		for {
			typ, msg := readMessage(t, c)
			if typ == websocket.MessageBinary {
				break
			}
			if strings.Contains(string(msg), "CPU quota") {
				quotaEvent = string(msg)
			}
		}
	}
	if !strings.Contains(quotaEvent, `"plugin_error"`) || !strings.Contains(quotaEvent, "spin_frame") {
		t.Fatalf("no plugin_error for spin_frame with the quota: %q", quotaEvent)
	}
	echoes(t, c, 7) // the call goes on without it
	assertMetric(t, h, `voxhost_calls_degraded_total{route="main"} 1`)

	strict := dial(t, h.url+"/ws?pipeline=strict")
	defer strict.CloseNow()
	go func() {
		for i := 0; ; i++ {
			if strict.Write(ctx, websocket.MessageBinary, stamp(2, i)) != nil {
				return
			}
		}
	}()
	code, reason := closeOf(t, strict)
	if code != websocket.StatusPolicyViolation || !strings.Contains(reason, "CPU quota") {
		t.Fatalf("call over its quota under end_call: closed %d %q; want 1008 and the quota", code, reason)
	}
	assertMetric(t, h, `voxhost_calls_shed_total{reason="cpu_quota"} 1`)
}

// TestUrgentCallOvertakesALongFrame: on one slot, a call whose frame runs
// for seconds (a loop stopped only by its 4 s budget) does not hold up
// another call: its plugin's budget ticks give the slot to the healthy
// call's frames, which are due earlier, and all of them are answered
// while the long frame is still running.
func TestUrgentCallOvertakesALongFrame(t *testing.T) {
	h := newHostOn(t, plugin.Options{Logger: quietLogger()}, map[string]string{
		"main": "passthrough",
		"long": pluginFixture("loop_process") + " budget_ms=4000",
	}, func(o *server.Options) { o.PluginSlots = 1 })
	healthy := dial(t, h.url+"/ws")
	defer healthy.CloseNow()
	echoes(t, healthy, 1)

	long := dial(t, h.url+"/ws?pipeline=long")
	defer long.CloseNow()
	ctx := context.Background()
	if err := long.Write(ctx, websocket.MessageBinary, stamp(2, 0)); err != nil {
		t.Fatal(err)
	}
	var longAnswered atomic.Bool
	go func() {
		for {
			if typ, _, err := long.Read(ctx); err != nil || typ == websocket.MessageBinary {
				longAnswered.Store(true)
				return
			}
		}
	}()
	// Its frame has come in (and takes the free slot, or waits behind a
	// healthy frame for it).
	assertMetric(t, h, `voxhost_frames_in_total{protocol="raw"} 2`)
	for i := range 20 {
		echoes(t, healthy, 10+i)
	}
	if longAnswered.Load() {
		t.Fatal("the long frame ended before the healthy call's 20 frames were answered: the test proves nothing")
	}
	// A healthy frame found the slot taken, by the long frame: it got it
	// by the long frame's yield.
	if gauge(t, h, "voxhost_scheduler_wait_seconds_count") == 0 {
		t.Fatal("no healthy frame waited for the slot: the long frame was not running")
	}
}
