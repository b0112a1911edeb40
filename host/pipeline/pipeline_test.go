package pipeline_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
	"github.com/voxhost/voxhost/plugins"
)

const frameBytes = 320 // 20 ms of PCM16 at 8 kHz

func newCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.New(rt, "")
	t.Cleanup(func() {
		c.Close(ctx)
		rt.Close(ctx)
	})
	return c
}

func build(t testing.TB, c *catalog.Catalog, spec string, cfg pipeline.CallConfig) *pipeline.Pipeline {
	t.Helper()
	specs, err := pipeline.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	def, err := c.Definition(context.Background(), "test", specs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := def.Instantiate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// fixture names a test module of host/plugin by path, as a stage spec does.
func fixture(name string) string {
	return filepath.Join("..", "plugin", "testdata", name+".wasm")
}

// gainExpected is the independent computation the gain plugin must match:
// x * 10^(db/20), rounded and saturated, in float64.
func gainExpected(pcm []byte, db float64) []int16 {
	g := math.Pow(10, db/20)
	in := signal.Samples(pcm)
	out := make([]int16, len(in))
	for i, x := range in {
		out[i] = int16(math.Max(-32768, math.Min(32767, math.Round(float64(x)*g))))
	}
	return out
}

func within1LSB(t *testing.T, got, want []int16) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d samples, want %d", len(got), len(want))
	}
	for i := range got {
		if d := int(got[i]) - int(want[i]); d < -1 || d > 1 {
			t.Fatalf("sample %d = %d, want %d ±1", i, got[i], want[i])
		}
	}
}

func run(t *testing.T, p *pipeline.Pipeline, pcm []byte) []byte {
	t.Helper()
	var out []byte
	src := &pipeline.PCM{}
	for off := 0; off < len(pcm); off += frameBytes {
		src.Frame = pcm[off:min(off+frameBytes, len(pcm))]
		view, err := p.Process(src)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, view...)
	}
	return out
}

func TestGainMatchesIndependentComputation(t *testing.T) {
	c := newCatalog(t)
	speech := signal.Speech(8000, 2)
	for _, db := range []float64{-6, 0, 6, -20, 12} {
		p := build(t, c, "gain db="+strconv.FormatFloat(db, 'f', -1, 64), pipeline.CallConfig{})
		within1LSB(t, signal.Samples(run(t, p, speech)), gainExpected(speech, db))
	}
	// +12 dB drives the speech past full scale: saturation, not wrap-around.
	loud := gainExpected(speech, 12)
	clipped := 0
	for _, s := range loud {
		if s == 32767 || s == -32768 {
			clipped++
		}
	}
	if clipped == 0 {
		t.Fatal("the +12 dB case never saturates; the test signal is too quiet to check saturation")
	}
}

func TestTrappingStageIsBypassedWithoutLosingTheFrame(t *testing.T) {
	c := newCatalog(t)
	var faults []pipeline.Fault
	p := build(t, c, "gain db=-6 | "+fixture("trap")+" | passthrough", pipeline.CallConfig{
		OnFault: func(f pipeline.Fault) { faults = append(faults, f) },
	})
	speech := signal.Speech(8000, 0.2) // 10 frames; the plugin traps in the third
	within1LSB(t, signal.Samples(run(t, p, speech)), gainExpected(speech, -6))
	if len(faults) != 1 || faults[0].Stage != 1 || !faults[0].Bypassed {
		t.Fatalf("faults = %+v, want one bypass of stage 1", faults)
	}
	if want := "plugin trap.wasm: trap in vox_process at frame 3: unreachable"; faults[0].Err.Error() != want {
		t.Fatalf("fault = %q, want %q", faults[0].Err, want)
	}
	if !p.Bypassed(1) || p.Bypassed(0) || p.Bypassed(2) {
		t.Fatal("only stage 1 should be out of the chain")
	}
}

