// The cross-language conformance test of the example plugin: every SDK
// language's build of the tremolo (examples/TREMOLO.md) runs through the real
// host on the same input and must produce, bit for bit, what an independent
// Go implementation of the specification produces, and the same events.
package examples_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
)

// languages are the SDK languages; each builds examples/<lang>/build/tremolo.wasm.
var languages = []string{"c", "cpp", "wat", "rust", "assemblyscript", "go"}

// requiredEnv, set to 1 by make test, turns a missing build into a failure.
const requiredEnv = "VOXHOST_EXAMPLES_REQUIRED"

const frameSamples = 160 // 20 ms at 8 kHz

// keyPress is a DTMF key delivered before the frame of index Frame.
type keyPress struct {
	Frame int
	Key   byte
}

var keys = []keyPress{{25, '#'}, {40, '5'}, {60, '#'}}

// configs are the configurations every language runs with. JSON, if set, is
// the exact text given to vox_init; otherwise Config goes through the same
// encoding as a pipeline spec ("tremolo.wasm rate_hz=5 depth=0.8").
var configs = []struct {
	name          string
	config        map[string]any
	json          string
	rateHz, depth float64 // what the reference uses
}{
	{name: "rate_hz=5,depth=0.8", config: map[string]any{"rate_hz": 5, "depth": 0.8}, rateHz: 5, depth: 0.8},
	{name: "defaults", rateHz: 4, depth: 0.5},
	{name: "rate_hz=4.5,depth=0.25", config: map[string]any{"rate_hz": 4.5, "depth": 0.25}, rateHz: 4.5, depth: 0.25},
	// Unknown keys are ignored, even one whose string value is a known key,
	// and white space may surround every token.
	{name: "unknown_keys_and_spaces", json: ` { "note" : "rate_hz", "depth" : 0.25 ,"rate_hz":4.5, "x": [1, {"depth": 1}] } `, rateHz: 4.5, depth: 0.25},
}

// ---- The reference: TREMOLO.md in Go, independent of every SDK ----

type reference struct {
	depthQ16   int32
	inc, phase uint32
	enabled    bool
}

func newReference(rateHz, depth float64, inputRate int) *reference {
	// The explicit float64 conversions forbid fusing a*b+c into one FMA,
	// which the Go spec otherwise allows: the specification rounds twice.
	return &reference{
		depthQ16: int32(math.Floor(float64(depth*65536.0) + 0.5)),
		inc:      uint32(math.Floor(float64(rateHz*4294967296.0)/float64(inputRate) + 0.5)),
		enabled:  true,
	}
}

func (r *reference) process(s []int16) {
	for i := range s {
		p := r.phase >> 16
		var tri uint32
		if p < 32768 {
			tri = 2 * p
		} else {
			tri = 2 * (65535 - p)
		}
		g := 65536 - int32((int64(r.depthQ16)*int64(tri))>>16)
		if r.enabled {
			s[i] = int16((int64(s[i]) * int64(g)) >> 16)
		}
		r.phase += r.inc
	}
}

func (r *reference) key(k byte) emitted {
	if k == '#' {
		r.enabled = !r.enabled
	}
	return emitted{Name: "tremolo.key", Data: fmt.Sprintf(`{"digit":"%c","enabled":%t}`, k, r.enabled)}
}

// referenceRun is what the plugin must produce for input cut into frames of
// the given lengths (in samples, cycled), with keys before their frames.
func referenceRun(rateHz, depth float64, rate int, input []int16, lengths []int, keys []keyPress) ([]int16, []emitted) {
	r := newReference(rateHz, depth, rate)
	out := append([]int16(nil), input...)
	var events []emitted
	for frame, off := 0, 0; off < len(out); frame++ {
		for _, k := range keys {
			if k.Frame == frame {
				events = append(events, r.key(k.Key))
			}
		}
		end := min(off+lengths[frame%len(lengths)], len(out))
		r.process(out[off:end])
		off = end
	}
	return out, events
}

