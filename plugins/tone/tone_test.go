package tone_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"testing"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

const (
	rate       = 8000
	frameBytes = 320 // 20 ms
)

// plugin is the module under test, as `make plugins` builds it.
const plugin = "tone.wasm"

func instantiate(c *catalog.Catalog, config string) (*pipeline.Pipeline, error) {
	return hosttest.Stage(c, plugin, config, rate, io.Discard)
}

func db(x float64) float64 { return 10 * math.Log10(x) } // of a power ratio

func rmsDB(x []float64) float64 {
	sum := 0.0
	for _, v := range x {
		sum += v * v
	}
	return db(sum / float64(len(x)) / (32767 * 32767))
}

// goertzel returns the power of x at freq Hz, normalized so that a sine of
// amplitude a gives a^2/4 ... relative: only ratios of it are used.
func goertzel(x []float64, freq float64) float64 {
	w := 2 * math.Pi * freq / rate
	c := 2 * math.Cos(w)
	var s1, s2 float64
	for _, v := range x {
		s1, s2 = v+c*s1-s2, s1
	}
	return s1*s1 + s2*s2 - c*s1*s2
}

// zeroCrossingHz counts upward zero crossings, interpolated, to measure the
// frequency of a sine.
func zeroCrossingHz(x []float64) float64 {
	first, last, n := -1.0, -1.0, 0
	for i := 1; i < len(x); i++ {
		if x[i-1] < 0 && x[i] >= 0 {
			at := float64(i-1) + -x[i-1]/(x[i]-x[i-1])
			if first < 0 {
				first = at
			} else {
				n++
			}
			last = at
		}
	}
	return float64(n) * rate / (last - first)
}

func maxStep(x []float64) float64 {
	m := 0.0
	for i := 1; i < len(x); i++ {
		m = math.Max(m, math.Abs(x[i]-x[i-1]))
	}
	return m
}

func TestToneInReplaceMode(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, hz := range []float64{1000, 440, 3000, 123.4} {
		p := hosttest.MustStage(t, c, plugin, fmt.Sprintf("hz=%g level_dbfs=-20 mode=replace", hz))
		in := signal.Floats(signal.Speech(rate, 5)) // replaced: the input does not matter
		y := signal.Floats(hosttest.ProcessSameLength(t, p, signal.FromFloats(in), frameBytes))
		// Level and frequency.
		level := rmsDB(y)
		f := zeroCrossingHz(y)
		// The tone's power at hz against its power 20 Hz away: a pure tone.
		purity := 10 * math.Log10(goertzel(y, hz)/goertzel(y, hz+20))
		// Sample for sample against the ideal sine, phase 0 at the first
		// sample: frame edges included, so the phase never restarts or slips.
		a := 32767 * math.Sqrt2 * math.Pow(10, -20.0/20)
		worst, at := 0.0, 0
		for i, v := range y {
			want := math.Round(a * math.Sin(2*math.Pi*hz*float64(i)/rate))
			if d := math.Abs(v - want); d > worst {
				worst, at = d, i
			}
		}
		edge := 0.0 // the largest step at a frame edge, against the largest anywhere
		for i := 160; i < len(y); i += 160 {
			edge = math.Max(edge, math.Abs(y[i]-y[i-1]))
		}
		t.Logf("%g Hz: %.3f dBFS, %.4f Hz by zero crossings, %.0f dB over the power 20 Hz away; "+
			"largest error against the ideal sine %.0f LSB (sample %d); steps: %.0f at frame edges, %.0f anywhere",
			hz, level, f, purity, worst, at, edge, maxStep(y))
		if math.Abs(level+20) > 0.5 {
			t.Errorf("%g Hz: level %.3f dBFS, want -20 ± 0.5", hz, level)
		}
		if math.Abs(f-hz) > 0.01*hz {
			t.Errorf("%g Hz: %.3f Hz by zero crossings", hz, f)
		}
		if purity < 40 {
			t.Errorf("%g Hz: only %.1f dB over the power 20 Hz away", hz, purity)
		}
		if worst > 1 {
			t.Errorf("%g Hz: sample %d is %.0f LSB from the ideal sine, phase-continuous from sample 0", hz, at, worst)
		}
	}
}

