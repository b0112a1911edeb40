package resample_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"strconv"
	"testing"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

// delay is the documented group delay of one resampler, in samples at the
// lower of its two rates.
const delay = 57

// process pushes pcm through p in frames of frame samples (the last one may
// be shorter) and returns the output of each frame; with flush, the tail the
// flush releases is the last element.
func process(t *testing.T, p *pipeline.Pipeline, pcm []byte, frame int, flush bool) [][]byte {
	t.Helper()
	var outs [][]byte
	src := &pipeline.PCM{}
	for off := 0; off < len(pcm); off += 2 * frame {
		src.Frame = pcm[off:min(off+2*frame, len(pcm))]
		view, err := p.Process(src)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, append([]byte(nil), view...))
	}
	if flush {
		var tail []byte
		if err := p.Flush(func(pcm []byte) error { tail = append(tail, pcm...); return nil }); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, tail)
	}
	return outs
}

func join(parts [][]byte) []byte { return signal.Concat(parts...) }

// bestLag is the lag d in [0, maxLag] that maximises the normalised
// cross-correlation of out[n+d] with in[n].
func bestLag(in, out []float64, maxLag int) int {
	best, bestLag := math.Inf(-1), 0
	for d := 0; d <= maxLag; d++ {
		var xy, yy float64
		for n := 0; n < len(in) && n+d < len(out); n++ {
			xy += in[n] * out[n+d]
			yy += out[n+d] * out[n+d]
		}
		if c := xy / math.Sqrt(yy+1e-9); c > best {
			best, bestLag = c, d
		}
	}
	return bestLag
}

// snr compares out[n+d] with in[n] over n in [skip, len(in)-skip).
func snr(in, out []float64, d, skip int) float64 {
	var sig, noise float64
	for n := skip; n < len(in)-skip; n++ {
		e := out[n+d] - in[n]
		sig += in[n] * in[n]
		noise += e * e
	}
	return 10 * math.Log10(sig/noise)
}

// TestRoundTrip: 8 kHz up to R and back down, through the host pipeline in
// 20 ms frames. The total delay, found by cross-correlation on noise, is
// twice the documented group delay; a 1 kHz sine comes back with an SNR of
// at least 90 dB once it is compensated.
func TestRoundTrip(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, mid := range []int{16000, 24000, 32000, 48000} {
		spec := fmt.Sprintf("resample to=%d | resample to=8000", mid)
		// The delay, from band-limited noise (a sine's correlation repeats
		// every period).
		noise := signal.Noise(8000, 1, 0.1, 1)
		p := hosttest.Pipeline(t, c, spec, pipeline.CallConfig{})
		out := join(process(t, p, noise, 160, true))
		if len(out) != len(noise)+2*2*delay {
			t.Fatalf("%s: %d bytes out for %d in, want the input plus the flushed tail of 2x%d samples", spec, len(out), len(noise), delay)
		}
		d := bestLag(signal.Floats(noise), signal.Floats(out), 200)
		if d != 2*delay {
			t.Fatalf("%s: total delay %d samples, want %d", spec, d, 2*delay)
		}
		// The sine.
		sine := signal.Tone(8000, 1000, 0.5, 1)
		p = hosttest.Pipeline(t, c, spec, pipeline.CallConfig{})
		in, got := signal.Floats(sine), signal.Floats(join(process(t, p, sine, 160, true)))
		ratio := snr(in, got, d, 200)
		t.Logf("8000 -> %d -> 8000 Hz: delay %d samples (%.1f ms), 1 kHz sine SNR %.1f dB", mid, d, float64(d)/8, ratio)
		if ratio < 90 {
			t.Errorf("%s: 1 kHz sine SNR %.1f dB, want >= 90", spec, ratio)
		}
	}
}

