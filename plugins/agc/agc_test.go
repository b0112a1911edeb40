package agc_test

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
	win        = 80  // 10 ms analysis windows
)

// plugin is the module under test, as `make plugins` builds it.
const plugin = "agc.wasm"

func instantiate(c *catalog.Catalog, config string) (*pipeline.Pipeline, error) {
	return hosttest.Stage(c, plugin, config, rate, io.Discard)
}

func db(x float64) float64 { return 10 * math.Log10(x) } // of a power ratio

// activeMask marks the 10 ms windows of x within 20 dB of its loudest
// window: the active speech, as ITU-T P.56 counts it, without pauses.
func activeMask(x []float64) []bool {
	pw := make([]float64, len(x)/win)
	top := 0.0
	for w := range pw {
		for _, v := range x[w*win : (w+1)*win] {
			pw[w] += v * v
		}
		top = math.Max(top, pw[w])
	}
	mask := make([]bool, len(pw))
	for w := range pw {
		mask[w] = pw[w] > top/100
	}
	return mask
}

// activeLevel is the RMS in dBFS (of 32767) of x over the windows of mask
// from sample from to sample to.
func activeLevel(x []float64, mask []bool, from, to int) float64 {
	sum, n := 0.0, 0
	for w := from / win; w < to/win && w < len(mask); w++ {
		if !mask[w] {
			continue
		}
		for _, v := range x[w*win : (w+1)*win] {
			sum += v * v
		}
		n += win
	}
	return db(sum / float64(n) / (32767 * 32767))
}

// speechAt returns seconds of signal.Speech scaled to an active level of
// level dBFS (saturating), and the active mask.
func speechAt(level, seconds float64) ([]float64, []bool) {
	x := signal.Floats(signal.Speech(rate, seconds))
	mask := activeMask(x)
	g := math.Pow(10, (level-activeLevel(x, mask, 0, len(x)))/20)
	for i := range x {
		x[i] = math.Max(-32768, math.Min(32767, math.Round(x[i]*g)))
	}
	return x, mask
}

// activeTimeReached returns the first sample at which x has had ms
// milliseconds of 10 ms windows above gateDb: the AGC holds its gain below
// the gate, so its attack and release times count time above it.
func activeTimeReached(x []float64, gateDb, ms float64) int {
	need, have := int(math.Ceil(ms/10)), 0
	for w := 0; (w+1)*win <= len(x); w++ {
		sum := 0.0
		for _, v := range x[w*win : (w+1)*win] {
			sum += v * v
		}
		if db(sum/win/(32767*32767)) > gateDb {
			if have++; have >= need {
				return (w + 1) * win
			}
		}
	}
	return len(x)
}

func TestConvergesToTarget(t *testing.T) {
	c := hosttest.Catalog(t)
	const seconds, block = 8, 2000 // measured in 250 ms windows
	for _, tc := range []struct {
		level  float64 // active speech level of the input, dBFS
		config string
		target float64
		ms     float64 // the time that governs: release_ms going up, attack_ms going down
		noise  float64 // dBFS of white noise under the speech; 0: none
	}{
		{-40, "", -18, 500, 0},
		{-6, "", -18, 10, 0},
		{-40, "release_ms=200", -18, 200, 0},
		{-6, "attack_ms=100", -18, 100, 0},
		{-30, "target_dbfs=-24", -24, 500, 0},
		{-12, "target_dbfs=-26 min_gain_db=-20", -26, 10, 0},
		{-10, "", -18, 10, -60},
		{-35, "", -18, 500, -60},
	} {
		t.Run(fmt.Sprintf("%gdBFS noise=%g %s", tc.level, tc.noise, tc.config), func(t *testing.T) {
			x, mask := speechAt(tc.level, seconds)
			if tc.noise != 0 {
				n := noise(seconds, tc.noise, 1)
				for i := range x {
					x[i] += n[i]
				}
			}
			y := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, tc.config), signal.FromFloats(x), frameBytes))
			start := activeTimeReached(x, -50, tc.ms)
			worst, trace := 0.0, ""
			for from := 0; from+block <= len(x); from += block {
				got := activeLevel(y, mask, from, from+block)
				if math.IsNaN(got) {
					continue // a pause
				}
				trace += fmt.Sprintf(" %.1f", got)
				if from >= start {
					worst = math.Max(worst, math.Abs(got-tc.target))
				}
			}
			all := activeLevel(y, mask, start, len(y))
			t.Logf("converged after %d ms; active level %.2f dBFS after it, worst 250 ms window %.2f dB off; windows:%s",
				start/8, all, worst, trace)
			if worst > 3 {
				t.Errorf("a 250 ms window after %d ms is %.2f dB from the %g dBFS target", start/8, worst, tc.target)
			}
		})
	}
}

