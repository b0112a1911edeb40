package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// TestHostilePluginsAreContained runs each hostile plugin in a call beside
// a healthy call. The hostile call must keep every frame (the plugin is
// bypassed, the frame it failed on included) and tell the client why; the
// healthy call must not notice.
func TestHostilePluginsAreContained(t *testing.T) {
	cases := []struct {
		plugin string
		// fault is the plugin_error the client must get; "" means the
		// plugin is contained without failing (the host refuses it quietly).
		fault string
	}{
		{"loop_process", "exceeded its CPU budget of 5ms in vox_process at frame 1"},
		{"trap", "trap in vox_process at frame 3: unreachable"},
		{"div_zero", "trap in vox_process at frame 1: integer divide by zero"},
		{"recursion", "vox_process at frame 1"},
		{"overlong_output", "returned 100000 samples"},
		{"grow_bomb", ""},
		{"emit_flood", ""},
		{"table_grow", ""},
		{"stdout_flood", ""},
		{"fill_loop", "exceeded its CPU budget of 5ms in vox_process at frame 1"},
		{"wasi_flood", "exceeded its CPU budget of 5ms in vox_process at frame 1"},
	}
	pipelines := map[string]string{"main": "gain db=-6"}
	for _, tc := range cases {
		pipelines[tc.plugin] = "gain db=-6 | " + pluginFixture(tc.plugin)
		if tc.fault == "" {
			// Plugins contained without a fault make thousands of host
			// calls a frame, which the race detector slows past 5 ms.
			pipelines[tc.plugin] += " budget_ms=200"
		}
	}
	h := newHost(t, pipelines, nil)
	ulaw := ulawSpeech(0.2)
	want := hosttest.OfflineUlaw(t, "gain db=-6", ulaw)
	for _, tc := range cases {
		t.Run(tc.plugin, func(t *testing.T) {
			var wg sync.WaitGroup
			var healthy []byte
			var healthyErr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				healthy, _, healthyErr = stream(h.url+"/ws", ulaw)
			}()
			got, events, err := stream(h.url+"/ws?pipeline="+tc.plugin, ulaw)
			wg.Wait()
			if err != nil || healthyErr != nil {
				t.Fatalf("hostile call: %v; healthy call: %v", err, healthyErr)
			}
			if string(healthy) != string(want) {
				t.Fatal("the healthy call beside it lost or changed frames")
			}
			if string(got) != string(want) {
				t.Fatal("the hostile call lost or changed frames: the bypassed plugin's input must flow on")
			}
			var faults, spam int
			for _, e := range events {
				if !json.Valid([]byte(e)) {
					t.Fatalf("event %q is not JSON", e)
				}
				switch {
				case strings.Contains(e, `"plugin_error"`):
					faults++
					if tc.fault == "" || !strings.Contains(e, tc.fault) {
						t.Fatalf("plugin_error %s, want %q", e, tc.fault)
					}
				case strings.Contains(e, `"spam"`):
					spam++
				}
			}
			if tc.fault != "" && faults != 1 {
				t.Fatalf("%d plugin_error events, want 1: %q", faults, events)
			}
			if frames := len(ulaw) / 160; spam > 32*frames {
				t.Fatalf("%d spam events over %d frames: emits must be capped at 32 per call", spam, frames)
			}
			if tc.plugin == "emit_flood" && spam == 0 {
				t.Fatal("the quota let no event through")
			}
		})
	}
}

// stream sends μ-law frames one at a time over a new raw call and collects
// the audio replies and the text events. It runs beside the test's own
// goroutine, so it reports failures as an error.
func stream(url string, ulaw []byte) (audio []byte, events []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, nil, err
	}
	defer c.CloseNow()
	for off := 0; off < len(ulaw); off += 160 {
		if err := c.Write(ctx, websocket.MessageBinary, ulaw[off:off+160]); err != nil {
			return nil, nil, err
		}
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("frame %d: %w", off/160, err)
			}
			if typ == websocket.MessageText {
				events = append(events, string(msg))
				continue
			}
			audio = append(audio, msg...)
			break
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	return audio, events, nil
}

