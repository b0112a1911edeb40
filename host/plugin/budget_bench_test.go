package plugin_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/signal"
	"github.com/voxhost/voxhost/plugins"
)

// enforcements are what the overhead benchmark compares: no enforcement
// and the fuel voxhost uses. (The stop-flag watchdog and wazero's
// WithCloseOnContextDone were measured beside them once; RATIONALE.md has
// those figures and why neither is kept.)
var enforcements = []string{"none", "fuel"}

// BenchmarkBudget measures what each enforcement costs a frame, as
// `voxhost bench hop` measures a hop: a chain of depth copies of a plugin,
// one frame at a time, the enforcements interleaved over repetitions and
// the median kept, all in one run. Run it once:
//
//	go test -run X -bench Budget -benchtime 1x ./host/plugin/
func BenchmarkBudget(b *testing.B) {
	ctx := context.Background()
	runtimes := map[string]*plugin.Runtime{}
	for _, how := range enforcements {
		// Budgets no frame reaches: the benchmark measures the checks, not
		// the stop.
		rt, err := plugin.NewRuntimeEnforcing(ctx, plugin.Options{CacheDir: "-", Logger: quiet, DefaultBudget: time.Second, InitBudget: time.Minute}, how)
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close(ctx)
		runtimes[how] = rt
	}
	modules := []struct{ name, path string }{{"passthrough", ""}, {"gain", ""}, {"vad", ""}, {"dtmf", ""}, {"agc", ""},
		{"tremolo-c", "../../examples/c/build/tremolo.wasm"}, {"tremolo-go", "../../examples/go/build/tremolo.wasm"}}
	for _, m := range modules {
		wasm, ok := plugins.Get(m.name)
		if m.path != "" {
			var err error
			if wasm, err = os.ReadFile(m.path); err != nil {
				continue // the Go example is not built
			}
			ok = true
		}
		if !ok {
			b.Fatalf("no plugin %s", m.name)
		}
		loaded := map[string]*plugin.Plugin{}
		for how, rt := range runtimes {
			p, err := rt.Load(ctx, m.name, wasm)
			if err != nil {
				b.Fatal(err)
			}
			loaded[how] = p
		}
		for _, depth := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/depth=%d", m.name, depth), func(b *testing.B) {
				chains := map[string]*pipeline.Pipeline{}
				for how, p := range loaded {
					stages := make([]pipeline.StageDef, depth)
					for i := range stages {
						stages[i] = pipeline.StageDef{Plugin: p, OnError: pipeline.EndCall}
					}
					def := &pipeline.Definition{Name: "bench", Stages: stages}
					chain, err := def.Instantiate(ctx, pipeline.CallConfig{Logger: quiet})
					if err != nil {
						b.Fatal(err)
					}
					defer chain.Close(ctx)
					chains[how] = chain
				}
				frame := signal.Speech(abi.TelephonyRate, 0.02)
				// About 50 ms per measurement.
				est, _ := timeFrames(b, chains["none"], frame, 200)
				frames := max(200, int(50*time.Millisecond/time.Duration(est)))
				const reps = 7
				ns := map[string][]float64{}
				allocs := map[string]float64{}
				for rep := 0; rep < reps; rep++ {
					order := slices.Clone(enforcements)
					// Rotate the order so no enforcement always runs first.
					order = append(order[rep%len(order):], order[:rep%len(order)]...)
					for _, how := range order {
						t, a := timeFrames(b, chains[how], frame, frames)
						ns[how] = append(ns[how], t)
						allocs[how] = max(allocs[how], a)
					}
				}
				base := median(ns["none"])
				for _, how := range enforcements {
					med := median(ns[how])
					b.ReportMetric(med, how+"-ns/frame")
					if how != "none" {
						b.ReportMetric(100*(med-base)/base, how+"-%")
					}
					if allocs[how] > 0 {
						b.ReportMetric(allocs[how], how+"-allocs/frame")
					}
				}
			})
		}
	}
}

// timeFrames runs frames through a chain and returns ns and allocations
// per frame.
func timeFrames(b *testing.B, p *pipeline.Pipeline, frame []byte, frames int) (float64, float64) {
	src := &pipeline.PCM{Frame: frame}
	for i := 0; i < frames/10; i++ {
		if _, err := p.Process(src); err != nil {
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := 0; i < frames; i++ {
		if _, err := p.Process(src); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return float64(took.Nanoseconds()) / float64(frames), float64(after.Mallocs-before.Mallocs) / float64(frames)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkBudgetStop measures how long after it starts a frame whose
// plugin loops forever returns with its budget error (5 ms); also with
// twice as many looping calls as Ps while the garbage collector runs
// without pause. Run it once:
//
//	go test -run X -bench BudgetStop -benchtime 1x ./host/plugin/
func BenchmarkBudgetStop(b *testing.B) {
	ctx := context.Background()
	const budget = 5 * time.Millisecond
	for _, how := range enforcements[1:] {
		b.Run(how, func(b *testing.B) {
			rt := budgetRuntime(b, how)
			p := load(b, rt, "loop_process")
			var late []time.Duration
			for rep := 0; rep < 50; rep++ {
				in, err := p.Instantiate(ctx, plugin.InstanceConfig{Budget: budget, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				_, err = in.Process(160)
				late = append(late, time.Since(start)-budget)
				if err == nil {
					b.Fatal("the loop returned")
				}
				in.Close(ctx)
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Microseconds()), "median-µs-late")
			b.ReportMetric(float64(late[len(late)-1].Microseconds()), "max-µs-late")
		})
	}
	b.Run("fuel/contended", func(b *testing.B) {
		rt := budgetRuntime(b, "fuel")
		p := load(b, rt, "loop_process")
		stopGC := collectWithoutPause()
		var mu sync.Mutex
		var late []time.Duration
		var calls sync.WaitGroup
		for g := 0; g < 2*runtime.GOMAXPROCS(0); g++ {
			calls.Add(1)
			go func() {
				defer calls.Done()
				for rep := 0; rep < 10; rep++ {
					in, err := p.Instantiate(ctx, plugin.InstanceConfig{Budget: budget, Logger: quiet})
					if err != nil {
						b.Error(err)
						return
					}
					start := time.Now()
					_, err = in.Process(160)
					d := time.Since(start) - budget
					in.Close(ctx)
					if err == nil {
						b.Error("the loop returned")
						return
					}
					mu.Lock()
					late = append(late, d)
					mu.Unlock()
				}
			}()
		}
		calls.Wait()
		stopGC()
		slices.Sort(late)
		b.ReportMetric(float64(late[len(late)/2].Microseconds()), "median-µs-late")
		b.ReportMetric(float64(late[len(late)-1].Microseconds()), "max-µs-late")
	})
}
