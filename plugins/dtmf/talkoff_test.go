package dtmf_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/voxhost/voxhost/internal/signal"
	"github.com/voxhost/voxhost/internal/spoken"
)

// BenchmarkTalkOff counts the keys the detector finds in speech, which has
// none: every sentence of internal/spoken in every voice variant and speed
// (8 languages, 9 variants, 2 speeds; espeak-ng and sox needed), 200 ms of
// silence between sentences, clean and through G.711 mu-law. It is a
// measurement, not a test (the material needs tools make test does not
// install): go test -run '^$' -bench TalkOff -benchtime 1x ./plugins/dtmf/
func BenchmarkTalkOff(b *testing.B) {
	utts, err := spoken.Render(rate, spoken.All())
	if err != nil {
		b.Fatal(err)
	}
	var parts [][]byte
	for _, u := range utts {
		parts = append(parts, u.PCM, signal.Silence(rate, 200))
	}
	speech := signal.Concat(parts...)
	minutes := float64(len(speech)/2) / rate / 60
	ulaw := ulawRoundTrip(speech)
	b.ResetTimer()
	for range b.N {
		clean := detect(b, "", rate, speech, rate*frameMs/1000)
		law := detect(b, "", rate, ulaw, rate*frameMs/1000)
		b.ReportMetric(minutes, "speech_min")
		b.ReportMetric(float64(len(clean.digits))/minutes, "keys/min")
		b.ReportMetric(float64(len(law.digits))/minutes, "ulaw_keys/min")
		if clean.digits != "" || law.digits != "" {
			b.Logf("%.1f minutes of speech: %q clean, %q through mu-law", minutes, clean.digits, law.digits)
		}
	}
}

// BenchmarkTalkOffMusic plays ten minutes of sustained two-note sine music
// (random pairs of equal-tempered notes from C4 to C7, each note -16 dBFS,
// held 250 to 750 ms, no gaps) and sorts each key found by how far the
// pair playing was from that key's two frequencies: within 1.5% (a key by
// Q.24's rule, which must be found), 1.5 to 3.5% (either way), beyond 3.5%
// (a talk-off error). Pure two-note chords on the keys' frequencies are
// DTMF, so music is measured rather than required to give nothing.
func BenchmarkTalkOffMusic(b *testing.B) {
	const seconds = 600
	rng := rand.New(rand.NewPCG(22, 1))
	note := func() float64 { return 440 * math.Pow(2, float64(rng.IntN(37)-9)/12) } // C4..C7
	type chord struct {
		low, high  float64
		start, end int
	}
	var chords []chord
	var parts [][]byte
	at := 0
	for at < seconds*rate {
		lo, hi := note(), note()
		if lo > hi {
			lo, hi = hi, lo
		}
		ms := 250 + rng.IntN(501)
		n := ms * rate / 1000
		chords = append(chords, chord{lo, hi, at, at + n})
		parts = append(parts, dualTone(rate, lo, hi, ms, 0.158, at)) // -16 dBFS each
		at += n
	}
	music := signal.Concat(parts...)
	// deviation is how far the chord is from the key, the larger of its two
	// tones' relative errors.
	deviation := func(c chord, key byte) float64 {
		low, high, _ := signal.DTMFFrequencies(key)
		return math.Max(math.Abs(c.low/low-1), math.Abs(c.high/high-1))
	}
	b.ResetTimer()
	for range b.N {
		res := detect(b, "", rate, music, rate*frameMs/1000)
		var valid, between, wrong int
		for i := range res.digits {
			key := res.digits[i]
			// The key is emitted in the frame that ends at res.at, 26 to
			// 40 ms into the chord that made it: the nearest of the chords
			// playing in the 60 ms before.
			d, c := math.Inf(1), chord{}
			for _, ch := range chords {
				if ch.start < res.at[i] && ch.end > res.at[i]-60*rate/1000 && deviation(ch, key) < d {
					d, c = deviation(ch, key), ch
				}
			}
			switch {
			case d <= 0.015:
				valid++
			case d < 0.035:
				between++
			default:
				wrong++
				b.Logf("key %c on %.1f + %.1f Hz (%.1f%% off)", key, c.low, c.high, 100*d)
			}
		}
		// Chords that are a key by Q.24 and were not found.
		var missed int
		for _, c := range chords {
			for k := range allKeys {
				if deviation(c, allKeys[k]) <= 0.015 {
					missed++
					for i := range res.digits {
						if res.at[i] > c.start && res.at[i] <= c.end {
							missed--
							break
						}
					}
				}
			}
		}
		minutes := float64(seconds) / 60
		b.ReportMetric(float64(len(res.digits))/minutes, "keys/min")
		b.ReportMetric(float64(wrong)/minutes, "off>3.5%/min")
		b.Logf("%d chords in %.0f minutes: %d keys within 1.5%% of a key's pair, %d between 1.5 and 3.5%%, %d beyond 3.5%%; %d chords within 1.5%% not found",
			len(chords), minutes, valid, between, wrong, missed)
	}
}