// TestReference pins the reference to numbers worked out by hand from
// TREMOLO.md, so that the languages are not all compared to a wrong oracle.
func TestReference(t *testing.T) {
	for _, c := range []struct {
		rateHz, depth float64
		rate          int
		depthQ16      int32
		inc           uint32
	}{
		{5, 0.8, 8000, 52429, 2684355},    // 52428.8 + 0.5; 2684354.56 + 0.5
		{4, 0.5, 8000, 32768, 2147484},    // defaults; 2147483.648 + 0.5
		{4.5, 0.25, 8000, 16384, 2415919}, // 2415919.104 + 0.5
		{20, 1, 8000, 65536, 10737418},    // 10737418.24 + 0.5
		{0.1, 0, 48000, 0, 8948},          // 8947.848... + 0.5
	} {
		r := newReference(c.rateHz, c.depth, c.rate)
		if r.depthQ16 != c.depthQ16 || r.inc != c.inc {
			t.Errorf("rate_hz=%v depth=%v at %d Hz: depth_q16=%d inc=%d, want %d and %d",
				c.rateHz, c.depth, c.rate, r.depthQ16, r.inc, c.depthQ16, c.inc)
		}
	}
	// One sample at the bottom of the triangle (phase 0: gain 1) and four at
	// its top (p = 32768, tri = 65534, g = 65536 - 52427 = 13109 for depth 0.8).
	r := newReference(5, 0.8, 8000)
	s := []int16{10000}
	r.process(s)
	if s[0] != 10000 {
		t.Errorf("at phase 0: %d, want 10000 (gain 1)", s[0])
	}
	for _, c := range []struct{ in, want int16 }{{10000, 2000}, {-10000, -2001}, {32767, 6554}, {-32768, -6555}} {
		r.phase, r.inc = 32768<<16, 0
		s := []int16{c.in}
		r.process(s)
		if s[0] != c.want {
			t.Errorf("at the peak: %d -> %d, want %d (floor of s * 13109 / 65536)", c.in, s[0], c.want)
		}
	}
	// The key '#' toggles, others do not; the event tells the state after it.
	r = newReference(4, 0.5, 8000)
	for _, c := range []struct {
		key  byte
		want string
	}{{'5', `{"digit":"5","enabled":true}`}, {'#', `{"digit":"#","enabled":false}`}, {'*', `{"digit":"*","enabled":false}`}, {'#', `{"digit":"#","enabled":true}`}} {
		if got := r.key(c.key); got.Data != c.want || got.Name != "tremolo.key" {
			t.Errorf("key %c: %s %s, want tremolo.key %s", c.key, got.Name, got.Data, c.want)
		}
	}
	// Disabled, the samples stay and the phase moves on.
	r = newReference(5, 1, 8000)
	r.enabled = false
	s = []int16{1, 2, 3}
	r.process(s)
	if s[0] != 1 || s[1] != 2 || s[2] != 3 || r.phase != 3*r.inc {
		t.Errorf("disabled: %v, phase %d; want [1 2 3], phase %d", s, r.phase, 3*r.inc)
	}
}

// ---- The host side ----

var (
	hostOnce sync.Once
	hostCat  *catalog.Catalog
	hostErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if hostCat != nil {
		ctx := context.Background()
		_ = hostCat.Close(ctx)
		_ = hostCat.Runtime().Close(ctx)
	}
	os.Exit(code)
}

// host is one runtime and catalog shared by every test: each module is
// compiled once, as in the server.
func host(tb testing.TB) *catalog.Catalog {
	hostOnce.Do(func() {
		// CompileTimeout: the load deadline is a wall-clock backstop
		// (host/plugin tests it), not what these tests check. The Go
		// examples are 2 MB modules, 17 s of CPU each to compile under
		// the race detector, which a busy machine can stretch past the
		// default of 2 minutes; the test binary's -timeout bounds them.
		rt, err := plugin.NewRuntime(context.Background(), plugin.Options{
			CacheDir: "-", Logger: slog.New(slog.DiscardHandler), CompileTimeout: time.Hour,
		})
		if err != nil {
			hostErr = err
			return
		}
		hostCat = catalog.New(rt, "")
		_, hostErr = hostCat.Resolve(context.Background(), "passthrough") // the host works at all
	})
	if hostErr != nil {
		tb.Fatal(hostErr)
	}
	return hostCat
}

// wasmPath is the language's build of the tremolo, or a skip (a failure
// under make test) when it has not been built.
func wasmPath(tb testing.TB, lang string) string {
	tb.Helper()
	return examplePath(tb, lang, "tremolo")
}

// examplePath is the language's build of the example plugin name, or a skip
// (a failure under make test) when it has not been built.
func examplePath(tb testing.TB, lang, name string) string {
	tb.Helper()
	path := filepath.Join(lang, "build", name+".wasm")
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("examples/%s/build/%s.wasm missing: run make examples", lang, name)
		if os.Getenv(requiredEnv) == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return path
}

// emitted is one event a plugin emitted.
type emitted struct {
	Name, Data string
}

type recorder struct{ events []emitted }

func (r *recorder) Emit(_, name string, data []byte) {
	r.events = append(r.events, emitted{Name: name, Data: string(data)})
}

