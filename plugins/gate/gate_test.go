package gate_test

import (
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
const plugin = "gate.wasm"

func instantiate(c *catalog.Catalog, config string) (*pipeline.Pipeline, error) {
	return hosttest.Stage(c, plugin, config, rate, io.Discard)
}

func db(x float64) float64 { return 10 * math.Log10(x) } // of a power ratio

func amp(dbfs float64) float64 { return 32767 * math.Pow(10, dbfs/20) }

// square returns n samples of a 2 kHz square wave of amplitude a: no
// sample is 0, so output/input is the gain, sample by sample.
func square(n int, a float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		if i%4 < 2 {
			x[i] = math.Round(a)
		} else {
			x[i] = -math.Round(a)
		}
	}
	return x
}

// addTone adds a 1 kHz sine of RMS level dbfs to x[from:to].
func addTone(x []float64, from, to int, dbfs float64) {
	a := amp(dbfs) * math.Sqrt2
	for i := from; i < to; i++ {
		x[i] += math.Round(a * math.Sin(2*math.Pi*1000*float64(i-from)/rate))
	}
}

func rmsDB(x []float64) float64 {
	sum := 0.0
	for _, v := range x {
		sum += v * v
	}
	return db(sum / float64(len(x)) / (32767 * 32767))
}

func maxStep(x []float64) float64 {
	m := 0.0
	for i := 1; i < len(x); i++ {
		m = math.Max(m, math.Abs(x[i]-x[i-1]))
	}
	return m
}

func noise(seconds, dbfs float64, seed uint64) []float64 {
	return signal.Floats(signal.Noise(rate, seconds, math.Pow(10, dbfs/20), seed))
}

func TestNoiseIsAttenuatedByTheFloor(t *testing.T) {
	c := hosttest.Catalog(t)
	// A -20 dBFS tone over -60 dBFS noise for 300 ms opens the gate; then
	// the noise alone, which the gate attenuates by floor_db once hold and
	// release are over (100 + 150 ms, and the detector's fall: 5 ms * ln(
	// 10^(28/10)) = 32 ms from -20 to -48 dBFS).
	for _, floor := range []float64{-60, -20, -10} {
		x := noise(2, -60, 1)
		addTone(x, 0, 2400, -20)
		y := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, fmt.Sprintf("floor_db=%g", floor)), signal.FromFloats(x), frameBytes))
		tail := 2400 + 8*(100+150+35)
		in, out := rmsDB(x[tail:]), rmsDB(y[tail:])
		t.Logf("floor_db=%g: noise %.2f dBFS in, %.2f out after the release", floor, in, out)
		if floor == -60 {
			// -120 dBFS is far under half an LSB: every sample rounds to 0.
			for i := tail; i < len(y); i++ {
				if y[i] != 0 {
					t.Fatalf("floor_db=-60: sample %d = %v, want 0", i, y[i])
				}
			}
			continue
		}
		if d := out - in; math.Abs(d-floor) > 0.5 {
			t.Errorf("floor_db=%g: the noise is attenuated %.2f dB, want %g ± 0.5", floor, d, floor)
		}
	}
}

