package server_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
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

// TestRelayAllocatesNothingPerFrame is the same count for relayed calls:
// a Twilio caller's frame goes through the inbound pipeline to a bot (raw
// and twilio dialects) that answers each with a frame of its own, which
// comes back through the outbound pipeline and the playout queue. The bot
// and the caller allocate nothing either; the send-ahead is set past the
// test's length so that pacing does not make it take minutes.
func TestRelayAllocatesNothingPerFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over thousands of frames")
	}
	ulaw := ulawSpeech(0.02)
	media := []byte(fmt.Sprintf(`{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"20","payload":%q},"streamSid":"MZ00000000000000000000000000000001"}`,
		base64.StdEncoding.EncodeToString(ulaw)))
	for _, dialect := range []string{"raw", "twilio"} {
		t.Run(dialect, func(t *testing.T) {
			answer := ulaw
			if dialect == "twilio" {
				answer = twilioMedia("MZ1", ulaw)
			}
			bot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				defer conn.CloseNow()
				ctx := context.Background()
				buf := make([]byte, 4096)
				for {
					typ, n, err := readInto(conn, buf)
					if err != nil {
						return
					}
					// Answer each frame of audio: binary (raw) or a media message.
					if typ == websocket.MessageBinary || n > 16 && string(buf[:16]) == `{"event":"media"` {
						answerType := websocket.MessageBinary
						if dialect == "twilio" {
							answerType = websocket.MessageText
						}
						if conn.Write(ctx, answerType, answer) != nil {
							return
						}
					}
				}
			}))
			defer bot.Close()
			up := upstream(t, "ws"+strings.TrimPrefix(bot.URL, "http"), dialect)
			h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
				"main": {inbound: "gain db=-6 | passthrough", outbound: "gain db=3 | passthrough", upstream: up},
			}, func(o *server.Options) { o.SendAhead = time.Hour })
			ctx := context.Background()
			c := dial(t, h.url+"/twilio")
			defer c.CloseNow()
			twilioCallerStart(t, c, `{}`)
			buf := make([]byte, 4096)
			roundTrip := func() {
				if err := c.Write(ctx, websocket.MessageText, media); err != nil {
					t.Fatal(err)
				}
				if _, _, err := readInto(c, buf); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 200; i++ {
				roundTrip()
			}
			const frames = 3000
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := 0; i < frames; i++ {
				roundTrip()
			}
			runtime.ReadMemStats(&after)
			perFrame := float64(after.Mallocs-before.Mallocs) / frames
			t.Logf("relay over %s: %.3f allocations per frame, caller, host both ways and bot together", dialect, perFrame)
			if perFrame > 0.5 {
				t.Fatalf("%.3f allocations per frame; a relayed call must allocate nothing per frame in either direction", perFrame)
			}
		})
	}
}

// readInto reads one whole message into buf without allocating.
func readInto(c *websocket.Conn, buf []byte) (websocket.MessageType, int, error) {
	typ, r, err := c.Reader(context.Background())
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for {
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return typ, n, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}
