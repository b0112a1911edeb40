package vad_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

const (
	rate        = 8000
	frameBytes  = 320 // 20 ms at 8 kHz
	toleranceMs = 60
)

// fixture is testdata/speech_8k.wav and its table of true boundaries,
// testdata/boundaries.json (testdata/gen.go renders both).
type fixture struct {
	Rate      int `json:"rate"`
	Threshold int `json:"threshold"`
	Samples   int `json:"samples"`
	Phrases   []struct {
		Text        string  `json:"text"`
		StartSample int     `json:"start_sample"`
		EndSample   int     `json:"end_sample"`
		StartMs     float64 `json:"start_ms"`
		EndMs       float64 `json:"end_ms"`
	} `json:"phrases"`
	pcm []byte
}

func loadFixture(t *testing.T) *fixture {
	t.Helper()
	js, err := os.ReadFile("testdata/boundaries.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(js, &f); err != nil {
		t.Fatal(err)
	}
	pcm, r, err := audiofile.ReadPCM("testdata/speech_8k.wav")
	if err != nil {
		t.Fatal(err)
	}
	if r != rate || f.Rate != rate || len(pcm)/2 != f.Samples {
		t.Fatalf("fixture: %d samples at %d Hz, table says %d at %d Hz", len(pcm)/2, r, f.Samples, f.Rate)
	}
	f.pcm = pcm
	return &f
}

// TestFixtureTable checks the boundary table against the rule it was
// derived by: a phrase spans from its first to its last sample whose
// magnitude reaches the threshold, and silence lies between phrases.
func TestFixtureTable(t *testing.T) {
	f := loadFixture(t)
	s := signal.Samples(f.pcm)
	loud := func(v int16) bool { return int(v) >= f.Threshold || int(v) <= -f.Threshold }
	prev := 0
	for _, p := range f.Phrases {
		if !loud(s[p.StartSample]) || !loud(s[p.EndSample-1]) {
			t.Fatalf("%q: the samples at its boundaries are below the threshold", p.Text)
		}
		for i := prev; i < p.StartSample; i++ {
			if loud(s[i]) {
				t.Fatalf("sample %d before %q is above the threshold", i, p.Text)
			}
		}
		if p.StartMs != float64(p.StartSample)*1000/rate || p.EndMs != float64(p.EndSample)*1000/rate {
			t.Fatalf("%q: ms and samples disagree", p.Text)
		}
		prev = p.EndSample
	}
	for i := prev; i < len(s); i++ {
		if loud(s[i]) {
			t.Fatalf("sample %d after the last phrase is above the threshold", i)
		}
	}
}

type event struct {
	Name string
	TMs  int64
}

type recorder struct {
	t      *testing.T
	events []event
}

// Emit records speech events with their time and clear, which carries no
// data, with TMs -1.
func (r *recorder) Emit(_, name string, data []byte) {
	if name == abi.EmitClear {
		if len(data) != 0 {
			r.t.Errorf("event clear has data %q, want none", data)
		}
		r.events = append(r.events, event{name, -1})
		return
	}
	var d struct {
		TMs *int64 `json:"t_ms"`
	}
	if err := json.Unmarshal(data, &d); err != nil || d.TMs == nil {
		r.t.Errorf("event %s has data %q, want {\"t_ms\":N}", name, data)
		return
	}
	r.events = append(r.events, event{name, *d.TMs})
}

