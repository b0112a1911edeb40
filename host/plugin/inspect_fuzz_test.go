package plugin_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/plugins"
)

// FuzzInspect: whatever bytes arrive as a plugin, the loader answers with a
// report — valid, or the problems — and never panics; a module it calls
// valid loads, instantiates and processes a frame without taking the host
// down (its errors are values).
func FuzzInspect(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.wasm"))
	for _, path := range seeds {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	for _, name := range []string{"passthrough", "gain"} {
		b, _ := plugins.Get(name)
		f.Add(b)
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-", Logger: quiet})
	if err != nil {
		f.Fatal(err)
	}
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		rep := rt.Inspect(ctx, "fuzz.wasm", wasm)
		if rep.Valid != (len(rep.Problems) == 0) {
			t.Fatalf("valid=%v with problems %q", rep.Valid, rep.Problems)
		}
		if !rep.Valid {
			return
		}
		p, err := rt.Load(ctx, "fuzz.wasm", wasm)
		if err != nil {
			t.Fatalf("Inspect said valid, Load said %v", err)
		}
		defer p.Close(ctx)
		in, err := p.Instantiate(ctx, plugin.InstanceConfig{Logger: quiet})
		if err != nil {
			return
		}
		defer in.Close(ctx)
		_, _ = in.Process(160)
	})
}

// quiet drops the log lines of the modules the fuzzer makes up.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
