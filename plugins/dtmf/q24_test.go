package dtmf_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/voxhost/voxhost/internal/signal"
)

// group says which tone of a key a test moves off its nominal frequency.
type group int

const (
	lowGroup group = iota
	highGroup
	bothGroups
)

func (g group) String() string { return [...]string{"row", "column", "both"}[g] }

// dualTone is ms milliseconds of two sines at rate Hz, each at amp of full
// scale, with phase continuous from sample `from` of an endless tone (so
// that cutting a window of it out leaves the tone's phase running). It
// computes the samples itself, from the frequencies given, rather than
// through signal.DTMF, which moves both tones together.
func dualTone(rate int, low, high float64, ms int, amp float64, from int) []byte {
	n := ms * rate / 1000
	pcm := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		t := float64(from+i) / float64(rate)
		v := 32767 * amp * (math.Sin(2*math.Pi*low*t) + math.Sin(2*math.Pi*high*t))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(math.Round(v))))
	}
	return pcm
}

// offKeys is the 16 keys, toneMs on and gapMs off after lead samples of
// silence, with g's tone(s) scaled by 1+deviation.
func offKeys(r int, g group, deviation float64, toneMs, gapMs, lead int) []byte {
	parts := [][]byte{make([]byte, 2*lead)}
	for i := 0; i < len(allKeys); i++ {
		low, high, _ := signal.DTMFFrequencies(allKeys[i])
		if g != highGroup {
			low *= 1 + deviation
		}
		if g != lowGroup {
			high *= 1 + deviation
		}
		parts = append(parts, dualTone(r, low, high, toneMs, toneAmp, 0), signal.Silence(r, gapMs))
	}
	return signal.Concat(parts...)
}

// TestQ24FrequencyTolerance: Q.24's frequency rule at its two boundaries,
// for the row tone alone, the column tone alone and both: at +-1.5% the 16
// keys at the Q.23 minimum timing (40 ms on, 40 ms off) are all found at
// every alignment; at +-3.5% not one key is, in 40 ms and in 200 ms tones,
// clean and in 20 dB noise. Also at 16 kHz.
func TestQ24FrequencyTolerance(t *testing.T) {
	for _, r := range []int{8000, 16000} {
		for _, g := range []group{lowGroup, highGroup, bothGroups} {
			for _, dev := range []float64{-0.015, 0.015} {
				for _, lead := range leads(r) {
					pcm := offKeys(r, g, dev, 40, 40, lead)
					if got := detect(t, "", r, pcm, r/50).digits; got != allKeys {
						t.Errorf("%d Hz, %s %+.1f%%, lead %d: got %q, want all 16 keys", r, g, 100*dev, lead, got)
					}
				}
			}
			for _, dev := range []float64{-0.035, 0.035} {
				for _, toneMs := range []int{40, 200} {
					for _, lead := range leads(r) {
						pcm := offKeys(r, g, dev, toneMs, 60, lead)
						if got := detect(t, "", r, pcm, r/50).digits; got != "" {
							t.Errorf("%d Hz, %s %+.1f%%, %d ms tones, lead %d: got %q, want no key", r, g, 100*dev, toneMs, lead, got)
						}
						rms := toneAmp * math.Pow(10, -20.0/20)
						noisy := signal.Mix(pcm, signal.Noise(r, float64(len(pcm)/2)/float64(r), rms, uint64(lead+1)))
						if got := detect(t, "", r, noisy, r/50).digits; got != "" {
							t.Errorf("%d Hz, %s %+.1f%%, %d ms tones in 20 dB noise, lead %d: got %q, want no key", r, g, 100*dev, toneMs, lead, got)
						}
					}
				}
			}
		}
	}
}

// TestQ24DropOut: a break of 10 ms or less inside a key is bridged: one
// key, whether the tone's phase runs on through the break or restarts after
// it, at every alignment; a 40 ms pause (TestDuration) separates two.
func TestQ24DropOut(t *testing.T) {
	for _, key := range []byte{'1', '5', '9', 'D'} {
		low, high, _ := signal.DTMFFrequencies(key)
		for _, breakMs := range []int{5, 10} {
			for _, lead := range leads(rate) {
				on := 200 * rate / 1000
				off := breakMs * rate / 1000
				running := signal.Concat(make([]byte, 2*lead), dualTone(rate, low, high, 200, toneAmp, 0),
					signal.Silence(rate, breakMs), dualTone(rate, low, high, 200, toneAmp, on+off), signal.Silence(rate, 100))
				restarted := signal.Concat(make([]byte, 2*lead), dualTone(rate, low, high, 200, toneAmp, 0),
					signal.Silence(rate, breakMs), dualTone(rate, low, high, 200, toneAmp, 0), signal.Silence(rate, 100))
				for name, pcm := range map[string][]byte{"phase running": running, "phase restarted": restarted} {
					if got := keys8k(t, "", pcm); got != string(key) {
						t.Errorf("%c, %d ms break, %s, lead %d: got %q, want one key", key, breakMs, name, lead, got)
					}
				}
			}
		}
	}
}

// TestQ24Margins measures where each group's frequency rule turns (the
// figures in README.md); go test -v -run Q24Margins.
func TestQ24Margins(t *testing.T) {
	found := func(g group, dev float64) int {
		n := 0
		for _, lead := range leads(rate) {
			n += len(keys8k(t, "", offKeys(rate, g, dev, 100, 60, lead)))
		}
		return n
	}
	total := 16 * len(leads(rate))
	for _, g := range []group{lowGroup, highGroup, bothGroups} {
		var line string
		for _, sign := range []float64{1, -1} {
			accept, reject := math.NaN(), math.NaN()
			for d := 0.0; d <= 0.05; d += 0.001 {
				n := found(g, sign*d)
				if n == total {
					accept = d
				}
				if n == 0 {
					reject = d
					break
				}
			}
			line += fmt.Sprintf("  %c: all found to %.1f%%, none from %.1f%%", "+-"[(1-int(sign))/2], 100*accept, 100*reject)
		}
		t.Logf("%s tone off its frequency, 100 ms tones, %d alignments:%s", g, len(leads(rate)), line)
	}
}

// TestQ24Twist: the twist limits at their boundaries, at every alignment:
// the high tone 8 dB louder than the low one (normal twist) or 4 dB quieter
// (reverse twist) is a key; 10 dB and 6 dB beyond them are not.
func TestQ24Twist(t *testing.T) {
	for _, c := range []struct {
		twistDB float64
		want    string
	}{{8, allKeys}, {-4, allKeys}, {10, ""}, {-6, ""}} {
		for _, lead := range leads(rate) {
			s := q23()
			s.lead, s.twistDB = lead, c.twistDB
			if c.twistDB > 0 {
				s.amp = toneAmp / 2 // room for the louder tone below full scale
			}
			if got := keys8k(t, "", s.pcm(rate)); got != c.want {
				t.Errorf("twist %+g dB, lead %d: got %q, want %q", c.twistDB, lead, got, c.want)
			}
		}
	}
}