func TestMixAddsToTheInput(t *testing.T) {
	c := hosttest.Catalog(t)
	// Speech at its full level (peaks near full scale) plus a -10 dBFS tone:
	// the sum saturates in places, and must never wrap.
	in := signal.Floats(signal.Speech(rate, 3))
	alone := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, "hz=1000 level_dbfs=-10 mode=replace"), signal.FromFloats(in), frameBytes))
	mixed := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, "hz=1000 level_dbfs=-10"), signal.FromFloats(in), frameBytes))
	saturated := 0
	for i := range in {
		want := math.Max(-32768, math.Min(32767, in[i]+alone[i]))
		if mixed[i] != want {
			t.Fatalf("sample %d: %v + %v mixed to %v, want %v", i, in[i], alone[i], mixed[i], want)
		}
		if want != in[i]+alone[i] {
			saturated++
		}
	}
	t.Logf("mix = input + tone, sample for sample; %d of %d sums saturated", saturated, len(in))
	if saturated == 0 {
		t.Error("no sum saturated: the test does not check saturation")
	}
}

func TestBeepTiming(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, cfg := range []struct {
		on, off float64
		mode    string
	}{{200, 800, "replace"}, {200, 800, "mix"}, {50, 70, "replace"}} {
		in := make([]float64, 8*4000) // 4 s of silence: mix and replace look alike
		if cfg.mode == "mix" {
			for i := range in {
				in[i] = float64(i%7 - 3) // a small pattern under the beeps
			}
		}
		y := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, fmt.Sprintf("kind=beep hz=1000 level_dbfs=-20 on_ms=%g off_ms=%g mode=%s",
			cfg.on, cfg.off, cfg.mode)), signal.FromFloats(in), frameBytes))
		// On where the 1 kHz tone's envelope (over one 1 ms period) is above
		// half its amplitude.
		a := 32767 * math.Sqrt2 * math.Pow(10, -20.0/20)
		var edges []int
		on := false
		for i := 8; i <= len(y); i++ {
			peak := 0.0
			for _, v := range y[i-8 : i] {
				peak = math.Max(peak, math.Abs(v))
			}
			if now := peak-3 > a/2; now != on {
				edges = append(edges, i-4)
				on = now
			}
		}
		period := 8 * (cfg.on + cfg.off)
		var want []int
		for k := 0.0; k*period < float64(len(y)-8); k++ {
			for _, at := range []float64{k * period, k*period + 8*cfg.on} {
				if at < float64(len(y)-8) {
					want = append(want, int(at))
				}
			}
		}
		if len(edges) != len(want) {
			t.Fatalf("on=%g off=%g: edges at %v, want about %v", cfg.on, cfg.off, edges, want)
		}
		worst := 0
		for k := range want {
			worst = max(worst, abs(edges[k]-want[k]))
		}
		t.Logf("on=%g off=%g %s: %d edges, each within %.1f ms of its time", cfg.on, cfg.off, cfg.mode, len(edges), float64(worst)/8)
		if worst > 160 {
			t.Errorf("on=%g off=%g: an edge is %.1f ms from its time, more than a frame", cfg.on, cfg.off, float64(worst)/8)
		}
		// The off parts carry the input unchanged.
		for k := 0; k+1 < len(want); k += 2 {
			for i := want[k+1] + 8; i < min(want[k]+int(period)-8, len(y)); i++ {
				if y[i] != in[i] {
					t.Fatalf("sample %d, between beeps: %v out, %v in", i, y[i], in[i])
				}
			}
		}
		// Raised-cosine edges: no click.
		if s := maxStep(y); s > 0.77*a+8 {
			t.Errorf("largest step %.0f, more than a 1 kHz sine's %.0f", s, 0.77*a)
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestNoiseIsDeterministic(t *testing.T) {
	c := hosttest.Catalog(t)
	silence := make([]byte, 2*8000*5)
	run := func(cfg string) []float64 {
		return signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, "kind=noise mode=replace "+cfg), silence, frameBytes))
	}
	a, b, other := run("level_dbfs=-30"), run("level_dbfs=-30 seed=1"), run("level_dbfs=-30 seed=2")
	if string(signal.FromFloats(a)) != string(signal.FromFloats(b)) {
		t.Error("two calls with seed 1 differ")
	}
	if string(signal.FromFloats(a)) == string(signal.FromFloats(other)) {
		t.Error("seeds 1 and 2 give the same noise")
	}
	for k, level := range []float64{-30, -50, -10} {
		y := run(fmt.Sprintf("level_dbfs=%g seed=%d", level, 7+k))
		got := rmsDB(y)
		mean, r1, e := 0.0, 0.0, 0.0
		for i, v := range y {
			mean += v
			e += v * v
			if i > 0 {
				r1 += v * y[i-1]
			}
		}
		mean /= float64(len(y))
		t.Logf("level_dbfs=%g: %.3f dBFS, mean %.2f, lag-1 autocorrelation %.4f", level, got, mean, r1/e)
		if math.Abs(got-level) > 0.2 {
			t.Errorf("level_dbfs=%g: %.3f dBFS", level, got)
		}
		if math.Abs(r1/e) > 0.02 {
			t.Errorf("level_dbfs=%g: lag-1 autocorrelation %.4f: not white", level, r1/e)
		}
	}
	// Mixed: the same noise added to the input.
	in := signal.Floats(signal.Speech(rate, 5))
	mixed := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, "kind=noise level_dbfs=-30"), signal.FromFloats(in), frameBytes))
	for i := range in {
		if want := math.Max(-32768, math.Min(32767, in[i]+a[i])); mixed[i] != want {
			t.Fatalf("sample %d: %v + %v mixed to %v", i, in[i], a[i], mixed[i])
		}
	}
}

