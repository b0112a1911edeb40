// Package signal generates deterministic test audio as PCM16LE: tones and a
// speech-like signal (voiced harmonics under a syllable envelope). Tests,
// benchmarks, the load generator and the CLI share it, so every one of them
// feeds the host the same audio.
package signal

import (
	"encoding/binary"
	"math"
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
		s := math.Round(0.55 * 32767 * env * v)
		s = math.Max(-32768, math.Min(32767, s))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(s)))
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