// TestOutputCount: every frame comes out exactly ratio times as long.
func TestOutputCount(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, tc := range []struct {
		spec   string
		in     int
		frame  int // input samples per frame
		factor float64
	}{
		{"resample to=16000", 8000, 160, 2},
		{"resample to=24000", 8000, 160, 3},
		{"resample to=32000", 8000, 160, 4},
		{"resample to=48000", 8000, 160, 6},
		{"resample to=8000", 16000, 320, 0.5},
		{"resample to=8000", 24000, 480, 1.0 / 3},
		{"resample to=8000", 48000, 960, 1.0 / 6},
		{"resample to=16000", 48000, 960, 1.0 / 3},
		{"resample to=8000", 8000, 160, 1},
		{"resample to=24000", 16000, 320, 1.5},
		{"resample to=16000", 24000, 480, 2.0 / 3},
		{"resample to=48000", 32000, 640, 1.5},
	} {
		p := hosttest.Pipeline(t, c, tc.spec, pipeline.CallConfig{InputRate: tc.in})
		pcm := signal.Speech(tc.in, 0.2)
		for i, out := range process(t, p, pcm, tc.frame, false) {
			if want := int(math.Round(float64(2*tc.frame) * tc.factor)); len(out) != want {
				t.Fatalf("%s from %d Hz: frame %d gave %d bytes, want %d", tc.spec, tc.in, i, len(out), want)
			}
		}
	}
}

// TestFramingDoesNotMatter: the output of 20 ms frames equals the output of
// the whole signal handed over as one frame, and of ragged frames, sample
// for sample: the filter history carries over frame edges exactly.
func TestFramingDoesNotMatter(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, tc := range []struct {
		spec    string
		in      int
		seconds float64 // the whole signal, as one frame of up to 16 KiB
		frames  []int   // input samples per frame besides 20 ms
	}{
		{"resample to=16000", 8000, 0.4, []int{8, 24, 168, 7, 1}},
		{"resample to=48000", 8000, 0.15, []int{8, 40, 3}},
		{"resample to=8000", 16000, 0.4, []int{16, 48, 17, 1}},
		{"resample to=8000", 48000, 0.15, []int{48, 96, 5, 7}},
		{"resample to=24000", 16000, 0.3, []int{32, 7, 3, 1}},
		{"resample to=16000", 24000, 0.3, []int{48, 7, 5, 1}},
	} {
		// A 440 Hz sine plus a little noise.
		pcm := signal.Mix(signal.Tone(tc.in, 440, 0.5, tc.seconds), signal.Noise(tc.in, tc.seconds, 0.05, 2))
		cfg := pipeline.CallConfig{InputRate: tc.in, MaxFrameMs: int(tc.seconds*1000) + 10}
		whole := join(process(t, hosttest.Pipeline(t, c, tc.spec, cfg), pcm, len(pcm)/2, false))
		if len(whole) == 0 {
			t.Fatalf("%s: no output", tc.spec)
		}
		for _, frame := range append([]int{tc.in / 50}, tc.frames...) {
			got := join(process(t, hosttest.Pipeline(t, c, tc.spec, cfg), pcm, frame, false))
			if string(got) != string(whole) {
				t.Fatalf("%s from %d Hz: frames of %d samples differ from one frame of %d", tc.spec, tc.in, frame, len(pcm)/2)
			}
		}
	}
}

// TestNoJumpAtFrameEdges: a sine upsampled frame by frame has no larger
// sample-to-sample step at frame edges than anywhere else.
func TestNoJumpAtFrameEdges(t *testing.T) {
	c := hosttest.Catalog(t)
	p := hosttest.Pipeline(t, c, "resample to=16000", pipeline.CallConfig{})
	out := signal.Samples(join(process(t, p, signal.Tone(8000, 1000, 0.9, 1), 160, false)))
	// A 1 kHz sine of amplitude 0.9 at 16 kHz moves at most
	// 0.9*32767*2*sin(pi*1000/16000) per sample.
	limit := 0.9*32767*2*math.Sin(math.Pi*1000/16000) + 2
	for i := 2 * 2 * delay; i < len(out); i++ { // after the filter has filled
		if step := math.Abs(float64(out[i]) - float64(out[i-1])); step > limit {
			t.Fatalf("step of %.0f at sample %d (frame edge: %v), limit %.0f", step, i, i%320 == 0, limit)
		}
	}
}

// fft is an in-place radix-2 FFT; len(x) is a power of 2.
func fft(x []complex128) {
	n := len(x)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			x[i], x[j] = x[j], x[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		w := cmplx.Exp(complex(0, -2*math.Pi/float64(size)))
		for start := 0; start < n; start += size {
			wk := complex(1, 0)
			for k := 0; k < size/2; k++ {
				a, b := x[start+k], x[start+k+size/2]*wk
				x[start+k], x[start+k+size/2] = a+b, a-b
				wk *= w
			}
		}
	}
}

