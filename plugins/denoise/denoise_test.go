package denoise_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

const (
	rate       = 8000
	frameBytes = 320
	// latency is the suppressor's: one 20 ms block.
	latency = rate / 50
)

// speech is the caller's voice of the aec fixtures between stretches of
// silence: pauses to measure the noise in, phrases to measure the speech.
func speech(t testing.TB) (clean []float64, phrases [][2]int) {
	t.Helper()
	pcm, r, err := audiofile.ReadPCM("../aec/testdata/caller_8k.wav")
	if err != nil || r != rate {
		t.Fatalf("fixture: %v at %d Hz", err, r)
	}
	voice := signal.Floats(pcm)
	gap := make([]float64, rate) // 1 s of silence
	for _, piece := range [][2]int{{0, 2 * rate}, {2 * rate, 4 * rate}, {4 * rate, len(voice)}} {
		clean = append(clean, gap...)
		phrases = append(phrases, [2]int{len(clean), len(clean) + piece[1] - piece[0]})
		clean = append(clean, voice[piece[0]:piece[1]]...)
	}
	return append(clean, gap...), phrases
}

// white is Gaussian noise; babble is talkers at once, the voice of
// the bot fixture at offsets through it, each a different pitch by
// resampling: babble from a crowd is near stationary, as NOISEX-92's is.
func white(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 2))
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

func babble(t testing.TB, n, talkers int) []float64 {
	pcm, _, err := audiofile.ReadPCM("../aec/testdata/bot_8k.wav")
	if err != nil {
		t.Fatal(err)
	}
	voice := signal.Floats(pcm)
	x := make([]float64, n)
	for k := range talkers {
		speed := 0.8 + 0.4*float64(k)/float64(talkers)
		start := float64(k * len(voice) / talkers)
		for i := range x {
			p := int(start+float64(i)*speed) % len(voice)
			x[i] += voice[p]
		}
	}
	return x
}

// mixAt adds noise to clean at snrDB over the phrases (speech power over
// noise power).
func mixAt(clean, noise []float64, phrases [][2]int, snrDB float64) []float64 {
	var ps, n float64
	for _, p := range phrases {
		for i := p[0]; i < p[1]; i++ {
			ps += clean[i] * clean[i]
			n++
		}
	}
	pn := 0.0
	for _, v := range noise {
		pn += v * v
	}
	g := math.Sqrt(ps / n / (pn / float64(len(noise))) / math.Pow(10, snrDB/10))
	out := make([]float64, len(clean))
	for i := range out {
		out[i] = clean[i] + g*noise[i]
	}
	return out
}

func run(t testing.TB, spec string, in []float64) []float64 {
	t.Helper()
	p := hosttest.Pipeline(t, hosttest.Catalog(t), spec, pipeline.CallConfig{InputRate: rate})
	return signal.Floats(hosttest.Process(t, p, signal.FromFloats(in), frameBytes))
}

func power(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return s / float64(len(x))
}

// correlation is the normalised correlation of a and b.
func correlation(a, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += a[i] * b[i]
		aa += a[i] * a[i]
		bb += b[i] * b[i]
	}
	return ab / math.Sqrt(aa*bb)
}

// The targets (issue 23): at 5 dB SNR of white or babble-like noise, the
// noise in the pauses drops by 12 dB or more and the speech keeps a
// correlation of 0.9 or more with the clean speech. SpeexDSP's noise
// estimate follows the spectrum's minima, which lie under babble's mean:
// alone it took 9.8 dB of twenty talkers off; the plugin's over-subtraction
// (oversubtract_db, src/denoise.c) is what reaches the 12 dB.
func TestNoiseDropsAndSpeechStays(t *testing.T) {
	clean, phrases := speech(t)
	for _, c := range []struct {
		name    string
		noise   []float64
		minDrop float64
	}{
		{"white", white(len(clean), 1), 12},
		{"babble", babble(t, len(clean), 20), 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			noisy := mixAt(clean, c.noise, phrases, 5)
			out := run(t, "denoise", noisy)
			// Pauses: the last half of each second of silence before a
			// phrase (the suppressor learns the noise in the first).
			var before, after float64
			for _, p := range phrases[1:] {
				from, to := p[0]-rate/2, p[0]-latency
				before += power(noisy[from:to])
				after += power(out[from+latency : to+latency])
			}
			drop := 10 * math.Log10(before/after)
			var cleanSpeech, outSpeech, noisySpeech []float64
			for _, p := range phrases {
				cleanSpeech = append(cleanSpeech, clean[p[0]:p[1]]...)
				noisySpeech = append(noisySpeech, noisy[p[0]:p[1]]...)
				outSpeech = append(outSpeech, out[p[0]+latency:min(p[1]+latency, len(out))]...)
			}
			corr := correlation(cleanSpeech[:len(outSpeech)], outSpeech)
			t.Logf("%s noise at 5 dB SNR: the pauses drop %.1f dB; speech correlation with the clean %.3f (%.3f before)",
				c.name, drop, corr, correlation(cleanSpeech, noisySpeech))
			if drop < c.minDrop {
				t.Errorf("the noise in the pauses drops %.1f dB, want >= %.0f dB", drop, c.minDrop)
			}
			if corr < 0.9 {
				t.Errorf("the speech's correlation with the clean speech is %.3f, want >= 0.9", corr)
			}
		})
	}
}

func TestConfigIsChecked(t *testing.T) {
	for _, spec := range []string{"denoise suppress_db=5", "denoise suppress_db=loud", "denoise supress_db=-20", "denoise oversubtract_db=-1", "denoise oversubtract_db=21"} {
		if _, err := hosttest.Instantiate(hosttest.Catalog(t), spec, pipeline.CallConfig{InputRate: rate}); err == nil {
			t.Errorf("%s was accepted", spec)
		}
	}
	if _, err := hosttest.Instantiate(hosttest.Catalog(t), "denoise", pipeline.CallConfig{InputRate: 48000}); err == nil {
		t.Error("48 kHz was accepted")
	}
}

func TestZeroAllocationsPerFrame(t *testing.T) {
	p := hosttest.Pipeline(t, hosttest.Catalog(t), "denoise", pipeline.CallConfig{InputRate: rate})
	src := &pipeline.PCM{Frame: signal.Speech(rate, 0.02)}
	if n := testing.AllocsPerRun(500, func() {
		if _, err := p.Process(src); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations a frame", n)
	}
}
