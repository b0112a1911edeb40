package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/server"
)

// TestCallsShowsLiveCallsAndTheirPluginCosts runs a call for 200 frames
// with one frame in 8 timed: Calls must list it with its route and each
// plugin's sampled cost, and /metrics must count the samples per plugin;
// once it ends, it is gone from the list.
func TestCallsShowsLiveCallsAndTheirPluginCosts(t *testing.T) {
	h := newHost(t, map[string]string{"main": "gain db=-6 | passthrough"}, func(o *server.Options) { o.SampleEvery = 8 })
	c := dial(t, h.url+"/ws?call_id=console-1")
	ctx := context.Background()
	frame := ulawSpeech(0.02)
	for range 200 {
		if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
			t.Fatal(err)
		}
		readMessage(t, c)
	}
	calls := h.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d live calls, want 1", len(calls))
	}
	cs := calls[0]
	if cs.ID != "console-1" || cs.Route != "main" || cs.Protocol != "raw" || cs.Format != "8 kHz μ-law" || cs.Frames != 200 || len(cs.Inbound) != 2 {
		t.Fatalf("call summary %+v", cs)
	}
	for _, st := range cs.Inbound {
		if st.Samples != 25 || st.MeanNs <= 0 {
			t.Fatalf("stage %+v: 200 frames timed one in 8 make 25 samples", st)
		}
	}
	if !strings.Contains(metrics(t, h), `voxhost_plugin_frame_seconds_count{direction="inbound",pipeline="main",plugin="gain"} 25`) {
		t.Fatal("/metrics does not count the gain plugin's 25 sampled frames")
	}
	c.Close(websocket.StatusNormalClosure, "")
	waitFor(t, func() bool { return len(h.Calls()) == 0 })
}