func TestFramingDoesNotMatter(t *testing.T) {
	c := hosttest.Catalog(t)
	pcm := signal.Speech(rate, 3)
	for _, cfg := range []string{"hz=697", "kind=beep on_ms=120 off_ms=130", "kind=noise seed=9"} {
		want := hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, cfg), pcm, frameBytes)
		p := hosttest.MustStage(t, c, plugin, cfg)
		var got []byte
		src := &pipeline.PCM{}
		sizes := []int{2, 14, 320, 1600, 6, 160, 318, 40}
		for off, k := 0, 0; off < len(pcm); k++ {
			n := min(sizes[k%len(sizes)], len(pcm)-off)
			src.Frame = pcm[off : off+n]
			view, err := p.Process(src)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, view...)
			off += n
		}
		if string(got) != string(want) {
			t.Errorf("%s: frames of 1 to 800 samples give other output than 20 ms frames", cfg)
		}
	}
}

func TestRejectsBadConfig(t *testing.T) {
	c := hosttest.Catalog(t)
	hosttest.RejectsConfigs(t, c, plugin,
		"kind=chirp", "kind=1", "mode=add", "hz=0", "hz=4000", "hz=-5", "level_dbfs=1", "level_dbfs=x",
		"on_ms=0", "off_ms=-1", "ramp_ms=200", "seed=-1", "seed=1.5", "seed=5000000000",
	)
	for _, cfg := range []string{
		"kind=tone hz=3999 level_dbfs=0 mode=replace",
		"kind=beep hz=425 level_dbfs=-13 on_ms=1000 off_ms=4000 ramp_ms=10 mode=mix",
		"kind=noise level_dbfs=-70 seed=4294967295 hz=9000",
	} {
		if _, err := instantiate(c, cfg); err != nil {
			t.Errorf("%s: %v", cfg, err)
		}
	}
}

func TestOtherRates(t *testing.T) {
	c := hosttest.Catalog(t)
	// 5 kHz is over half of 8 kHz, and fine at 16 kHz.
	if p, err := hosttest.Stage(c, plugin, "hz=5000", 8000, io.Discard); err == nil {
		p.Close(context.Background())
		t.Error("hz=5000 accepted at 8 kHz")
	}
	p, err := hosttest.Stage(c, plugin, "hz=5000 mode=replace kind=beep on_ms=100 off_ms=100", 16000, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	y := signal.Floats(hosttest.ProcessSameLength(t, p, make([]byte, 2*16000), 640)) // 1 s in 20 ms frames
	// The first beep: 100 ms of 5 kHz at 16 kHz, 1600 samples.
	a := 32767 * math.Sqrt2 * math.Pow(10, -20.0/20)
	for i := 80; i < 1600-80; i++ { // past the 5 ms edges
		if want := math.Round(a * math.Sin(2*math.Pi*5000*float64(i)/16000)); math.Abs(y[i]-want) > 1 {
			t.Fatalf("sample %d at 16 kHz: %v, want %v", i, y[i], want)
		}
	}
	for i := 1600; i < 3200; i++ {
		if y[i] != 0 {
			t.Fatalf("sample %d at 16 kHz: %v, want 0 between beeps", i, y[i])
		}
	}
}

// BenchmarkProcess: ns per 20 ms frame through the plugin (and the host's
// one copy), as `voxhost bench hop` measures it, for each kind.
func BenchmarkProcess(b *testing.B) {
	frame := signal.Speech(rate, 0.02)
	for _, cfg := range []string{"kind=tone", "kind=tone mode=replace", "kind=beep", "kind=noise"} {
		b.Run(cfg, func(b *testing.B) {
			hosttest.BenchFrames(b, hosttest.MustStage(b, hosttest.Catalog(b), plugin, cfg), frame)
		})
	}
}