func TestRunawayStageIsStoppedAndBypassed(t *testing.T) {
	// A stage that never returns from vox_process is stopped at its budget;
	// the frame goes on without it, as does the call, and a call running
	// beside it is not held up.
	c := newCatalog(t)
	var faults []pipeline.Fault
	const budget = 200 * time.Millisecond
	p := build(t, c, "gain db=-6 | "+fixture("loop_process")+" budget_ms=200 | passthrough", pipeline.CallConfig{
		OnFault: func(f pipeline.Fault) { faults = append(faults, f) },
	})
	other := build(t, c, "gain db=-6 | passthrough", pipeline.CallConfig{})
	speech := signal.Speech(8000, 0.2)
	first := speech[:frameBytes]
	type result struct {
		out  []int16
		took time.Duration
		err  error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		out, err := p.Process(&pipeline.PCM{Frame: first})
		done <- result{signal.Samples(out), time.Since(start), err}
	}()
	// While the runaway frame runs, the other call handles ten frames.
	within1LSB(t, signal.Samples(run(t, other, speech)), gainExpected(speech, -6))
	otherTook := time.Since(start)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if otherTook >= budget {
		t.Fatalf("the other call took %v, as long as the runaway stage's budget", otherTook)
	}
	// The budget counts the thread's CPU time, which a loaded machine
	// stretches in wall time without bound; host/plugin's tests check how
	// much CPU time the stopped call used.
	if r.took < budget {
		t.Fatalf("the runaway frame took %v; budget %v", r.took, budget)
	}
	within1LSB(t, r.out, gainExpected(first, -6))
	var perr *plugin.Error
	if len(faults) != 1 || faults[0].Stage != 1 || !faults[0].Bypassed || !errors.As(faults[0].Err, &perr) || perr.Kind != plugin.KindBudget {
		t.Fatalf("faults = %+v, want one budget fault of stage 1, bypassed", faults)
	}
	if want := "plugin loop_process.wasm: exceeded its CPU budget of 200ms in vox_process at frame 1"; faults[0].Err.Error() != want {
		t.Fatalf("fault = %q, want %q", faults[0].Err, want)
	}
	// The rest of the call flows at full speed without the stage.
	rest := speech[frameBytes:]
	start = time.Now()
	within1LSB(t, signal.Samples(run(t, p, rest)), gainExpected(rest, -6))
	if took := time.Since(start); took >= budget {
		t.Fatalf("the frames after the fault took %v", took)
	}
}

func TestTrapInFirstStageRefillsFromTheSource(t *testing.T) {
	c := newCatalog(t)
	p := build(t, c, fixture("trap")+" | gain db=-6", pipeline.CallConfig{})
	speech := signal.Speech(8000, 0.2)
	within1LSB(t, signal.Samples(run(t, p, speech)), gainExpected(speech, -6))
	// Every stage gone: frames still flow, untouched.
	p = build(t, c, fixture("trap"), pipeline.CallConfig{})
	if got := run(t, p, speech); string(got) != string(speech) {
		t.Fatal("a pipeline whose only stage was bypassed must pass audio through")
	}
}

func TestEndCallPolicyReturnsTheError(t *testing.T) {
	c := newCatalog(t)
	p := build(t, c, "passthrough | "+fixture("trap")+" on_error=end_call", pipeline.CallConfig{})
	src := &pipeline.PCM{Frame: make([]byte, frameBytes)}
	for frame := 1; frame <= 3; frame++ {
		_, err := p.Process(src)
		var perr *plugin.Error
		if frame < 3 && err != nil {
			t.Fatalf("frame %d: %v", frame, err)
		}
		if frame == 3 && (!errors.As(err, &perr) || perr.Frame != 3) {
			t.Fatalf("frame 3: err = %v, want the trap", err)
		}
	}
}

func TestSwallowedFramesAndFlushTail(t *testing.T) {
	c := newCatalog(t)
	p := build(t, c, fixture("events")+" | gain db=6", pipeline.CallConfig{})
	src := &pipeline.PCM{Frame: signal.Tone(8000, 440, 0.1, 0.02)}
	for frame := 1; frame <= 4; frame++ {
		out, err := p.Process(src)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: frameBytes, false: 0}[frame%2 == 1]; len(out) != want {
			t.Fatalf("frame %d: %d bytes out, want %d (the plugin swallows even frames)", frame, len(out), want)
		}
	}
	var tail []int16
	if err := p.Flush(func(pcm []byte) error { tail = append(tail, signal.Samples(pcm)...); return nil }); err != nil {
		t.Fatal(err)
	}
	// The events plugin releases 1,2,3,4 on flush; gain +6 dB (x1.995) follows.
	if want := []int16{2, 4, 6, 8}; len(tail) != 4 || tail[0] != want[0] || tail[3] != want[3] {
		t.Fatalf("flushed tail = %v, want %v", tail, want)
	}
}

func TestRatesMustChain(t *testing.T) {
	c := newCatalog(t)
	p := build(t, c, fixture("upsample")+" | gain db=0", pipeline.CallConfig{})
	if p.InputRate() != 8000 || p.OutputRate() != 16000 {
		t.Fatalf("rates %d -> %d", p.InputRate(), p.OutputRate())
	}
	out := run(t, p, signal.Tone(8000, 300, 0.5, 0.1))
	if len(out) != 2*1600 {
		t.Fatalf("100 ms upsampled to 16 kHz = %d bytes, want 3200", len(out))
	}
	a := pipeline.NewNative("a", 8000, 640, pipeline.Passthrough)
	b := pipeline.NewNative("b", 16000, 640, pipeline.Passthrough)
	_, err := pipeline.New([]pipeline.Stage{a, b}, nil, nil)
	if err == nil || err.Error() != "stage 2 (b) takes 16000 Hz but stage 1 (a) produces 8000 Hz" {
		t.Fatalf("mismatched rates: err = %v", err)
	}
}