// detect runs pcm through spec in frames of frame bytes, flushes, and
// returns the output and the events.
func detect(t *testing.T, c *catalog.Catalog, spec string, pcm []byte, frame int) ([]byte, []event) {
	t.Helper()
	rec := &recorder{t: t}
	p, err := hosttest.Instantiate(c, spec, pipeline.CallConfig{Sink: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	var out []byte
	src := &pipeline.PCM{}
	for off := 0; off < len(pcm); off += frame {
		src.Frame = pcm[off:min(off+frame, len(pcm))]
		view, err := p.Process(src)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, view...)
	}
	if err := p.Flush(func(tail []byte) error { out = append(out, tail...); return nil }); err != nil {
		t.Fatal(err)
	}
	return out, rec.events
}

// phraseRMS is the RMS of the fixture over its phrases only.
func phraseRMS(f *fixture) float64 {
	var speech []byte
	for _, p := range f.Phrases {
		speech = append(speech, f.pcm[2*p.StartSample:2*p.EndSample]...)
	}
	return signal.RMS(speech)
}

// withNoise adds white noise snrDB below the speech level of the phrases.
func withNoise(f *fixture, snrDB float64, seed uint64) []byte {
	rms := phraseRMS(f) * math.Pow(10, -snrDB/20)
	return signal.Mix(f.pcm, signal.Noise(rate, float64(f.Samples)/rate+1, rms, seed))
}

// checkBoundaries wants one speech_start and one speech_end per phrase,
// each within toleranceMs of the truth, and returns the errors in ms
// (detected minus true).
func checkBoundaries(t *testing.T, f *fixture, events []event, delayMs float64) []float64 {
	t.Helper()
	if len(events) != 2*len(f.Phrases) {
		t.Fatalf("events %v, want a speech_start and a speech_end for each of %d phrases", events, len(f.Phrases))
	}
	var errs []float64
	for i, p := range f.Phrases {
		for j, want := range []struct {
			name string
			ms   float64
		}{{"speech_start", p.StartMs}, {"speech_end", p.EndMs}} {
			e := events[2*i+j]
			d := float64(e.TMs) - want.ms - delayMs
			if e.Name != want.name || math.Abs(d) > toleranceMs {
				t.Errorf("phrase %d: event %s at %d ms, want %s at %.1f ms ± %d ms", i+1, e.Name, e.TMs, want.name, want.ms+delayMs, toleranceMs)
			}
			errs = append(errs, d)
		}
	}
	return errs
}

func formatErrs(errs []float64) string {
	var b strings.Builder
	for i, e := range errs {
		fmt.Fprintf(&b, "%s%+.1f", map[bool]string{true: "", false: " "}[i == 0], e)
	}
	return b.String()
}

// TestBoundariesInWhiteNoise: at 20 dB SNR (the requirement) and at 15 dB
// (margin), over several noise seeds.
func TestBoundariesInWhiteNoise(t *testing.T) {
	f := loadFixture(t)
	c := hosttest.Catalog(t)
	for _, snr := range []float64{20, 15} {
		for seed := uint64(1); seed <= 5; seed++ {
			_, events := detect(t, c, "vad", withNoise(f, snr, seed), frameBytes)
			errs := checkBoundaries(t, f, events, 0)
			t.Logf("%.0f dB SNR, seed %d: boundary errors (ms; start, end of each phrase): %s", snr, seed, formatErrs(errs))
		}
	}
}

func TestBoundariesClean(t *testing.T) {
	f := loadFixture(t)
	_, events := detect(t, hosttest.Catalog(t), "vad", f.pcm, frameBytes)
	t.Logf("boundary errors (ms): %s", formatErrs(checkBoundaries(t, f, events, 0)))
}

// TestSensitivityRange: the whole range of sensitivities still finds both
// phrases at 20 dB SNR with the right boundaries.
func TestSensitivityRange(t *testing.T) {
	f := loadFixture(t)
	c := hosttest.Catalog(t)
	pcm := withNoise(f, 20, 7)
	for _, s := range []string{"0", "0.25", "0.75", "1"} {
		_, events := detect(t, c, "vad sensitivity="+s, pcm, frameBytes)
		t.Logf("sensitivity %s: boundary errors (ms): %s", s, formatErrs(checkBoundaries(t, f, events, 0)))
	}
}

func TestNoEventsOnNoise(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, dbfs := range []float64{-40, -25} {
		for seed := uint64(1); seed <= 3; seed++ {
			for _, sens := range []string{"0.5", "1"} {
				noise := signal.Noise(rate, 5, math.Pow(10, dbfs/20), seed)
				_, events := detect(t, c, "vad sensitivity="+sens, noise, frameBytes)
				if len(events) != 0 {
					t.Errorf("white noise at %.0f dBFS (seed %d, sensitivity %s): events %v, want none", dbfs, seed, sens, events)
				}
			}
		}
	}
}

// TestNoiseStep: noise that gets 20 dB louder for good reads as speech at
// most for the ~3 s the minimum-statistics guard needs to catch up.
func TestNoiseStep(t *testing.T) {
	c := hosttest.Catalog(t)
	pcm := signal.Concat(signal.Noise(rate, 3, 0.003, 1), signal.Noise(rate, 15, 0.03, 2))
	_, events := detect(t, c, "vad", pcm, frameBytes)
	if len(events) > 2 {
		t.Fatalf("events %v, want at most one start and one end", events)
	}
	if len(events) == 2 && events[1].TMs > 3000+4000 {
		t.Fatalf("the noise step was taken for speech until %d ms", events[1].TMs)
	}
	t.Logf("noise step at 3000 ms: events %v", events)
}

func TestAudioPassesThroughBitIdentical(t *testing.T) {
	f := loadFixture(t)
	c := hosttest.Catalog(t)
	pcm := withNoise(f, 20, 3)
	for _, frame := range []int{frameBytes, 16, 1600} {
		out, _ := detect(t, c, "vad", pcm, frame)
		if string(out) != string(pcm) {
			t.Fatalf("frames of %d bytes: the output differs from the input", frame)
		}
	}
}

// TestFrameSizeDoesNotMatter: the events depend on the samples alone, not
// on how the host cuts them into frames.
func TestFrameSizeDoesNotMatter(t *testing.T) {
	f := loadFixture(t)
	c := hosttest.Catalog(t)
	pcm := withNoise(f, 20, 4)
	_, want := detect(t, c, "vad", pcm, frameBytes)
	for _, frame := range []int{16, 48, 1600} {
		if _, got := detect(t, c, "vad", pcm, frame); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("frames of %d bytes: events %v, with 20 ms frames %v", frame, got, want)
		}
	}
}

