//go:build cgo

package resample_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/refresample"
	"github.com/voxhost/voxhost/internal/signal"
)

// toneAmp is the test tones' amplitude: -6 dBFS.
const toneAmp = 0.5 * 32767

// tone is seconds of a sine of integer frequency f at rate: over any whole
// second it is exactly periodic, so a one-second DFT sees it in one bin, and
// since f and the rate share few factors, the 16-bit rounding errors repeat
// only once a second and spread over every bin instead of piling onto a few.
func tone(rate, f, seconds int) []int16 {
	x := make([]int16, rate*seconds)
	for n := range x {
		x[n] = int16(math.Round(toneAmp * math.Sin(2*math.Pi*float64(f)*float64(n)/float64(rate))))
	}
	return x
}

// amplitude is the amplitude of the component at integer frequency f in one
// second (rate samples) of y, by Goertzel's recurrence.
func amplitude(y []int16, rate, f int) float64 {
	w := 2 * math.Pi * float64(f) / float64(rate)
	coeff := 2 * math.Cos(w)
	var s1, s2 float64
	for _, v := range y[:rate] {
		s1, s2 = float64(v)+coeff*s1-s2, s1
	}
	re, im := s1-s2*math.Cos(w), s2*math.Sin(w)
	return 2 * math.Hypot(re, im) / float64(rate)
}

// fold maps a frequency onto the band a signal at rate can carry.
func fold(f, rate int) int {
	f %= rate
	if f > rate/2 {
		f = rate - f
	}
	return f
}

// spurs are the frequencies at which a tone f sampled at from can leave
// images or aliases in a signal at to: k from ± f for the input's images,
// folded at the output rate, all but f itself (where it belongs).
func spurs(f, from, to int) []int {
	seen := map[int]bool{fold(f, to): true}
	var out []int
	if f > to/2 { // a stop-band tone: its alias is the spur
		seen = map[int]bool{}
	}
	for k := 0; k <= 12; k++ {
		for _, v := range []int{k*from - f, k*from + f} {
			if v < 0 {
				continue
			}
			if g := fold(v, to); g > 0 && g < to/2 && !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	return out
}

// resampler runs 16-bit samples from one rate to another.
type resampler struct {
	name string
	run  func(t *testing.T, in []int16, from, to int) []int16
}

func pcm(x []int16) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

// voxhost runs the stock plugin through the host, in 20 ms frames.
func voxhost(c *catalog.Catalog) func(t *testing.T, in []int16, from, to int) []int16 {
	return func(t *testing.T, in []int16, from, to int) []int16 {
		p := hosttest.Pipeline(t, c, fmt.Sprintf("resample to=%d", to), pipeline.CallConfig{InputRate: from})
		defer p.Close(t.Context())
		return signal.Samples(join(process(t, p, pcm(in), from/50, false)))
	}
}

func soxrHQ(t *testing.T, in []int16, from, to int) []int16 {
	out, err := refresample.Soxr(in, from, to, refresample.SoxrHQ)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func speex10(t *testing.T, in []int16, from, to int) []int16 {
	out, err := refresample.Speex(in, from, to, 10)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fidelity is what one resampler did to one pair of rates.
type fidelity struct {
	spur     float64 // the worst image or alias, dB relative to the input tone
	spurAt   string  // which tone left it, and where
	flatness float64 // the largest pass-band gain error, dB
}

// passEdge is where the pass band must be flat to: 3.4 kHz for telephony,
// 7 kHz for wideband, 85% of the lower Nyquist frequency otherwise.
func passEdge(low int) int {
	switch low {
	case 8000:
		return 3400
	case 16000:
		return 7000
	}
	return low / 2 * 85 / 100
}

func measure(t *testing.T, r resampler, from, to int) fidelity {
	low := min(from, to)
	var fid fidelity
	fid.spur = math.Inf(-1)
	edge := passEdge(low)
	// Pass-band tones from 100 Hz to the edge, odd so they share few
	// factors with the rates.
	tones := []int{101, 997, edge*3/10/2*2 + 1, edge/2/2*2 + 1, edge*8/10/2*2 + 1, edge - 1}
	if from > to { // stop-band tones, from just past the output's Nyquist frequency
		nyq := to / 2
		tones = append(tones, nyq*1025/1000+1, nyq*1125/1000+1, nyq*3/2+1, from/2*95/100+1)
	}
	for _, f := range tones {
		out := r.run(t, tone(from, f, 2), from, to)
		if len(out) < 3*to/2 {
			t.Fatalf("%s %d -> %d Hz: %d samples out of 2 s", r.name, from, to, len(out))
		}
		second := out[to/2 : to/2+to] // past the filter's delay and start
		if f <= to/2 {
			gain := 20 * math.Log10(amplitude(second, to, f)/toneAmp)
			fid.flatness = max(fid.flatness, math.Abs(gain))
		}
		for _, g := range spurs(f, from, to) {
			if db := 20 * math.Log10(amplitude(second, to, g)/toneAmp+1e-12); db > fid.spur {
				fid.spur, fid.spurAt = db, fmt.Sprintf("%d Hz at %d Hz", f, g)
			}
		}
	}
	return fid
}

// TestFidelityBesideSoxr: for 8, 16, 24 and 48 kHz to and from each other
// (and 32 kHz from 8), images of pass-band tones and aliases of stop-band
// tones are 100 dB below the tone or more, and the pass band is flat to
// 0.01 dB up to 3.4 kHz (7 kHz at 16 kHz), measured on one second of each
// output with a one-second DFT; libsoxr's 'high quality' recipe and
// SpeexDSP's quality 10 resample the same tones beside it, for the record.
func TestFidelityBesideSoxr(t *testing.T) {
	pairs := [][2]int{{8000, 16000}, {16000, 8000}, {8000, 24000}, {24000, 8000}, {8000, 48000}, {48000, 8000},
		{16000, 24000}, {24000, 16000}, {16000, 48000}, {48000, 16000}, {24000, 48000}, {48000, 24000},
		{8000, 32000}, {32000, 8000}}
	resamplers := []resampler{{"voxhost", voxhost(hosttest.Catalog(t))}, {"soxr HQ", soxrHQ}, {"speex 10", speex10}}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| from → to | voxhost worst image/alias | voxhost flatness | soxr HQ | soxr flatness | speex 10 | speex flatness |\n|---|---|---|---|---|---|---|\n")
	for _, pair := range pairs {
		from, to := pair[0], pair[1]
		fmt.Fprintf(&table, "| %d → %d |", from/1000, to/1000)
		for _, r := range resamplers {
			fid := measure(t, r, from, to)
			fmt.Fprintf(&table, " %.1f dB (%s) | %.4f dB |", fid.spur, fid.spurAt, fid.flatness)
			if r.name != "voxhost" {
				continue
			}
			if fid.spur > -100 {
				t.Errorf("%d -> %d Hz: image or alias at %.1f dB (tone %s), want <= -100", from, to, fid.spur, fid.spurAt)
			}
			if fid.flatness > 0.01 {
				t.Errorf("%d -> %d Hz: pass band off by %.4f dB, want <= 0.01", from, to, fid.flatness)
			}
		}
		table.WriteString("\n")
	}
	t.Log(table.String())
}