// logRecorder keeps the level and text of every plugin log line.
type logRecorder struct {
	mu    sync.Mutex
	lines []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// call is one plugin instance set up for a call through the real pipeline.
type call struct {
	p      *pipeline.Pipeline
	events *recorder
	faults []string
}

// definition resolves the language's build with a config: JSON text if
// given, else the map encoded as a pipeline spec encodes it.
func definition(tb testing.TB, lang string, config map[string]any, rawJSON string) *pipeline.Definition {
	tb.Helper()
	return definitionAt(tb, "tremolo-"+lang, wasmPath(tb, lang), config, rawJSON)
}

// definitionAt is a one-stage pipeline of the plugin at path, which fails
// the call on a fault rather than bypassing the stage.
func definitionAt(tb testing.TB, name, path string, config map[string]any, rawJSON string) *pipeline.Definition {
	tb.Helper()
	def, err := host(tb).Definition(context.Background(), name, []pipeline.StageSpec{{
		Plugin: path, Config: config, OnError: "end_call",
	}})
	if err != nil {
		tb.Fatal(err)
	}
	if rawJSON != "" {
		def.Stages[0].Config = []byte(rawJSON)
	}
	return def
}

// startCall instantiates the definition and delivers call_start.
func startCall(tb testing.TB, def *pipeline.Definition, rate int, logger *slog.Logger) (*call, error) {
	tb.Helper()
	c := &call{events: &recorder{}}
	p, err := def.Instantiate(context.Background(), pipeline.CallConfig{
		InputRate: rate, Sink: c.events, Logger: logger,
		OnFault: func(f pipeline.Fault) { c.faults = append(c.faults, f.Err.Error()) },
	})
	if err != nil {
		return nil, err
	}
	c.p = p
	tb.Cleanup(func() { _ = p.Close(context.Background()) })
	meta, _ := json.Marshal(map[string]any{
		"call_id": "conformance", "pipeline": def.Name, "protocol": "file",
		"sample_rate": rate, "stage": 0, "params": map[string]string{"lang": "en"},
	})
	if err := p.Event(abi.EventCallStart, 0, meta); err != nil {
		tb.Fatal(err)
	}
	return c, nil
}

// run feeds input through the call in frames of the given lengths (cycled),
// keys before their frames, then flushes; it returns the output samples.
func (c *call) run(tb testing.TB, input []int16, lengths []int, keys []keyPress) []int16 {
	tb.Helper()
	return c.feed(tb, input, lengths, func(frame int) {
		for _, k := range keys {
			if k.Frame == frame {
				if err := c.p.Event(abi.EventDTMF, int32(k.Key), nil); err != nil {
					tb.Fatalf("DTMF %c before frame %d: %v", k.Key, frame, err)
				}
			}
		}
	})
}

// feed runs input through the call in frames of the given lengths (cycled),
// calling before(frame) ahead of each, then flushes; it returns the output
// samples, the flushed tail included.
func (c *call) feed(tb testing.TB, input []int16, lengths []int, before func(frame int)) []int16 {
	tb.Helper()
	pcm := make([]byte, 2*len(input))
	for i, s := range input {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(s))
	}
	var out []byte
	src := &pipeline.PCM{}
	for frame, off := 0, 0; off < len(pcm); frame++ {
		before(frame)
		end := min(off+2*lengths[frame%len(lengths)], len(pcm))
		src.Frame = pcm[off:end]
		view, err := c.p.Process(src)
		if err != nil {
			tb.Fatalf("frame %d: %v", frame, err)
		}
		out = append(out, view...)
		off = end
	}
	if err := c.p.Flush(func(tail []byte) error { out = append(out, tail...); return nil }); err != nil {
		tb.Fatalf("flush: %v", err)
	}
	if len(c.faults) > 0 {
		tb.Fatalf("faults: %s", strings.Join(c.faults, "; "))
	}
	return signal.Samples(out)
}

// compare reports the first differences between got and want.
func compare(t *testing.T, got, want []int16, gotEvents, wantEvents []emitted) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("output has %d samples, want %d", len(got), len(want))
	}
	diffs := 0
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			if diffs < 5 {
				t.Errorf("sample %d (frame %d, +%d): %d, want %d", i, i/frameSamples, i%frameSamples, got[i], want[i])
			}
			diffs++
		}
	}
	if diffs > 0 {
		t.Errorf("%d of %d samples differ from the reference", diffs, len(want))
	}
	if fmt.Sprint(gotEvents) != fmt.Sprint(wantEvents) {
		t.Errorf("events:\n got %q\nwant %q", gotEvents, wantEvents)
	}
}

var speech = signal.Samples(signal.Speech(8000, 3))