func TestFlushEndsOngoingSpeech(t *testing.T) {
	f := loadFixture(t)
	p := f.Phrases[1]
	cut := (p.StartSample + p.EndSample) / 2 / 80 * 80 // mid-phrase, on a 10 ms block
	_, events := detect(t, hosttest.Catalog(t), "vad", withNoise(f, 20, 5)[:2*cut], frameBytes)
	if len(events) != 4 || events[3].Name != "speech_end" {
		t.Fatalf("events %v, want the second phrase's speech_end from the flush", events)
	}
	if end := float64(events[3].TMs); end > float64(cut)*1000/rate || end < float64(cut)*1000/rate-toleranceMs {
		t.Fatalf("flushed speech_end at %v ms, want shortly before the cut at %v ms", end, float64(cut)*1000/rate)
	}
}

func TestMinSpeechAndHangover(t *testing.T) {
	f := loadFixture(t)
	c := hosttest.Catalog(t)
	pcm := withNoise(f, 20, 6)
	// A hangover longer than the 800 ms pause merges the two phrases.
	_, events := detect(t, c, "vad min_silence_ms=1000", pcm, frameBytes)
	if len(events) != 2 || events[0].Name != "speech_start" || events[1].Name != "speech_end" {
		t.Fatalf("min_silence_ms=1000: events %v, want one start and one end", events)
	}
	if d := float64(events[1].TMs) - f.Phrases[1].EndMs; math.Abs(d) > toleranceMs {
		t.Fatalf("min_silence_ms=1000: speech_end %d ms, want %.1f", events[1].TMs, f.Phrases[1].EndMs)
	}
	// Speech shorter than min_speech_ms is not speech: a 150 ms burst.
	burst := signal.Concat(signal.Silence(rate, 500), signal.Tone(rate, 500, 0.3, 0.15), signal.Silence(rate, 1000))
	burst = signal.Mix(burst, signal.Noise(rate, 2, 0.003, 1))
	if _, events := detect(t, c, "vad min_speech_ms=200", burst, frameBytes); len(events) != 0 {
		t.Fatalf("min_speech_ms=200: a 150 ms burst gave events %v", events)
	}
	if _, events := detect(t, c, "vad min_speech_ms=100", burst, frameBytes); len(events) != 2 {
		t.Fatalf("min_speech_ms=100: a 150 ms burst gave events %v, want a start and an end", events)
	}
}

// TestAt16kHz: behind a resampler the detector runs at 16 kHz; the
// boundaries move by the resampler's 3.5 ms delay only.
func TestAt16kHz(t *testing.T) {
	f := loadFixture(t)
	c := hosttest.Catalog(t)
	_, events := detect(t, c, "resample to=16000 | vad | resample to=8000", withNoise(f, 20, 1), frameBytes)
	t.Logf("16 kHz: boundary errors (ms): %s", formatErrs(checkBoundaries(t, f, events, 3.5)))
}