// square returns n samples of a 2 kHz square wave of amplitude a: every
// sample has magnitude a, so output/input is the gain, sample by sample.
func square(n int, a float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		if i%4 < 2 {
			x[i] = a
		} else {
			x[i] = -a
		}
	}
	return x
}

func concat(parts ...[]float64) []float64 {
	var x []float64
	for _, p := range parts {
		x = append(x, p...)
	}
	return x
}

func amp(dbfs float64) float64 { return math.Round(32767 * math.Pow(10, dbfs/20)) }

func TestGainIsSmooth(t *testing.T) {
	c := hosttest.Catalog(t)
	// -40 dBFS (the gain climbs toward +22 dB), a 14 dB step up (it falls
	// by 14 dB within the attack time; the output stays under the soft
	// knee, so output/input is the gain), then back down (it climbs again).
	x := concat(square(16000, amp(-40)), square(8000, amp(-26)), square(24000, amp(-40)))
	y := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, ""), signal.FromFloats(x), frameBytes))
	gain := make([]float64, len(x))
	for i := range x {
		gain[i] = 20 * math.Log10(math.Abs(y[i]/x[i]))
	}
	// One 1 ms block moves the gain (dB) at most (max-min) * (1 - 10^(-1/10))
	// toward its goal at the default attack of 10 ms, and a block's linear
	// ramp spreads that over 8 samples; the largest step of the ramp is its
	// last, 1 + (r-1)/8 with r the block's ratio.
	blockDB := 36 * (1 - math.Pow(10, -1.0/10))
	bound := 20 * math.Log10(1+(math.Pow(10, blockDB/20)-1)/8)
	worst, at, worstEdge := 0.0, 0, 0.0
	for i := 1; i < len(gain); i++ {
		d := math.Abs(gain[i] - gain[i-1])
		if d > worst {
			worst, at = d, i
		}
		if i%160 == 0 {
			worstEdge = math.Max(worstEdge, d)
		}
	}
	t.Logf("largest gain step %.3f dB/sample at sample %d (bound %.3f); at a frame edge %.3f dB; gain %.2f dB before the step, %.2f dB at its end, %.2f dB at the end",
		worst, at, bound, worstEdge, gain[16000-1], gain[24000-1], gain[len(gain)-1])
	if worst > bound {
		t.Errorf("the gain jumps %.3f dB between samples %d and %d; a block ramp allows %.3f", worst, at-1, at, bound)
	}
	// After the step up, the short-term level takes over within 10 ms: within
	// attack_ms + 20 ms the gain is within 6 dB (+1) of its goal, and once
	// the 250 ms window holds only the louder audio, on it.
	if g := gain[16000+8*30]; g > 8+7 {
		t.Errorf("gain 30 ms after the step up = %.2f dB, want at most 15", g)
	}
	if g := gain[16000+8*260]; math.Abs(g-8) > 1 {
		t.Errorf("gain 260 ms after the step up = %.2f dB, want 8 ± 1", g)
	}
	// After the step down, within window_ms + release_ms (750 ms).
	if g := gain[24000+8*750]; math.Abs(g-22) > 3 {
		t.Errorf("gain 750 ms after the step down = %.2f dB, want 22 ± 3", g)
	}
	// Settled: the gain stands still.
	if d := math.Abs(gain[len(gain)-1] - gain[len(gain)-161]); d > 0.01 {
		t.Errorf("the settled gain still moves %.3f dB per frame", d)
	}
}

