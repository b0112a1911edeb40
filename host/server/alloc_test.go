package server_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/coder/websocket"
)

// TestCallLoopAllocatesNothingPerFrame runs real calls over loopback with a
// client that allocates nothing itself, and counts every heap allocation in
// the process while frames flow: the server's read, decode, pipeline, encode
// and write, on both protocols.
func TestCallLoopAllocatesNothingPerFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over thousands of frames")
	}
	h := newHost(t, map[string]string{"main": "gain db=-6 | passthrough | gain db=3 | passthrough"}, nil)
	ulaw := ulawSpeech(0.02)
	media := []byte(fmt.Sprintf(`{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"20","payload":%q},"streamSid":"MZ1"}`,
		base64.StdEncoding.EncodeToString(ulaw)))
	for _, tc := range []struct {
		path    string
		typ     websocket.MessageType
		frame   []byte
		opening [][]byte
	}{
		{"/ws", websocket.MessageBinary, ulaw, nil},
		{"/twilio", websocket.MessageText, media, [][]byte{
			[]byte(`{"event":"connected","protocol":"Call","version":"1.0.0"}`),
			[]byte(`{"event":"start","sequenceNumber":"1","start":{"streamSid":"MZ1","callSid":"CA1","accountSid":"AC1","tracks":["inbound"],"customParameters":{},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}},"streamSid":"MZ1"}`),
		}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ctx := context.Background()
			c := dial(t, h.url+tc.path)
			defer c.CloseNow()
			for _, m := range tc.opening {
				if err := c.Write(ctx, websocket.MessageText, m); err != nil {
					t.Fatal(err)
				}
			}
			buf := make([]byte, 4096)
			roundTrip := func() {
				if err := c.Write(ctx, tc.typ, tc.frame); err != nil {
					t.Fatal(err)
				}
				_, r, err := c.Reader(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for {
					_, err := r.Read(buf)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := 0; i < 200; i++ {
				roundTrip() // warm up: buffers grow, pools fill
			}
			const frames = 3000
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := 0; i < frames; i++ {
				roundTrip()
			}
			runtime.ReadMemStats(&after)
			perFrame := float64(after.Mallocs-before.Mallocs) / frames
			t.Logf("%s: %.3f allocations per frame, client and server together", tc.path, perFrame)
			// The count is process-wide: goroutines left by earlier tests
			// (closing calls, timers) and the runtime itself allocate now and
			// then. An allocation on the frame path would count ≥ 1 per frame.
			if perFrame > 0.5 {
				t.Fatalf("%.3f allocations per frame; the call loop must allocate nothing per frame", perFrame)
			}
		})
	}
}
