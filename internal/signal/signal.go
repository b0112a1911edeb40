// Package signal generates deterministic test audio as PCM16LE: tones and a
// speech-like signal (voiced harmonics under a syllable envelope). Tests,
// benchmarks, the load generator and the CLI share it, so every one of them
// feeds the host the same audio.
package signal

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
)

// Tone returns seconds of a sine of freq Hz at amplitude amp (0..1 of full
// scale), sampled at rate Hz.
func Tone(rate int, freq, amp, seconds float64) []byte {
	n := int(seconds * float64(rate))
	pcm := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		v := amp * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(math.Round(v))))
	}
	return pcm
}

// Speech returns seconds of a speech-like signal sampled at rate Hz: a
// fundamental that glides between 100 and 180 Hz with its first twelve
// harmonics falling off at 6 dB/octave, under a 4 Hz syllable envelope with
// short pauses. It exercises the full 16-bit range, as voice does, without a
// committed recording.
func Speech(rate int, seconds float64) []byte {
	n := int(seconds * float64(rate))
	pcm := make([]byte, 2*n)
	phase := 0.0
	for i := 0; i < n; i++ {
		t := float64(i) / float64(rate)
		f0 := 140 + 40*math.Sin(2*math.Pi*0.7*t)
		phase += 2 * math.Pi * f0 / float64(rate)
		v := 0.0
		for h := 1; h <= 12; h++ {
			if float64(h)*f0 >= float64(rate)/2 {
				break
			}
			v += math.Sin(float64(h)*phase) / float64(h)
		}
		env := math.Max(0, math.Sin(2*math.Pi*4*t))
		if math.Mod(t, 1.5) > 1.2 {
			env = 0 // a pause between phrases
		}
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(clip(0.55*32767*env*v)))
	}
	return pcm
}

// Samples decodes PCM16LE into samples, for comparisons.
func Samples(pcm []byte) []int16 {
	out := make([]int16, len(pcm)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(pcm[2*i:]))
	}
	return out
}

// dtmfLow and dtmfHigh are the ITU-T Q.23 row and column frequencies.
var (
	dtmfLow  = [4]float64{697, 770, 852, 941}
	dtmfHigh = [4]float64{1209, 1336, 1477, 1633}
	dtmfKeys = [4]string{"123A", "456B", "789C", "*0#D"}
)

// DTMFFrequencies returns the row and column frequencies of a key
// (0-9 * # A-D), and false for any other byte.
func DTMFFrequencies(key byte) (low, high float64, ok bool) {
	for r, row := range dtmfKeys {
		for c := range row {
			if row[c] == key {
				return dtmfLow[r], dtmfHigh[c], true
			}
		}
	}
	return 0, 0, false
}

// DTMF returns ms milliseconds of a key's dual tone sampled at rate Hz:
// each component at amp of full scale, the high one twistDB louder (a
// negative twist makes it quieter), both frequencies scaled by (1+deviation)
// (e.g. 0.015 for the +1.5% Q.23 allows). It panics on a byte that is not a key.
func DTMF(rate int, key byte, ms int, amp, twistDB, deviation float64) []byte {
	low, high, ok := DTMFFrequencies(key)
	if !ok {
		panic(fmt.Sprintf("signal: %q is not a DTMF key", key))
	}
	low, high = low*(1+deviation), high*(1+deviation)
	ampHigh := amp * math.Pow(10, twistDB/20)
	n := ms * rate / 1000
	pcm := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		t := float64(i) / float64(rate)
		v := 32767 * (amp*math.Sin(2*math.Pi*low*t) + ampHigh*math.Sin(2*math.Pi*high*t))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(clip(v)))
	}
	return pcm
}

// Silence returns ms milliseconds of zeros at rate Hz.
func Silence(rate, ms int) []byte { return make([]byte, 2*(ms*rate/1000)) }

// Noise returns seconds of white noise at rate Hz with RMS rms (0..1 of
// full scale), the same for the same seed.
func Noise(rate int, seconds, rms float64, seed uint64) []byte {
	n := int(seconds * float64(rate))
	pcm := make([]byte, 2*n)
	rng := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(clip(rng.NormFloat64()*rms*32767)))
	}
	return pcm
}

// Mix adds b into a copy of a, sample by sample, saturating; the result is
// as long as a.
func Mix(a, b []byte) []byte {
	out := make([]byte, len(a))
	for i := 0; i+1 < len(a); i += 2 {
		v := float64(int16(binary.LittleEndian.Uint16(a[i:])))
		if i+1 < len(b) {
			v += float64(int16(binary.LittleEndian.Uint16(b[i:])))
		}
		binary.LittleEndian.PutUint16(out[i:], uint16(clip(v)))
	}
	return out
}

// RMS is the root mean square of the samples, 0..1 of full scale.
func RMS(pcm []byte) float64 {
	n := len(pcm) / 2
	if n == 0 {
		return 0
	}
	sum := 0.0
	for i := 0; i < n; i++ {
		v := float64(int16(binary.LittleEndian.Uint16(pcm[2*i:]))) / 32767
		sum += v * v
	}
	return math.Sqrt(sum / float64(n))
}

// Concat joins PCM buffers.
func Concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func clip(v float64) int16 {
	return int16(math.Max(-32768, math.Min(32767, math.Round(v))))
}

// Floats decodes PCM16LE into samples as float64, for DSP in tests.
func Floats(pcm []byte) []float64 {
	s := Samples(pcm)
	x := make([]float64, len(s))
	for i, v := range s {
		x[i] = float64(v)
	}
	return x
}

// FromFloats encodes samples as PCM16LE, rounding and saturating.
func FromFloats(x []float64) []byte {
	pcm := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(clip(v)))
	}
	return pcm
}
