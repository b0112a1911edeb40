//go:build webrtcvad

package vad_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
	"github.com/voxhost/voxhost/internal/spoken"
	"github.com/voxhost/voxhost/plugins/vad/internal/webrtcvad"
)

// The comparison with WebRTC's VAD (Debian's libwebrtc-audio-processing)
// that make bench runs:
//
//	go test -tags webrtcvad -run '^$' -bench WebRTC -benchtime 1x ./plugins/vad/
//
// It needs espeak-ng, sox and libwebrtc-audio-processing-dev (make
// bench-vad installs them). The material: 24 sentences, 3 in each of the 8
// languages of internal/spoken, in rotating voices, between 0.6 and 1.4 s
// of digital silence; white noise at 20, 10 and 5 dB SNR and babble (six
// other talkers, each speaking without pauses) 20 dB below the speech.
//
// The truth is the clean speech's activity: a 10 ms block is speech if a
// sample in it reaches magnitude 100 (-50 dBFS, the fixture's rule), and
// pauses shorter than the detectors' 300 ms hangover are bridged, since
// the events (speech_start .. speech_end) do not end speech for them
// either. The plugin's activity is what its events say; WebRTC's per-block
// decisions (mode 3, 10 ms frames) go through the plugin's own state
// machine (min_speech_ms 100, min_silence_ms 300) so that both are judged
// as the same kind of event stream. Miss is the share of true speech
// blocks not covered, false alarm the share of true non-speech covered;
// latency is from a sentence's true start to the block in which its
// speech_start is known.

const (
	blockMs      = 10
	blockSamples = rate * blockMs / 1000
	hangBlocks   = 30 // min_silence_ms 300
	minSpeech    = 10 // min_speech_ms 100
	maxGapBlocks = 3  // the plugin's pending start survives 30 ms
)

// corpus is the benchmark's speech, its truth and its sentences' starts.
type corpus struct {
	pcm     []byte
	truth   []bool // per block
	starts  []int  // true sentence starts, blocks
	babble  []byte
	speechR float64 // RMS of the speech blocks
}

