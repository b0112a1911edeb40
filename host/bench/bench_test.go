package bench_test

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/bench"
	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/plugin"
)

func newCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(rt, "")
	t.Cleanup(func() { cat.Close(ctx); rt.Close(ctx) })
	return cat
}

func TestHopMeasuresEveryPluginAtEveryDepth(t *testing.T) {
	rows, err := bench.Hop(context.Background(), newCatalog(t), bench.HopConfig{Plugins: []string{"gain"}, Depths: []int{1, 3}, Frames: 2000, Reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want passthrough and gain at 2 depths", len(rows))
	}
	for _, r := range rows {
		if r.NsPerFrame <= 0 || r.NativeNsPerHop <= 0 || r.Ratio <= 0 {
			t.Fatalf("row without timings: %+v", r)
		}
		if r.AllocsPerFrame > 0.01 {
			t.Fatalf("%s at depth %d allocates %.2f per frame", r.Plugin, r.Depth, r.AllocsPerFrame)
		}
		if math.Abs(r.NsPerHop*float64(r.Depth)-r.NsPerFrame) > 1e-9*r.NsPerFrame { // ns/hop is a quotient: rounding
			t.Fatalf("ns/hop × depth ≠ ns/frame: %+v", r)
		}
	}
	var sb strings.Builder
	if err := bench.WriteHopTable(&sb, rows); err != nil || !strings.Contains(sb.String(), "wasm/native") {
		t.Fatalf("table: %v\n%s", err, sb.String())
	}
	if _, err := bench.Hop(context.Background(), newCatalog(t), bench.HopConfig{Depths: []int{0}}); err == nil {
		t.Fatal("depth 0 must be refused")
	}
}

func TestSessionsCountFramesAndMemory(t *testing.T) {
	rows, err := bench.Sessions(context.Background(), newCatalog(t), bench.SessionsConfig{Sessions: []int{1, 4}, Depth: 2, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Frames == 0 || r.FramesPerSec <= 0 || r.HeapKiBPerSession <= 0 {
			t.Fatalf("empty point: %+v", r)
		}
	}
}

func TestEchoBaselineEchoes(t *testing.T) {
	hs := httptest.NewServer(bench.EchoHandler(1024))
	defer hs.Close()
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for _, msg := range []string{"one frame", strings.Repeat("y", 1000)} {
		c.Write(ctx, websocket.MessageBinary, []byte(msg))
		typ, got, err := c.Read(ctx)
		if err != nil || typ != websocket.MessageBinary || string(got) != msg {
			t.Fatalf("echo of %d bytes: %v", len(msg), err)
		}
	}
}