// TestBargeIn: with barge_in=true a clear follows each speech_start at
// once, and nothing else changes; without it (or with barge_in=false)
// no clear comes.
func TestBargeIn(t *testing.T) {
	f := loadFixture(t)
	c := hosttest.Catalog(t)
	for _, in := range []struct {
		name string
		pcm  []byte
	}{{"clean", f.pcm}, {"20 dB SNR", withNoise(f, 20, 2)}} {
		_, plain := detect(t, c, "vad", in.pcm, frameBytes)
		checkBoundaries(t, f, plain, 0)
		for _, spec := range []string{"vad", "vad barge_in=false"} {
			_, events := detect(t, c, spec, in.pcm, frameBytes)
			for _, e := range events {
				if e.Name == abi.EmitClear {
					t.Fatalf("%s, %s: events %v, want no clear", in.name, spec, events)
				}
			}
		}
		for _, frame := range []int{frameBytes, 16, 1600} {
			_, events := detect(t, c, "vad barge_in=true", in.pcm, frame)
			var speech []event
			for i, e := range events {
				if e.Name == abi.EmitClear {
					continue
				}
				speech = append(speech, e)
				next := ""
				if i+1 < len(events) {
					next = events[i+1].Name
				}
				if (e.Name == abi.EmitSpeechStart) != (next == abi.EmitClear) {
					t.Fatalf("%s, frames of %d bytes: events %v, want a clear right after each speech_start and nowhere else", in.name, frame, events)
				}
			}
			if len(events) != len(speech)+len(f.Phrases) {
				t.Fatalf("%s, frames of %d bytes: events %v, want one clear per phrase", in.name, frame, events)
			}
			if fmt.Sprint(speech) != fmt.Sprint(plain) {
				t.Fatalf("%s, frames of %d bytes: speech events %v with barge_in, %v without", in.name, frame, speech, plain)
			}
		}
	}
}

func TestBadConfig(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, spec := range []string{
		"vad sensitivity=1.5", "vad sensitivity=-0.1", "vad sensitivity=high",
		"vad min_speech_ms=-10", "vad min_speech_ms=true", "vad min_silence_ms=20000", "vad min_silence_ms=soon",
		"vad barge_in=yes", "vad barge_in=1", "vad barge_in=0", "vad barge_in=True", "vad barge_in=on", "vad barge_in=null",
	} {
		var log strings.Builder
		p, err := hosttest.Instantiate(c, spec, pipeline.CallConfig{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		var perr *plugin.Error
		if err == nil {
			p.Close(context.Background())
		}
		if !errors.As(err, &perr) || perr.Status != abi.StatusBadConfig {
			t.Errorf("%s: err = %v, want vox_init status -2", spec, err)
		}
		if key, _, _ := strings.Cut(strings.TrimPrefix(spec, "vad "), "="); !strings.Contains(log.String(), key) || !strings.Contains(log.String(), "must be") {
			t.Errorf("%s: the log does not say what %s must be: %q", spec, key, log.String())
		}
	}
	// Values a YAML config can give that an inline spec cannot: JSON null,
	// the string "true".
	for _, v := range []any{nil, "true", "false"} {
		def, err := c.Definition(context.Background(), "test", []pipeline.StageSpec{{Plugin: "vad", Config: map[string]any{"barge_in": v}}})
		if err == nil {
			var p *pipeline.Pipeline
			if p, err = def.Instantiate(context.Background(), pipeline.CallConfig{}); err == nil {
				p.Close(context.Background())
			}
		}
		var perr *plugin.Error
		if !errors.As(err, &perr) || perr.Status != abi.StatusBadConfig {
			t.Errorf("barge_in %#v: err = %v, want vox_init status -2", v, err)
		}
	}
	for _, spec := range []string{"vad", "vad sensitivity=0 min_speech_ms=0 min_silence_ms=0", "vad sensitivity=1 min_speech_ms=10000 min_silence_ms=10000", "vad barge_in=true", "vad barge_in=false sensitivity=0.7"} {
		p, err := hosttest.Instantiate(c, spec, pipeline.CallConfig{})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		p.Close(context.Background())
	}
}

func TestUnsupportedRate(t *testing.T) {
	c := hosttest.Catalog(t)
	_, err := hosttest.Instantiate(c, "vad", pipeline.CallConfig{InputRate: 8050})
	var perr *plugin.Error
	if !errors.As(err, &perr) || perr.Status != abi.StatusBadRate {
		t.Fatalf("8050 Hz: err = %v, want vox_rate status -3", err)
	}
}

func BenchmarkVAD(b *testing.B) {
	c := hosttest.Catalog(b)
	p, err := hosttest.Instantiate(c, "vad", pipeline.CallConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	src := &pipeline.PCM{Frame: signal.Speech(rate, 0.02)}
	b.ResetTimer()
	for range b.N {
		if _, err := p.Process(src); err != nil {
			b.Fatal(err)
		}
	}
}
