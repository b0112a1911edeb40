package signal_test

import (
	"math"
	"testing"

	"github.com/voxhost/voxhost/internal/signal"
)

// goertzelPower measures the power of one frequency, independently of how
// the signal was made.
func goertzelPower(pcm []byte, rate int, freq float64) float64 {
	s := signal.Samples(pcm)
	coeff := 2 * math.Cos(2*math.Pi*freq/float64(rate))
	var q1, q2 float64
	for _, x := range s {
		q0 := coeff*q1 - q2 + float64(x)
		q2, q1 = q1, q0
	}
	return q1*q1 + q2*q2 - coeff*q1*q2
}

func TestDTMFHasItsTwoFrequencies(t *testing.T) {
	tone := signal.DTMF(8000, '5', 100, 0.3, 3, 0)
	low, high, _ := signal.DTMFFrequencies('5')
	pl, ph := goertzelPower(tone, 8000, low), goertzelPower(tone, 8000, high)
	other := goertzelPower(tone, 8000, 1477)
	if pl < 100*other || ph < 100*other {
		t.Fatalf("key 5: %v Hz %.3g, %v Hz %.3g, 1477 Hz %.3g", low, pl, high, ph, other)
	}
	if twist := 10 * math.Log10(ph/pl); math.Abs(twist-3) > 0.5 {
		t.Fatalf("twist = %.2f dB, want 3", twist)
	}
	if _, _, ok := signal.DTMFFrequencies('E'); ok {
		t.Fatal("E is not a key")
	}
}

func TestNoiseLevelAndMix(t *testing.T) {
	n := signal.Noise(8000, 2, 0.1, 7)
	if rms := signal.RMS(n); math.Abs(rms-0.1) > 0.005 {
		t.Fatalf("noise RMS %.4f, want 0.1", rms)
	}
	if string(n) != string(signal.Noise(8000, 2, 0.1, 7)) {
		t.Fatal("same seed, different noise")
	}
	loud := signal.Mix(signal.Tone(8000, 1000, 0.9, 0.1), signal.Tone(8000, 1000, 0.9, 0.1))
	if s := signal.Samples(loud); s[2] != 32767 && s[2] > 0 {
		t.Fatalf("mix must saturate, got %d", s[2])
	}
	if len(signal.Concat(signal.Silence(8000, 20), signal.Silence(8000, 40))) != 960 {
		t.Fatal("concat of 60 ms at 8 kHz must be 960 bytes")
	}
}