func TestBurstOpensHoldsAndFades(t *testing.T) {
	c := hosttest.Catalog(t)
	const (
		start, end = 4000, 6400 // a 300 ms burst at 0.5 s
		attack     = 16         // 2 ms
		hold       = 800        // 100 ms
		release    = 1200       // 150 ms
	)
	// A -35 dBFS square under a -30 dBFS threshold, so the gain can be read
	// at every sample, with floor_db=-20 so that it is still readable closed.
	x := square(16000, amp(-35))
	addTone(x, start, end, -20)
	y := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, "threshold_dbfs=-30 floor_db=-20"), signal.FromFloats(x), frameBytes))
	gain := make([]float64, len(x))
	for i := range x {
		gain[i] = y[i] / x[i]
	}
	closed := math.Pow(10, -20.0/20)
	near := func(g, want float64) bool { return math.Abs(20*math.Log10(g/want)) < 0.5 }
	for i := 0; i < start; i++ {
		if !near(gain[i], closed) {
			t.Fatalf("sample %d, before the burst: gain %.4f, want %.4f (closed)", i, gain[i], closed)
		}
	}
	// Open, exactly (output = input), from attack_ms after the burst starts
	// to hold_ms after it ends.
	for i := start + attack + 1; i < end+hold; i++ {
		if y[i] != x[i] {
			t.Fatalf("sample %d (%.2f ms after the burst start): %v out, %v in; the gate should be open",
				i, float64(i-start)/8, y[i], x[i])
		}
	}
	// Then it fades: from the first sample under 1 to the floor in release_ms.
	fadeFrom, fadeTo := -1, -1
	for i := end; i < len(x); i++ {
		if fadeFrom < 0 && gain[i] < 0.999 {
			fadeFrom = i
		}
		if fadeTo < 0 && near(gain[i], closed) {
			fadeTo = i
		}
	}
	t.Logf("open %.2f ms after the burst starts; fades from %.1f ms after it ends, to within 0.5 dB of the floor in %.1f ms",
		float64(firstAtOne(gain, start)-start)/8, float64(fadeFrom-end)/8, float64(fadeTo-fadeFrom)/8)
	// The 5 ms follower takes 5 ms * ln(53) = 20 ms to fall from the burst to
	// the -33 dBFS at which the hold starts.
	if lag := fadeFrom - end - hold; lag < 8*15 || lag > 8*25 {
		t.Errorf("the fade starts %.1f ms after the hold, want 20 ± 5 (the detector's fall)", float64(lag)/8)
	}
	// 0.5 dB short of -20 dB along a steady fall in dB: 19.5/20 of release_ms.
	if d := fadeTo - fadeFrom; math.Abs(float64(d)-release*19.5/20) > 8 {
		t.Errorf("the fade takes %.1f ms to reach the floor, want %.1f ± 1", float64(d)/8, release*19.5/20/8)
	}
	for i := fadeTo; i < len(x); i++ {
		if !near(gain[i], closed) {
			t.Fatalf("sample %d, after the fade: gain %.4f, want %.4f", i, gain[i], closed)
		}
	}
	// No discontinuity: the output steps no more than the input does.
	if in, out := maxStep(x), maxStep(y); out > in {
		t.Errorf("largest step between samples: %.0f out, %.0f in", out, in)
	}
}

func firstAtOne(gain []float64, from int) int {
	for i := from; i < len(gain); i++ {
		if gain[i] == 1 {
			return i
		}
	}
	return len(gain)
}

func TestHoldBridgesShortGaps(t *testing.T) {
	c := hosttest.Catalog(t)
	// Bursts 60 ms apart, less than hold_ms: the gate never closes between
	// them, and they come out unchanged.
	x := noise(1.5, -60, 2)
	for _, at := range []int{2000, 4400, 6800} { // 240 ms bursts, 60 ms gaps
		addTone(x, at, at+1920, -30)
	}
	y := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, ""), signal.FromFloats(x), frameBytes))
	for i := 2000 + 17; i < 6800+1920+800; i++ {
		if y[i] != x[i] {
			t.Fatalf("sample %d: %v out, %v in; the gate closed in a gap shorter than hold_ms", i, y[i], x[i])
		}
	}
	if in, out := maxStep(x), maxStep(y); out > in {
		t.Errorf("largest step between samples: %.0f out, %.0f in", out, in)
	}
}

func TestFramingDoesNotMatter(t *testing.T) {
	c := hosttest.Catalog(t)
	x := noise(3, -50, 4)
	addTone(x, 4000, 8000, -25)
	addTone(x, 12000, 12400, -35)
	pcm := signal.FromFloats(x)
	want := hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, ""), pcm, frameBytes)
	p := hosttest.MustStage(t, c, plugin, "")
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
		t.Error("frames of 1 to 800 samples give other output than 20 ms frames")
	}
}

func TestRejectsBadConfig(t *testing.T) {
	c := hosttest.Catalog(t)
	hosttest.RejectsConfigs(t, c, plugin,
		"threshold_dbfs=3", "threshold_dbfs=low", "attack_ms=-1", "hold_ms=20000",
		"release_ms=-5", "floor_db=6", "floor_db=-100", "hysteresis_db=30",
	)
	if _, err := instantiate(c, "threshold_dbfs=-40 attack_ms=5 hold_ms=50 release_ms=300 floor_db=-30 hysteresis_db=6"); err != nil {
		t.Errorf("every key set: %v", err)
	}
}

// BenchmarkProcess: ns per 20 ms frame through the plugin (and the host's
// one copy), as `voxhost bench hop` measures it, open (speech) and closed
// (quiet noise).
func BenchmarkProcess(b *testing.B) {
	for _, in := range []struct {
		name string
		pcm  []byte
	}{{"speech", signal.Speech(rate, 0.02)}, {"noise-60dBFS", signal.Noise(rate, 0.02, 0.001, 1)}} {
		b.Run(in.name, func(b *testing.B) {
			hosttest.BenchFrames(b, hosttest.MustStage(b, hosttest.Catalog(b), plugin, ""), in.pcm)
		})
	}
}
