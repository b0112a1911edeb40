// Package hosttest runs plugins through the real host for tests: a fresh
// runtime and catalog, a pipeline built from an inline spec, and frames
// pushed through it the way a call pushes them. Plugin and host tests share
// it so that each tests its plugin, not its own copy of the harness.
package hosttest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/offline"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
)

// Catalog starts a runtime with no disk cache, whose plugins' log lines are
// discarded (bad-config tests make plugins log errors), and a catalog over
// it; both close when the test ends.
func Catalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.New(rt, "")
	t.Cleanup(func() {
		c.Close(ctx)
		rt.Close(ctx)
	})
	return c
}

// Instantiate builds an inline pipeline spec for one call.
func Instantiate(c *catalog.Catalog, spec string, cfg pipeline.CallConfig) (*pipeline.Pipeline, error) {
	ctx := context.Background()
	specs, err := pipeline.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	def, err := c.Definition(ctx, "test", specs)
	if err != nil {
		return nil, err
	}
	return def.Instantiate(ctx, cfg)
}

// Pipeline is Instantiate that fails the test on error and closes the
// pipeline when the test ends.
func Pipeline(t testing.TB, c *catalog.Catalog, spec string, cfg pipeline.CallConfig) *pipeline.Pipeline {
	t.Helper()
	p, err := Instantiate(c, spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// Process pushes pcm through p in frames of frameBytes (the last one may be
// shorter) and returns everything that came out, in order.
func Process(t testing.TB, p *pipeline.Pipeline, pcm []byte, frameBytes int) []byte {
	t.Helper()
	out := make([]byte, 0, len(pcm))
	src := &pipeline.PCM{}
	for off := 0; off < len(pcm); off += frameBytes {
		src.Frame = pcm[off:min(off+frameBytes, len(pcm))]
		view, err := p.Process(src)
		if err != nil {
			t.Fatalf("frame at byte %d: %v", off, err)
		}
		out = append(out, view...)
	}
	return out
}

// BenchFrames pushes one frame through p b.N times and reports ns/frame,
// as `voxhost bench hop` measures a plugin.
func BenchFrames(b *testing.B, p *pipeline.Pipeline, frame []byte) {
	src := &pipeline.PCM{Frame: frame}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Process(src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/frame")
}

// OfflineUlaw is what `voxhost run` makes of μ-law input with the inline
// pipeline spec — the expectation a live call is compared against. It
// returns the μ-law bytes themselves (decoding would fold 0x7F into 0xFF),
// flush tail included.
func OfflineUlaw(t testing.TB, spec string, ulaw []byte) []byte {
	t.Helper()
	ctx := context.Background()
	specs, err := pipeline.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	def, err := Catalog(t).Definition(ctx, "offline", specs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.ul"), filepath.Join(dir, "out.ul")
	if err := os.WriteFile(in, ulaw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := offline.Run(ctx, offline.Options{Definition: def, In: in, Out: out, Events: io.Discard}); err != nil {
		t.Fatal(err)
	}
	res, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
