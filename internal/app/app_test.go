package app_test

import (
	"context"
	"github.com/voxhost/voxhost/internal/hosttest"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/internal/app"
	"github.com/voxhost/voxhost/internal/signal"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestDefaultHostServesAndDrains starts the host `make run` starts — no
// config, no files — takes a call on it, then stops it as SIGTERM would.
func TestDefaultHostServesAndDrains(t *testing.T) {
	cfg := config.Default()
	if err := app.Apply(&cfg, app.Overrides{Addr: "127.0.0.1:0", CacheDir: "-"}); err != nil {
		t.Fatal(err)
	}
	if cfg.DefaultPipeline != app.DefaultPipelineName {
		t.Fatalf("default pipeline = %q", cfg.DefaultPipeline)
	}
	ctx, stop := context.WithCancel(context.Background())
	h, err := app.New(ctx, cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- h.ListenAndServe(ctx, func(a net.Addr) { addrc <- a }) }()
	addr := <-addrc

	// A bound on a hang, not a speed: at a load average of 25, under the
	// race detector, the 50 frames below took more than 5 s.
	dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(dctx, "ws://"+addr.String()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The built-in pipeline's reply must be what `voxhost run` makes of the
	// same audio with the same pipeline.
	ulaw := make([]byte, 8000)
	codec.EncodeUlaw(ulaw, signal.Speech(8000, 1))
	want := hosttest.OfflineUlaw(t, app.DefaultPipelineSpec, ulaw)[:len(ulaw)] // the live call answers frames, not the flush tail
	var got []byte
	for off := 0; off < len(ulaw); off += 160 {
		if err := c.Write(dctx, websocket.MessageBinary, ulaw[off:off+160]); err != nil {
			t.Fatal(err)
		}
		for {
			typ, reply, err := c.Read(dctx)
			if err != nil {
				t.Fatal(err)
			}
			if typ == websocket.MessageBinary {
				got = append(got, reply...)
				break
			}
		}
	}
	if string(got) != string(want) {
		t.Fatal("the default pipeline's live audio differs from voxhost run's")
	}
	// The defaults shed calls on CPU use: the server samples it.
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), "\nvoxhost_cpu_utilization ") || !strings.Contains(string(m), "\nvoxhost_overloaded ") || !strings.Contains(string(m), "\nvoxhost_cpu_wait_seconds ") {
		t.Fatal("the default config must turn CPU overload shedding on")
	}
	c.Close(websocket.StatusNormalClosure, "")
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve ended with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop after its context ended")
	}
}

func TestExampleConfigBuildsAHost(t *testing.T) {
	t.Setenv("VOXHOST_TOKENS", "a,b")
	cfg, err := app.LoadConfig("../../examples/voxhost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Apply(&cfg, app.Overrides{CacheDir: "-", PluginsDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	h, err := app.New(context.Background(), cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	h.Close(context.Background())
	if got := cfg.ResolvedTokens(); len(got) != 3 {
		t.Fatalf("tokens = %q, want the file's and the environment's", got)
	}
}

func TestOverridesAndRefusals(t *testing.T) {
	cfg := config.Default()
	if err := app.Apply(&cfg, app.Overrides{Pipeline: "gain db=-6 |"}); err == nil || !strings.Contains(err.Error(), "--pipeline: ") {
		t.Fatalf("bad --pipeline: %v", err)
	}
	cfg = config.Default()
	cfg.Auth.TokensEnv = "VOXHOST_TEST_UNSET_TOKENS"
	if err := app.Apply(&cfg, app.Overrides{}); err == nil || !strings.Contains(err.Error(), "refusing to serve without auth by accident") {
		t.Fatalf("empty tokens_env: %v", err)
	}
	if _, err := app.LoadConfig("no/such/voxhost.yaml"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing config: %v", err)
	}
	cfg = config.Default()
	if err := app.Apply(&cfg, app.Overrides{Pipeline: "gain db=3", CacheDir: "-"}); err != nil {
		t.Fatal(err)
	}
	if cfg.DefaultPipeline != "cli" || len(cfg.Pipelines) != 1 {
		t.Fatalf("--pipeline must become the default: %+v", cfg.Pipelines)
	}
	cfg = config.Default()
	app.Apply(&cfg, app.Overrides{Pipeline: "reverb", CacheDir: "-"})
	if _, err := app.New(context.Background(), cfg, quiet()); err == nil || !strings.Contains(err.Error(), `unknown plugin "reverb"`) {
		t.Fatalf("unknown plugin: %v", err)
	}
}

// TestPluginLimitsReachTheRuntime: a plugin over the configured limits is
// refused at start-up with the limit's key.
func TestPluginLimitsReachTheRuntime(t *testing.T) {
	cfg := config.Default()
	cfg.PluginLimits.Module.ModuleBytes = 100
	if err := app.Apply(&cfg, app.Overrides{Pipeline: "gain db=-6", CacheDir: "-"}); err != nil {
		t.Fatal(err)
	}
	_, err := app.New(context.Background(), cfg, quiet())
	if err == nil || !strings.Contains(err.Error(), "over the host's limit of 100 (plugin_limits.module_bytes)") {
		t.Fatalf("New with module_bytes 100: %v", err)
	}
}

// TestCloseWhileServingEndsTheCallsFirst: closing a host whose server still
// has a call in progress ends the call (going away) before the runtime is
// released under it, rather than crashing the process.
func TestCloseWhileServingEndsTheCallsFirst(t *testing.T) {
	cfg := config.Default()
	if err := app.Apply(&cfg, app.Overrides{Addr: "127.0.0.1:0", CacheDir: "-"}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	h, err := app.New(ctx, cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	addrc := make(chan net.Addr, 1)
	go func() { _ = h.ListenAndServe(ctx, func(a net.Addr) { addrc <- a }) }()
	addr := <-addrc
	dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(dctx, "ws://"+addr.String()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	frame := make([]byte, 160)
	codec.EncodeUlaw(frame, signal.Speech(8000, 0.02))
	if err := c.Write(dctx, websocket.MessageBinary, frame); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(dctx); err != nil {
		t.Fatal(err)
	}
	// Frames keep coming while the host closes.
	go func() {
		for c.Write(dctx, websocket.MessageBinary, frame) == nil {
		}
	}()
	h.Close(context.Background())
	for {
		if _, _, err := c.Read(dctx); err != nil {
			if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
				t.Fatalf("the call ended with %v, want going away", err)
			}
			return
		}
	}
}
