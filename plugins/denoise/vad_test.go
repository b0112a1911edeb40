package denoise_test

import (
	"encoding/json"
	"math"
	"sync"
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

// starts collects the audio times of vad's speech_start events.
type starts struct {
	mu  sync.Mutex
	tMs []float64
}

func (s *starts) Emit(_, name string, data []byte) {
	if name != "speech_start" {
		return
	}
	var d struct {
		TMs float64 `json:"t_ms"`
	}
	if json.Unmarshal(data, &d) == nil {
		s.mu.Lock()
		s.tMs = append(s.tMs, d.TMs)
		s.mu.Unlock()
	}
}

// onsets runs spec over in and returns vad's speech starts, in ms of in
// (less shiftMs, the latency of the stages before vad).
func onsets(t *testing.T, spec string, in []float64, shiftMs float64) []float64 {
	t.Helper()
	var s starts
	p := hosttest.Pipeline(t, hosttest.Catalog(t), spec, pipeline.CallConfig{InputRate: rate, Sink: &s})
	hosttest.Process(t, p, signal.FromFloats(in), frameBytes)
	for i := range s.tMs {
		s.tMs[i] -= shiftMs
	}
	return s.tMs
}

// found counts the phrases whose start has a speech_start from 100 ms
// before it to 300 ms after, and the speech starts in the pauses: more
// than 100 ms before a phrase or 300 ms after its end (a start inside a
// phrase, after a pause between its words, is speech). The first 500 ms do
// not count: denoise's first block is its latency's silence, and the noise
// after it, before the suppressor has learnt it, is an onset to a VAD (the
// README says so).
func found(truth []float64, spans [][2]float64, got []float64) (hits, inPauses int) {
	for _, start := range truth {
		for _, g := range got {
			if g >= start-100 && g <= start+300 {
				hits++
				break
			}
		}
	}
	for _, g := range got {
		inside := false
		for _, sp := range spans {
			inside = inside || g >= sp[0]-100 && g <= sp[1]+300
		}
		if !inside && g >= 500 {
			inPauses++
		}
	}
	return hits, inPauses
}

// truthStarts are the phrases' first samples at -50 dBFS (100) or louder.
func truthStarts(clean []float64, phrases [][2]int) []float64 {
	var ms []float64
	for _, p := range phrases {
		for i := p[0]; i < p[1]; i++ {
			if math.Abs(clean[i]) >= 100 {
				ms = append(ms, float64(i)*1000/rate)
				break
			}
		}
	}
	return ms
}

// At low SNR a plain vad misses phrase starts, or finds the noise; after
// denoise it finds them, and never starts in the pauses more often. With
// the vad of round 3 (dsp-detectors), plain vad finds all three starts from
// 5 dB up on this fixture; denoise makes the difference at 0 and 2.5 dB.
func TestDenoiseHelpsVADFindPhraseStarts(t *testing.T) {
	clean, phrases := speech(t)
	truth := truthStarts(clean, phrases)
	var spans [][2]float64
	for _, p := range phrases {
		spans = append(spans, [2]float64{float64(p[0]) * 1000 / rate, float64(p[1]) * 1000 / rate})
	}
	better := false
	for _, snrDB := range []float64{0, 2.5, 5, 7.5, 10} {
		noisy := mixAt(clean, white(len(clean), 3), phrases, snrDB)
		plainHits, plainFalse := found(truth, spans, onsets(t, "vad", noisy, 0))
		hits, falseStarts := found(truth, spans, onsets(t, "denoise | vad", noisy, 1000/50))
		t.Logf("white noise at %.1f dB SNR, %d phrases: vad finds %d (and starts %d times in the pauses), denoise | vad %d (%d)",
			snrDB, len(truth), plainHits, plainFalse, hits, falseStarts)
		if hits < len(truth) {
			t.Errorf("at %.1f dB SNR denoise | vad finds %d of %d phrase starts", snrDB, hits, len(truth))
		}
		if falseStarts > plainFalse {
			t.Errorf("at %.1f dB SNR denoise | vad starts in the pauses %d times, plain vad %d", snrDB, falseStarts, plainFalse)
		}
		better = better || hits > plainHits || falseStarts < plainFalse
	}
	if !better {
		t.Error("denoise | vad did no better than vad at any SNR")
	}
}