func TestNeverOverflows(t *testing.T) {
	c := hosttest.Catalog(t)
	// Speech driven 18 dB past full scale: square-ish, pinned at the rails.
	loud := signal.Floats(signal.Speech(rate, 4))
	for i := range loud {
		loud[i] = math.Max(-32768, math.Min(32767, loud[i]*8))
	}
	quiet, _ := speechAt(-40, 3)
	for _, tc := range []struct {
		name string
		x    []float64
	}{
		{"full scale from the start", loud},
		// The gain has climbed to about +22 dB when full scale arrives.
		{"full scale after quiet speech", concat(quiet, loud)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, ""), signal.FromFloats(tc.x), frameBytes))
			pinnedIn, pinned, peak := 0, 0, 0.0
			for i, v := range y {
				if math.Abs(tc.x[i]) >= 32767 {
					pinnedIn++
				}
				if math.Abs(v) >= 32767 {
					pinned++
				}
				peak = math.Max(peak, math.Abs(v))
				if v*tc.x[i] < 0 {
					t.Fatalf("sample %d: %v in, %v out: the sign flipped (wrap-around)", i, tc.x[i], v)
				}
			}
			t.Logf("%d of %d input samples at full scale; %d output samples; output peak %.0f", pinnedIn, len(y), pinned, peak)
			if float64(pinned) > 0.001*float64(len(y)) {
				t.Errorf("%d output samples at full scale, more than 0.1%%", pinned)
			}
		})
	}
}

func noise(seconds, dbfs float64, seed uint64) []float64 {
	return signal.Floats(signal.Noise(rate, seconds, math.Pow(10, dbfs/20), seed))
}

func rmsDB(x []float64) float64 {
	sum := 0.0
	for _, v := range x {
		sum += v * v
	}
	return db(sum / float64(len(x)) / (32767 * 32767))
}

func TestSilenceIsNotPumped(t *testing.T) {
	c := hosttest.Catalog(t)
	// Noise under the gate alone: the gain never leaves 0 dB.
	x := noise(5, -60, 7)
	y := hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, ""), signal.FromFloats(x), frameBytes)
	if string(y) != string(signal.FromFloats(x)) {
		t.Errorf("noise at -60 dBFS, under the -50 dBFS gate, was changed: %.2f dBFS in, %.2f out", rmsDB(x), rmsDB(signal.Floats(y)))
	}
	for _, s := range []float64{0, 2, 4} {
		if got := rmsDB(signal.Floats(y)[int(s*rate) : int(s+1)*rate]); math.Abs(got+60) > 0.5 {
			t.Errorf("second %g: %.2f dBFS, want -60 ± 0.5", s, got)
		}
	}
	// Quiet speech, then a long pause of -60 dBFS noise: the gain holds
	// where the speech left it and does not climb toward max_gain_db.
	speech, _ := speechAt(-40, 3.1)
	x = concat(speech, noise(6, -60, 8))
	y2 := signal.Floats(hosttest.ProcessSameLength(t, hosttest.MustStage(t, c, plugin, ""), signal.FromFloats(x), frameBytes))
	pause := y2[len(speech):]
	first, last := rmsDB(pause[4000:12000]), rmsDB(pause[len(pause)-8000:])
	t.Logf("noise in the pause after -40 dBFS speech: %.2f dBFS in its 2nd second, %.2f in its 6th", first, last)
	if math.Abs(last-first) > 0.5 || last > -60+24-1 {
		t.Errorf("the pause's noise went from %.2f to %.2f dBFS: the gain moved below the gate", first, last)
	}
}

func TestFramingDoesNotMatter(t *testing.T) {
	c := hosttest.Catalog(t)
	x, _ := speechAt(-30, 3)
	pcm := signal.FromFloats(concat(x, noise(1, -60, 3), square(4000, amp(-10))))
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
		"target_dbfs=0", "target_dbfs=loud", "max_gain_db=-1", "max_gain_db=41",
		"min_gain_db=3", "attack_ms=0", "release_ms=0", "gate_dbfs=-5", "window_ms=2.5", "window_ms=5000",
	)
	if _, err := instantiate(c, "target_dbfs=-20 max_gain_db=30 min_gain_db=-6 attack_ms=5 release_ms=800 gate_dbfs=-55 window_ms=400"); err != nil {
		t.Errorf("every key set: %v", err)
	}
}

// BenchmarkProcess: ns per 20 ms frame through the plugin (and the host's
// one copy), as `voxhost bench hop` measures it, on speech and on quiet
// noise (under the gate).
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