// spectrum is the Welch power spectrum (Blackman-Harris windows of 2048
// samples, half overlapping), bins from 0 to rate/2.
func spectrum(pcm []byte) []float64 {
	const n = 2048
	x := signal.Floats(pcm)
	win := make([]float64, n)
	for i := range win {
		a := 2 * math.Pi * float64(i) / n
		win[i] = 0.35875 - 0.48829*math.Cos(a) + 0.14128*math.Cos(2*a) - 0.01168*math.Cos(3*a)
	}
	power := make([]float64, n/2+1)
	buf := make([]complex128, n)
	for start := 0; start+n <= len(x); start += n / 2 {
		for i := range buf {
			buf[i] = complex(x[start+i]*win[i], 0)
		}
		fft(buf)
		for k := range power {
			power[k] += real(buf[k])*real(buf[k]) + imag(buf[k])*imag(buf[k])
		}
	}
	return power
}

// bandDB is the energy above edge Hz relative to the energy below it, in dB.
func bandDB(power []float64, rate int, edge float64) float64 {
	var lo, hi float64
	for k, p := range power {
		if f := float64(k) * float64(rate) / float64(2*(len(power)-1)); f <= edge {
			lo += p
		} else {
			hi += p
		}
	}
	return 10 * math.Log10(hi/lo)
}