// TestConformance runs every language through the host and compares it with
// the reference, bit for bit.
func TestConformance(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			wasmPath(t, lang)
			for _, cfg := range configs {
				t.Run(cfg.name, func(t *testing.T) {
					c, err := startCall(t, definition(t, lang, cfg.config, cfg.json), 8000, nil)
					if err != nil {
						t.Fatal(err)
					}
					got := c.run(t, speech, []int{frameSamples}, keys)
					want, wantEvents := referenceRun(cfg.rateHz, cfg.depth, 8000, speech, []int{frameSamples}, keys)
					compare(t, got, want, c.events.events, wantEvents)
				})
			}
			// The LFO is seamless across frames of any length (1 ms steps up
			// to the 100 ms the host sizes buffers for), keys included.
			t.Run("frame_lengths", func(t *testing.T) {
				lengths := []int{8, 160, 800, 24, 320, 40}
				c, err := startCall(t, definition(t, lang, map[string]any{"rate_hz": 5, "depth": 0.8}, ""), 8000, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := c.run(t, speech, lengths, keys)
				want, wantEvents := referenceRun(5, 0.8, 8000, speech, lengths, keys)
				compare(t, got, want, c.events.events, wantEvents)
			})
			// Other input rates change the phase step; output rate = input rate.
			t.Run("16kHz", func(t *testing.T) {
				c, err := startCall(t, definition(t, lang, map[string]any{"rate_hz": 5, "depth": 0.8}, ""), 16000, nil)
				if err != nil {
					t.Fatal(err)
				}
				if r := c.p.OutputRate(); r != 16000 {
					t.Fatalf("output rate %d, want 16000", r)
				}
				in := signal.Samples(signal.Speech(16000, 1))
				got := c.run(t, in, []int{320}, keys)
				want, wantEvents := referenceRun(5, 0.8, 16000, in, []int{320}, keys)
				compare(t, got, want, c.events.events, wantEvents)
			})
		})
	}
}

// TestBadConfig: a value out of range or of the wrong type fails set-up with
// status -2 (bad config), after a log line at error level.
func TestBadConfig(t *testing.T) {
	bad := []string{
		`{"depth":2}`,
		`{"rate_hz":-1}`,
		`{"depth":2,"rate_hz":-1}`,
		`{"rate_hz":0.05}`,
		`{"rate_hz":25}`,
		`{"depth":-0.5}`,
		`{"depth":"0.5"}`,
		`{"rate_hz":true}`,
	}
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			wasmPath(t, lang)
			for _, cfg := range bad {
				logs := &logRecorder{}
				_, err := startCall(t, definition(t, lang, nil, cfg), 8000, slog.New(logs))
				var perr *plugin.Error
				switch {
				case err == nil:
					t.Errorf("config %s: accepted, want vox_init to fail with status -2", cfg)
					continue
				case !errors.As(err, &perr) || perr.Export != abi.ExportInit || perr.Kind != plugin.KindStatus || perr.Status != abi.StatusBadConfig:
					t.Errorf("config %s: %v, want vox_init to fail with status -2", cfg, err)
					continue
				}
				logged := false
				for _, r := range logs.lines {
					if r.Level == slog.LevelError && r.Message != "" && !strings.Contains(r.Message, "\n") {
						logged = true
					}
				}
				if !logged {
					t.Errorf("config %s: rejected without a one-line reason logged at error level", cfg)
				}
			}
		})
	}
}

// TestRates: 8000 to 48000 Hz are accepted, others fail vox_rate with -3.
func TestRates(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			def := definition(t, lang, nil, "")
			for _, rate := range []int{4000, 7999, 48001} {
				_, err := startCall(t, def, rate, nil)
				var perr *plugin.Error
				if !errors.As(err, &perr) || perr.Export != abi.ExportRate || perr.Kind != plugin.KindStatus || perr.Status != abi.StatusBadRate {
					t.Errorf("input of %d Hz: %v, want vox_rate to fail with status -3", rate, err)
				}
			}
			for _, rate := range []int{8000, 11025, 48000} {
				c, err := startCall(t, def, rate, nil)
				if err != nil {
					t.Errorf("input of %d Hz: %v", rate, err)
				} else if c.p.OutputRate() != rate {
					t.Errorf("input of %d Hz: output rate %d, want it unchanged", rate, c.p.OutputRate())
				}
			}
		})
	}
}

// BenchmarkTremolo measures one 20 ms frame (160 samples) through each
// language's build in the host, against the reference in plain Go.
func BenchmarkTremolo(b *testing.B) {
	frame := speech[8000 : 8000+frameSamples]
	pcm := make([]byte, 2*len(frame))
	for i, s := range frame {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(s))
	}
	for _, lang := range languages {
		b.Run(lang, func(b *testing.B) {
			c, err := startCall(b, definition(b, lang, map[string]any{"rate_hz": 5, "depth": 0.8}, ""), 8000, nil)
			if err != nil {
				b.Fatal(err)
			}
			src := &pipeline.PCM{Frame: pcm}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.p.Process(src); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/frame")
		})
	}
	b.Run("go-reference", func(b *testing.B) {
		r := newReference(5, 0.8, 8000)
		buf := make([]int16, len(frame))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			copy(buf, frame)
			r.process(buf)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/frame")
	})
}
