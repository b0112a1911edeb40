// Package hosttest runs plugins through the real host for tests: a fresh
// runtime and catalog, a pipeline built from an inline spec, and frames
// pushed through it the way a call pushes them. Plugin and host tests share
// it so that each tests its plugin, not its own copy of the harness.
package hosttest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/offline"
)

// LogBuffer collects a host's log lines (an io.Writer for a slog handler)
// for a test to search; the host writes from many goroutines.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

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

// OfflinePCM is the expectation for a live call in L16 (PCM16LE) at rate
// (Vonage, Exotel, raw ?codec=l16), which `voxhost run` cannot make: its
// input is 8 kHz. The pipeline of the inline spec takes pcm at rate in
// 20 ms frames, as a carrier sends them, and what it holds at the end is
// flushed, as a call's end flushes it.
func OfflinePCM(t testing.TB, spec string, pcm []byte, rate int) []byte {
	t.Helper()
	p := Pipeline(t, Catalog(t), spec, pipeline.CallConfig{InputRate: rate})
	out := Process(t, p, pcm, 20*rate/1000*2)
	if err := p.Flush(func(tail []byte) error {
		out = append(out, tail...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Stage builds a pipeline of one plugin file with key=value config, taking
// inputRate Hz, that ends the call when the plugin fails — so a fault fails
// the test instead of being bypassed. The plugin's log lines go to log.
func Stage(c *catalog.Catalog, file, config string, inputRate int, log io.Writer) (*pipeline.Pipeline, error) {
	return Instantiate(c, file+" on_error=end_call "+config,
		pipeline.CallConfig{InputRate: inputRate, Logger: slog.New(slog.NewTextHandler(log, nil))})
}

// MustStage is Stage at 8 kHz with the plugin's logs discarded; it fails
// the test on error and closes the pipeline when the test ends.
func MustStage(t testing.TB, c *catalog.Catalog, file, config string) *pipeline.Pipeline {
	t.Helper()
	p, err := Stage(c, file, config, 8000, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// ProcessSameLength is Process for a plugin that never changes the length
// of a frame: it fails the test if the output is not as long as the input.
func ProcessSameLength(t testing.TB, p *pipeline.Pipeline, pcm []byte, frameBytes int) []byte {
	t.Helper()
	out := Process(t, p, pcm, frameBytes)
	if len(out) != len(pcm) {
		t.Fatalf("%d bytes out, %d in", len(out), len(pcm))
	}
	return out
}

// RejectsConfigs checks that a plugin refuses each of configs at
// instantiation and logs a reason naming the key ("KEY must be …").
func RejectsConfigs(t *testing.T, c *catalog.Catalog, file string, configs ...string) {
	t.Helper()
	for _, cfg := range configs {
		var log strings.Builder
		p, err := Stage(c, file, cfg, 8000, &log)
		if err == nil {
			p.Close(context.Background())
			t.Errorf("%s: accepted", cfg)
			continue
		}
		if key, _, _ := strings.Cut(cfg, "="); !strings.Contains(log.String(), key+" must be") {
			t.Errorf("%s: rejected (%v), but the log does not name %s: %q", cfg, err, key, log.String())
		}
	}
}

// WaitFor polls cond until it holds, failing the test if a minute passes:
// tests wait on a condition, never on the machine's speed, and the minute
// only bounds a hang (a busy machine takes seconds where a quiet one takes
// milliseconds).
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after a minute waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
