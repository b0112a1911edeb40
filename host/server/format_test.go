package server_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
)

// TestRawCallsCarryTheirCodec has raw callers pick A-law or L16 at 16 and
// 24 kHz with ?codec=&rate=: each must get back exactly what it sent
// through a passthrough pipeline fed at its rate, frame by frame, and a
// query no format fits must be refused before the upgrade.
func TestRawCallsCarryTheirCodec(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	for _, tc := range []struct {
		query string
		f     codec.Format
	}{
		{"?codec=alaw", codec.Format{Encoding: codec.Alaw, Rate: 8000}},
		{"?codec=l16&rate=16000", codec.Format{Encoding: codec.L16, Rate: 16000}},
		{"?codec=l16&rate=24000", codec.Format{Encoding: codec.L16, Rate: 24000}},
	} {
		pcm := signal.Speech(tc.f.Rate, 0.4)
		frame := make([]byte, len(pcm))
		n := tc.f.Encode(frame, pcm)
		audio := frame[:n]
		c := dial(t, h.url+"/ws"+tc.query)
		ctx := context.Background()
		step := 20 * tc.f.BytesPerMs()
		var got []byte
		for off := 0; off < len(audio); off += step {
			if err := c.Write(ctx, websocket.MessageBinary, audio[off:off+step]); err != nil {
				t.Fatal(err)
			}
			_, msg := readMessage(t, c)
			if len(msg) != step {
				t.Fatalf("%s: a %d-byte reply to a %d-byte frame", tc.f, len(msg), step)
			}
			got = append(got, msg...)
		}
		c.Close(websocket.StatusNormalClosure, "")
		if !bytes.Equal(got, audio) {
			t.Fatalf("%s: a passthrough call did not return the audio it was sent", tc.f)
		}
	}
	if got := httpStatus(t, h.url+"/ws?codec=l16&rate=44100", nil); got != 400 {
		t.Fatalf("an L16 rate no leg carries: HTTP %d, want 400", got)
	}
}

// TestARouteThatCannotTakeTheCallersRateRefusesTheCall relays to a bot at
// 8 kHz μ-law: a 16 kHz caller would need a resampler on the inbound path,
// so its call must end with a reason naming both rates while 8 kHz calls
// work.
func TestARouteThatCannotTakeTheCallersRateRefusesTheCall(t *testing.T) {
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough", upstream: upstream(t, "ws://127.0.0.1:9/bot", "raw")},
	}, nil)
	c := dial(t, h.url+"/ws?codec=l16&rate=16000")
	defer c.CloseNow()
	_, _, err := c.Read(context.Background())
	var ce websocket.CloseError
	if !asCloseError(err, &ce) || ce.Code != websocket.StatusUnsupportedData || !strings.Contains(ce.Reason, "16000 Hz") {
		t.Fatalf("a 16 kHz caller on an 8 kHz relay: %v, want 1003 naming the rates", err)
	}
}

// TestRouteRates: an echo takes every caller rate; a relay to an 8 kHz
// bot without a resampler only 8 kHz.
func TestRouteRates(t *testing.T) {
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main":  {inbound: "passthrough"},
		"relay": {inbound: "passthrough", upstream: upstream(t, "ws://127.0.0.1:9/bot", "raw")},
	}, nil)
	for name, want := range map[string]string{"main": "[8000 16000 24000]", "relay": "[8000]"} {
		if got, ok := h.RouteRates(name); !ok || fmt.Sprint(got) != want {
			t.Errorf("%s takes %v (%v), want %s", name, got, ok, want)
		}
	}
	if _, ok := h.RouteRates("nope"); ok {
		t.Error("an unknown route has rates")
	}
}