func TestZeroAllocationsPerFrame(t *testing.T) {
	c := newCatalog(t)
	p := build(t, c, "gain db=-6 | passthrough | gain db=3 | passthrough", pipeline.CallConfig{})
	ulaw := make([]byte, 160)
	codec.EncodeUlaw(ulaw, signal.Speech(8000, 0.02))
	src := &codec.Source{Format: codec.Telephony, Frame: ulaw}
	out := make([]byte, 160)
	allocs := testing.AllocsPerRun(2000, func() {
		pcm, err := p.Process(src)
		if err != nil {
			t.Fatal(err)
		}
		codec.EncodeUlaw(out, pcm)
	})
	if allocs != 0 {
		t.Fatalf("a 4-stage pipeline allocates %.2f times per frame; the hot path must allocate nothing", allocs)
	}
}

func TestEventsReachEveryStage(t *testing.T) {
	c := newCatalog(t)
	rec := &sink{}
	p := build(t, c, fixture("events")+" | "+fixture("events"), pipeline.CallConfig{Sink: rec})
	if err := p.Event(abi.EventDTMF, '5', nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.events, ","); got != `digit "5",digit "5"` {
		t.Fatalf("events = %s", got)
	}
}

type sink struct{ events []string }

func (s *sink) Emit(_, name string, data []byte) { s.events = append(s.events, name+" "+string(data)) }

func TestParseSpec(t *testing.T) {
	specs, err := pipeline.ParseSpec(`gain db=-6 on_error=end_call budget_ms=12 |passthrough| x.wasm name=bob on=true`)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 3 || specs[0].OnError != "end_call" || specs[0].Budget() != 12*time.Millisecond || specs[1].Plugin != "passthrough" || specs[1].BudgetMs != 0 {
		t.Fatalf("specs = %+v", specs)
	}
	js, _ := specs[0].ConfigJSON()
	if string(js) != `{"db":-6}` {
		t.Fatalf("gain config = %s", js)
	}
	js, _ = specs[2].ConfigJSON()
	if string(js) != `{"name":"bob","on":true}` {
		t.Fatalf("x config = %s", js)
	}
	for spec, want := range map[string]string{
		"":                    "empty pipeline",
		"gain || passthrough": "stage 2 is empty",
		"gain db":             `"db" is not key=value`,
		"db=3":                "a stage starts with a plugin name",
		"gain on_error=retry": `unknown on_error policy "retry"`,
		"gain db=1 db=2":      "db is set twice",
		"gain budget_ms=0":    "budget_ms must be a whole number of milliseconds from 1 to 60000, got 0",
		"gain budget_ms=5ms":  `budget_ms must be a whole number of milliseconds, got "5ms"`,
	} {
		if _, err := pipeline.ParseSpec(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSpec(%q) = %v, want %q", spec, err, want)
		}
	}
}

func TestUnknownPluginNamesTheChoices(t *testing.T) {
	c := newCatalog(t)
	_, err := c.Definition(context.Background(), "p", []pipeline.StageSpec{{Plugin: "reverb"}})
	if err == nil || !strings.Contains(err.Error(), `unknown plugin "reverb": not a stock plugin (`+strings.Join(plugins.Names(), ", ")+")") {
		t.Fatalf("err = %v", err)
	}
}

// TestSampledTiming times one frame in four: each stage must have a
// quarter of the frames timed, onSample must hear of each, and a frame
// must still allocate nothing.
func TestSampledTiming(t *testing.T) {
	slow := func(buf []byte, samples int) int {
		time.Sleep(time.Microsecond)
		return samples
	}
	p, err := pipeline.New([]pipeline.Stage{pipeline.NewNative("a", 8000, 320, pipeline.Passthrough), pipeline.NewNative("b", 8000, 320, slow)}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	heard := make([]int, 2)
	p.Sample(4, func(stage int, d time.Duration) {
		if d <= 0 {
			t.Errorf("stage %d timed at %v", stage, d)
		}
		heard[stage]++
	})
	src := &pipeline.PCM{Frame: make([]byte, 320)}
	for range 16 {
		if _, err := p.Process(src); err != nil {
			t.Fatal(err)
		}
	}
	costs := p.Costs()
	if costs[0].Samples != 4 || costs[1].Samples != 4 || heard[0] != 4 || heard[1] != 4 {
		t.Fatalf("16 frames sampled one in four: costs %+v, onSample heard %v", costs, heard)
	}
	if costs[0].Name != "a" || costs[1].MeanNs < 1000 || costs[1].MeanNs < costs[0].MeanNs {
		t.Fatalf("costs %+v: stage b sleeps a microsecond per frame", costs)
	}
	p.Sample(4, nil)
	if allocs := testing.AllocsPerRun(100, func() { p.Process(src) }); allocs != 0 {
		t.Fatalf("%v allocations per frame with sampling on", allocs)
	}
}