// TestHostilePluginCannotStallTheProcess runs a plugin that fills its 16
// MiB memory over and over (or floods the host's WASI), under a budget of 300
// ms, beside a healthy call, and stops the world meanwhile: the garbage
// collector must get every goroutine to a safe point at once (a 16 MiB fill
// was one instruction; a stop-the-world once waited 5.2 s for it), and the
// healthy call must keep real time. The same is measured with no hostile
// call first, as the baseline. The figures are logged (the process's
// worst stop-the-world latency from runtime/metrics, the slowest
// runtime.GC(), the healthy call's worst round trip); the bound is
// generous, for a loaded machine, and far below what a stall costs.
func TestHostilePluginCannotStallTheProcess(t *testing.T) {
	for _, hostile := range []string{"", "fill_loop", "wasi_flood"} {
		name := hostile
		if name == "" {
			name = "baseline"
		}
		t.Run(name, func(t *testing.T) {
			pipelines := map[string]string{"main": "gain db=-6"}
			if hostile != "" {
				pipelines["hostile"] = pluginFixture(hostile) + " budget_ms=300"
			}
			// The hostile frame's CPU time stretches on a loaded machine.
			h := newHost(t, pipelines, func(o *server.Options) { o.IdleTimeout = time.Minute })
			ulaw := ulawSpeech(1)
			want := hosttest.OfflineUlaw(t, "gain db=-6", ulaw)
			hostileDone := make(chan error, 1)
			go func() {
				if hostile == "" {
					hostileDone <- nil
					return
				}
				_, _, err := stream(h.url+"/ws?pipeline=hostile", ulaw[:320])
				hostileDone <- err
			}()
			time.Sleep(300 * time.Millisecond) // the hostile frame is under way
			stopping := stopLatencies()
			var healthy []byte
			var worst time.Duration
			healthyDone := make(chan error, 1)
			go func() {
				var err error
				healthy, worst, err = streamTimed(h.url+"/ws", ulaw)
				healthyDone <- err
			}()
			var slowestGC time.Duration
			for i := 0; i < 5; i++ {
				start := time.Now()
				runtime.GC()
				slowestGC = max(slowestGC, time.Since(start))
				time.Sleep(50 * time.Millisecond)
			}
			stop := stopping()
			if err := <-healthyDone; err != nil {
				t.Fatal(err)
			}
			if err := <-hostileDone; err != nil {
				t.Fatal(err)
			}
			if string(healthy) != string(want) {
				t.Fatal("the healthy call lost or changed frames")
			}
			t.Logf("%s: worst stop-the-world latency %v, slowest runtime.GC() %v, healthy call's worst round trip %v", name, stop, slowestGC, worst)
			if slowestGC > time.Second {
				t.Fatalf("runtime.GC() took %v while the plugin ran: the plugin holds off the stop-the-world", slowestGC)
			}
		})
	}
}

// stopLatencies starts measuring how long the garbage collector waited for
// every goroutine to stop; the function it returns gives the worst wait
// since (the upper bound of the histogram's highest bucket hit).
func stopLatencies() func() time.Duration {
	sample := []rtmetrics.Sample{{Name: "/sched/pauses/stopping/gc:seconds"}}
	rtmetrics.Read(sample)
	before := sample[0].Value.Float64Histogram()
	counts := append([]uint64(nil), before.Counts...)
	return func() time.Duration {
		rtmetrics.Read(sample)
		after := sample[0].Value.Float64Histogram()
		for i := len(after.Counts) - 1; i >= 0; i-- {
			if after.Counts[i] > counts[i] {
				return time.Duration(after.Buckets[i+1] * float64(time.Second))
			}
		}
		return 0
	}
}

// streamTimed is stream for a call whose frames must keep real time: it
// returns the audio and the slowest round trip of a frame.
func streamTimed(url string, ulaw []byte) (audio []byte, worst time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, 0, err
	}
	defer c.CloseNow()
	for off := 0; off < len(ulaw); off += 160 {
		start := time.Now()
		if err := c.Write(ctx, websocket.MessageBinary, ulaw[off:off+160]); err != nil {
			return nil, 0, err
		}
		typ, msg, err := c.Read(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("frame %d: %w", off/160, err)
		}
		if typ != websocket.MessageBinary {
			return nil, 0, fmt.Errorf("frame %d: a text message %q", off/160, msg)
		}
		worst = max(worst, time.Since(start))
		audio = append(audio, msg...)
	}
	c.Close(websocket.StatusNormalClosure, "")
	return audio, worst, nil
}