// sweep is a linear sine sweep from f0 to f1 Hz.
func sweep(rate int, f0, f1, amp, seconds float64) []byte {
	n := int(seconds * float64(rate))
	out := make([]int16, n)
	for i := range out {
		t := float64(i) / float64(rate)
		phase := 2 * math.Pi * (f0*t + (f1-f0)*t*t/(2*seconds))
		out[i] = int16(math.Round(amp * 32767 * math.Sin(phase)))
	}
	pcm := make([]byte, 2*n)
	for i, v := range out {
		pcm[2*i], pcm[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
	return pcm
}

// TestNoImagesAbove4kHz: upsampled white noise and a 100-3900 Hz sweep carry
// no energy above 4 kHz beyond -85 dB relative to the energy below it: the
// 16-bit output's own rounding noise, spread over the band, is about that
// (quality_test.go measures single images, to -100 dB and below).
func TestNoImagesAbove4kHz(t *testing.T) {
	c := hosttest.Catalog(t)
	inputs := map[string][]byte{
		"white noise": signal.Noise(8000, 4, 0.2, 3),
		"sweep":       sweep(8000, 100, 3900, 0.5, 4),
	}
	for _, to := range []int{16000, 24000, 48000} {
		for _, name := range []string{"white noise", "sweep"} {
			p := hosttest.Pipeline(t, c, "resample to="+strconv.Itoa(to), pipeline.CallConfig{})
			out := join(process(t, p, inputs[name], 160, false))
			power := spectrum(out)
			above := bandDB(power, to, 4000)
			// Beyond the transition band the images are gone entirely.
			beyond := bandDB(power, to, 4500)
			t.Logf("%s at %d Hz: energy above 4 kHz %.1f dB, above 4.5 kHz %.1f dB (relative to below)", name, to, above, beyond)
			if above > -85 {
				t.Errorf("%s at %d Hz: energy above 4 kHz is %.1f dB, want <= -85", name, to, above)
			}
		}
	}
}

// TestDownsamplingRejectsAliases: tones above 4 kHz at 16 or 48 kHz do not
// fold back into the 8 kHz output; a tone in the pass band keeps its level.
func TestDownsamplingRejectsAliases(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, in := range []int{16000, 48000} {
		for _, f := range []float64{1000, 4100, 5000, 6000, 7000} {
			p := hosttest.Pipeline(t, c, "resample to=8000", pipeline.CallConfig{InputRate: in})
			tone := signal.Tone(in, f, 0.5, 1)
			out := join(process(t, p, tone, in/50, false))
			gain := 20 * math.Log10(signal.RMS(out[2*2*delay:])/signal.RMS(tone))
			t.Logf("%d Hz to 8000 Hz: a %.0f Hz tone comes out at %.1f dB", in, f, gain)
			if f < 4000 && math.Abs(gain) > 0.1 {
				t.Errorf("%d Hz: %.0f Hz tone at %.2f dB, want 0", in, f, gain)
			}
			if f > 4000 && gain > -85 {
				t.Errorf("%d Hz: %.0f Hz tone aliases at %.1f dB, want <= -85", in, f, gain)
			}
		}
	}
}

// TestConstantStaysConstant: each polyphase branch has unit gain exactly.
func TestConstantStaysConstant(t *testing.T) {
	c := hosttest.Catalog(t)
	dc := make([]byte, 2*8000)
	for i := 0; i < len(dc); i += 2 {
		dc[i], dc[i+1] = 0xe8, 0x03 // 1000
	}
	for _, to := range []int{16000, 24000, 48000} {
		p := hosttest.Pipeline(t, c, "resample to="+strconv.Itoa(to), pipeline.CallConfig{})
		out := signal.Samples(join(process(t, p, dc, 160, false)))
		settled := to / 8000 * 2 * delay
		for i := settled; i < len(out); i++ {
			if out[i] != 1000 {
				t.Fatalf("%d Hz: sample %d = %d, want 1000", to, i, out[i])
			}
		}
	}
}

// TestClearDropsHistory: after a barge-in clear the resampler behaves as a
// fresh one.
func TestClearDropsHistory(t *testing.T) {
	c := hosttest.Catalog(t)
	a, b := signal.Speech(8000, 0.5), signal.Tone(8000, 700, 0.3, 0.5)
	p := hosttest.Pipeline(t, c, "resample to=16000", pipeline.CallConfig{})
	process(t, p, a, 160, false)
	if err := p.Event(abi.EventClear, 0, nil); err != nil {
		t.Fatal(err)
	}
	got := join(process(t, p, b, 160, false))
	want := join(process(t, hosttest.Pipeline(t, c, "resample to=16000", pipeline.CallConfig{}), b, 160, false))
	if string(got) != string(want) {
		t.Fatal("after clear, the output differs from a fresh resampler's")
	}
}

func TestBadConfigAndRates(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, tc := range []struct {
		spec   string
		in     int
		status int32
	}{
		{"resample", 8000, abi.StatusBadConfig},
		{"resample to=fast", 8000, abi.StatusBadConfig},
		{"resample to=16000.5", 8000, abi.StatusBadConfig},
		{"resample to=-8000", 8000, abi.StatusBadConfig},
		{"resample to=44100", 8000, abi.StatusBadRate},
		{"resample to=40000", 8000, abi.StatusBadRate}, // x5
		{"resample to=10000", 8000, abi.StatusBadRate}, // x5/4
		{"resample to=8000", 44100, abi.StatusBadRate}, // /5.5125
		{"resample to=96000", 8000, abi.StatusBadRate}, // x12
	} {
		p, err := hosttest.Instantiate(c, tc.spec, pipeline.CallConfig{InputRate: tc.in})
		if err == nil {
			p.Close(context.Background())
		}
		var perr *plugin.Error
		if !errors.As(err, &perr) || perr.Status != tc.status {
			t.Errorf("%s from %d Hz: err = %v, want status %d", tc.spec, tc.in, err, tc.status)
		}
	}
}

func benchmark(b *testing.B, spec string) {
	c := hosttest.Catalog(b)
	p := hosttest.Pipeline(b, c, spec, pipeline.CallConfig{})
	src := &pipeline.PCM{Frame: signal.Speech(8000, 0.02)}
	b.ResetTimer()
	for range b.N {
		if _, err := p.Process(src); err != nil {
			b.Fatal(err)
		}
	}
}

// The benchmarks time one 20 ms 8 kHz frame through the chain.
func BenchmarkUp2(b *testing.B)        { benchmark(b, "resample to=16000") }
func BenchmarkUp6(b *testing.B)        { benchmark(b, "resample to=48000") }
func BenchmarkRoundTrip2(b *testing.B) { benchmark(b, "resample to=16000 | resample to=8000") }
func BenchmarkRoundTrip6(b *testing.B) { benchmark(b, "resample to=48000 | resample to=8000") }
