package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

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
	}
	pipelines := map[string]string{"main": "gain db=-6"}
	for _, tc := range cases {
		pipelines[tc.plugin] = "gain db=-6 | " + pluginFixture(tc.plugin)
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