func makeCorpus(b *testing.B) *corpus {
	all := spoken.All()
	// 24 sentences for the foreground, 6 long streams for the babble, from
	// different voices and texts.
	rng := rand.New(rand.NewPCG(7, 22))
	var fg, bg []spoken.Job
	perLang := map[string]int{}
	for i, j := range rng.Perm(len(all)) {
		job := all[j]
		lang := job.Voice[:2]
		if perLang[lang] < 3 && i%5 == 0 {
			perLang[lang]++
			fg = append(fg, job)
		} else if len(bg) < 6*12 && i%7 == 1 {
			bg = append(bg, job)
		}
	}
	if len(fg) != 24 {
		b.Fatalf("%d foreground sentences", len(fg))
	}
	utts, err := spoken.Render(rate, append(fg, bg...))
	if err != nil {
		b.Fatal(err)
	}
	c := &corpus{}
	parts := [][]byte{signal.Silence(rate, 1000)}
	at := rate // samples
	for _, u := range utts[:24] {
		// Trim each sentence to its samples of magnitude >= 100, so that
		// its start is where it is placed.
		s := signal.Samples(u.PCM)
		first, last := -1, -1
		for i, v := range s {
			if v >= 100 || v <= -100 {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		trimmed := u.PCM[2*first : 2*(last+1)]
		c.starts = append(c.starts, at/blockSamples)
		gap := 600 + rng.IntN(801)
		parts = append(parts, trimmed, signal.Silence(rate, gap))
		at += len(trimmed)/2 + gap*rate/1000
	}
	parts = append(parts, signal.Silence(rate, 200))
	c.pcm = signal.Concat(parts...)
	s := signal.Samples(c.pcm)
	blocks := len(s) / blockSamples
	c.pcm = c.pcm[:2*blocks*blockSamples]
	var active []bool
	active, c.speechR = blockActivity(s[:blocks*blockSamples])
	c.truth = bridge(active, hangBlocks)
	// Babble: six streams, each a talker's sentences without pauses,
	// looped to the corpus' length and summed.
	streams := make([][]byte, 6)
	for i, u := range utts[24:] {
		streams[i%6] = append(streams[i%6], u.PCM...)
	}
	sum6 := make([]float64, len(s))
	for _, st := range streams {
		x := signal.Samples(st)
		for i := range sum6 {
			sum6[i] += float64(x[i%len(x)])
		}
	}
	c.babble = signal.FromFloats(normalise(sum6))
	return c
}

// normalise scales x (sample units) to RMS 0.1 of full scale.
func normalise(x []float64) []float64 {
	var sum float64
	for _, v := range x {
		sum += v * v
	}
	k := 0.1 * 32767 / math.Sqrt(sum/float64(len(x)))
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * k
	}
	return out
}

// activity is a detector's verdict: per block, and the block at which each
// speech_start was known (its emission).
type activity struct {
	speech []bool
	known  []int // block index at which each speech_start was emitted
	starts []int // block each speech_start is dated at
}

// pluginActivity runs pcm through the vad plugin in 20 ms frames.
func pluginActivity(b *testing.B, pcm []byte, blocks int) activity {
	c := hosttest.Catalog(b)
	rec := &timedRecorder{}
	p := hosttest.Pipeline(b, c, "vad", pipeline.CallConfig{Sink: rec})
	src := &pipeline.PCM{}
	for off := 0; off < len(pcm); off += frameBytes {
		src.Frame = pcm[off:min(off+frameBytes, len(pcm))]
		rec.frameEnd = (off + len(src.Frame)) / 2
		if _, err := p.Process(src); err != nil {
			b.Fatal(err)
		}
	}
	rec.frameEnd = len(pcm) / 2
	if err := p.Flush(func([]byte) error { return nil }); err != nil {
		b.Fatal(err)
	}
	a := activity{speech: make([]bool, blocks)}
	open := -1
	for _, e := range rec.events {
		blk := int(e.tMs) / blockMs
		switch e.name {
		case "speech_start":
			open = blk
			a.starts = append(a.starts, blk)
			a.known = append(a.known, (e.at-1)/blockSamples)
		case "speech_end":
			for k := open; k < min(blk, blocks); k++ {
				a.speech[k] = true
			}
			open = -1
		}
	}
	return a
}

type timedEvent struct {
	name string
	tMs  int64
	at   int // samples processed when it arrived
}

type timedRecorder struct {
	frameEnd int
	events   []timedEvent
}

func (r *timedRecorder) Emit(_, name string, data []byte) {
	var d struct {
		TMs int64 `json:"t_ms"`
	}
	_ = json.Unmarshal(data, &d)
	r.events = append(r.events, timedEvent{name, d.TMs, r.frameEnd})
}

// webrtcActivity runs WebRTC's VAD on 10 ms frames and its decisions
// through the plugin's state machine.
func webrtcActivity(b *testing.B, pcm []byte, blocks, mode int) activity {
	v, err := webrtcvad.New(rate, mode)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	s := signal.Samples(pcm)
	raw := make([]bool, blocks)
	for k := range raw {
		if raw[k], err = v.Speech(s[k*blockSamples : (k+1)*blockSamples]); err != nil {
			b.Fatal(err)
		}
	}
	return stateMachine(raw)
}

// stateMachine turns per-block decisions into events as the plugin does
// (src/vad.c): a start pends until its speech spans minSpeech blocks (gaps
// of up to maxGapBlocks), and hangBlocks of non-speech end it.
func stateMachine(raw []bool) activity {
	a := activity{speech: make([]bool, len(raw))}
	const silent, pending, speech = 0, 1, 2
	state, start, lastEnd, gap := silent, 0, 0, 0
	for k, sp := range raw {
		switch state {
		case silent:
			if sp {
				state, start, lastEnd, gap = pending, k, k+1, 0
			}
		case pending, speech:
			if sp {
				gap, lastEnd = 0, k+1
			} else if gap++; state == pending && gap > maxGapBlocks {
				state = silent
			} else if state == speech && gap >= hangBlocks {
				for j := start; j < lastEnd; j++ {
					a.speech[j] = true
				}
				state = silent
			}
		}
		if state == pending && lastEnd-start >= minSpeech {
			state, gap = speech, 0
			a.starts = append(a.starts, start)
			a.known = append(a.known, k)
		}
	}
	if state == speech {
		for j := start; j < lastEnd; j++ {
			a.speech[j] = true
		}
	}
	return a
}

// score is miss and false alarm (%), sentences whose start was never
// reported, the median latency of the reported ones (ms) and the longest
// stretch of detected speech (s).
type score struct {
	miss, fa      float64
	unreported    int
	latencyMs     float64
	longestSpeech float64
}

func judge(c *corpus, a activity) score {
	var sp, nsp, missed, fa int
	for k, t := range c.truth {
		d := a.speech[k]
		if t {
			sp++
			if !d {
				missed++
			}
		} else {
			nsp++
			if d {
				fa++
			}
		}
	}
	sc := score{miss: 100 * float64(missed) / float64(sp), fa: 100 * float64(fa) / float64(nsp)}
	var lat []float64
	for _, st := range c.starts {
		// The first speech_start dated from 200 ms before the sentence to
		// 1 s into it.
		found := false
		for i, ds := range a.starts {
			if ds >= st-20 && ds <= st+100 {
				lat = append(lat, float64((a.known[i]+1-st)*blockMs))
				found = true
				break
			}
		}
		if !found {
			sc.unreported++
		}
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		sc.latencyMs = lat[len(lat)/2]
	}
	run := 0
	for _, d := range a.speech {
		if d {
			run++
			sc.longestSpeech = math.Max(sc.longestSpeech, float64(run*blockMs)/1000)
		} else {
			run = 0
		}
	}
	return sc
}

// BenchmarkWebRTCComparison prints the table in README.md ("Against
// WebRTC's VAD") and reports each condition's figures as metrics.
func BenchmarkWebRTCComparison(b *testing.B) {
	c := makeCorpus(b)
	blocks := len(c.truth)
	conditions := []struct {
		name string
		pcm  []byte
	}{{"clean", c.pcm}}
	for _, snr := range []float64{20, 10, 5} {
		rms := c.speechR * math.Pow(10, -snr/20)
		noise := signal.Noise(rate, float64(len(c.pcm)/2)/rate, rms, uint64(snr))
		conditions = append(conditions, struct {
			name string
			pcm  []byte
		}{fmt.Sprintf("white %g dB", snr), signal.Mix(c.pcm, noise)})
	}
	babble := signal.Floats(c.babble)
	k := c.speechR * math.Pow(10, -20.0/20) / 0.1
	for i := range babble {
		babble[i] *= k
	}
	conditions = append(conditions, struct {
		name string
		pcm  []byte
	}{"babble 20 dB", signal.Mix(c.pcm, signal.FromFloats(babble))})
	var table strings.Builder
	fmt.Fprintf(&table, "%d sentences, %.1f s, speech %.0f%% of the blocks\n", len(c.starts), float64(blocks)/100, 100*float64(count(c.truth))/float64(blocks))
	fmt.Fprintf(&table, "| condition | vad miss %% | vad false alarm %% | WebRTC mode 3 miss %% | WebRTC false alarm %% | vad unreported starts | WebRTC unreported | vad median latency ms | WebRTC latency ms | vad longest speech s | WebRTC longest s |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for range b.N {
		for _, cond := range conditions {
			v := judge(c, pluginActivity(b, cond.pcm, blocks))
			w := judge(c, webrtcActivity(b, cond.pcm, blocks, 3))
			fmt.Fprintf(&table, "| %s | %.1f | %.1f | %.1f | %.1f | %d | %d | %.0f | %.0f | %.1f | %.1f |\n",
				cond.name, v.miss, v.fa, w.miss, w.fa, v.unreported, w.unreported, v.latencyMs, w.latencyMs, v.longestSpeech, w.longestSpeech)
			metric := strings.ReplaceAll(cond.name, " ", "")
			b.ReportMetric(v.miss, metric+"_miss%")
			b.ReportMetric(v.fa, metric+"_fa%")
			b.ReportMetric(w.miss, metric+"_webrtc_miss%")
			b.ReportMetric(w.fa, metric+"_webrtc_fa%")
		}
	}
	b.Log("\n" + table.String())
}

func count(x []bool) int {
	n := 0
	for _, v := range x {
		if v {
			n++
		}
	}
	return n
}
