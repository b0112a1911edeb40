package plugin_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
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
// the fastest kept, all in one run. Where a loop's machine code falls
// moves a plugin's time by up to a quarter (wazevo aligns functions, not
// loops), with or without the checks, so each plugin runs in several
// layouts (padded), and the times reported are their means. Run it once:
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
	// Every stock plugin and every example built by `make examples`.
	type module struct {
		name string
		wasm []byte
	}
	var modules []module
	for _, name := range plugins.Names() {
		wasm, _ := plugins.Get(name)
		modules = append(modules, module{name, wasm})
	}
	examples, err := filepath.Glob("../../examples/*/build/*.wasm")
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range examples {
		wasm, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		lang := filepath.Base(filepath.Dir(filepath.Dir(path)))
		modules = append(modules, module{strings.TrimSuffix(filepath.Base(path), ".wasm") + "-" + lang, wasm})
	}
	const layouts = 16
	for _, m := range modules {
		loaded := make([]map[string]*plugin.Plugin, layouts)
		for l := range loaded {
			wasm := padded(m.wasm, l)
			loaded[l] = map[string]*plugin.Plugin{}
			for how, rt := range runtimes {
				p, err := rt.Load(ctx, m.name, wasm)
				if err != nil {
					b.Fatal(err)
				}
				loaded[l][how] = p
			}
		}
		for _, depth := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/depth=%d", m.name, depth), func(b *testing.B) {
				ns := map[string]float64{}
				allocs := map[string]float64{}
				for _, layout := range loaded {
					for how, t := range measure(b, ctx, m.name, layout, depth, allocs) {
						ns[how] += t / layouts
					}
				}
				for _, how := range enforcements {
					b.ReportMetric(ns[how], how+"-ns/frame")
					if how != "none" {
						b.ReportMetric(100*(ns[how]-ns["none"])/ns["none"], how+"-%")
					}
					if allocs[how] > 0 {
						b.ReportMetric(allocs[how], how+"-allocs/frame")
					}
				}
			})
		}
	}
}

// measure runs chains of depth copies of each enforcement's plugin and
// returns the ns per frame of each: short measurements, many of them,
// interleaved, and the fastest of each kept, since other processes only
// ever add time and a 2 ms window often runs without them on a busy host.
// It raises allocs to the allocations per frame seen.
func measure(b *testing.B, ctx context.Context, name string, plugins map[string]*plugin.Plugin, depth int, allocs map[string]float64) map[string]float64 {
	chains := map[string]*pipeline.Pipeline{}
	for how, p := range plugins {
		stages := make([]pipeline.StageDef, depth)
		for i := range stages {
			stages[i] = pipeline.StageDef{Plugin: p, Config: stageConfig(name, i), OnError: pipeline.EndCall}
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
	est, _ := timeFrames(b, chains["none"], frame, 200)
	frames := max(20, int(2*time.Millisecond/time.Duration(est)))
	const reps = 15
	best := map[string]float64{}
	for rep := 0; rep < reps; rep++ {
		order := slices.Clone(enforcements)
		// Rotate the order so no enforcement always runs first.
		order = append(order[rep%len(order):], order[:rep%len(order)]...)
		for _, how := range order {
			t, a := timeFrames(b, chains[how], frame, frames)
			if best[how] == 0 || t < best[how] {
				best[how] = t
			}
			allocs[how] = max(allocs[how], a)
		}
	}
	return best
}

// padded returns wasm with n one-byte stores, under a test of the first
// byte of memory that never passes, at the start of its first function
// (whose locals must have one-byte types): wazevo lays functions out one
// after the other, so every later function moves.
func padded(wasm []byte, n int) []byte {
	if n == 0 {
		return wasm
	}
	pad := []byte{0x41, 0x00, 0x2d, 0x00, 0x00, 0x41, 0xff, 0x01, 0x4b, 0x04, 0x40} // i32.load8_u(0) > 255: if
	for i := 0; i < n; i++ {
		pad = append(pad, 0x41, 0x00, 0x41, 0x00, 0x3a, 0x00, 0x00) // i32.store8(0, 0)
	}
	pad = append(pad, 0x0b)
	var out []byte
	for pos := 8; pos < len(wasm); {
		id := wasm[pos]
		size, k := uleb(wasm[pos+1:])
		body := wasm[pos+1+k : pos+1+k+int(size)]
		if id == 10 { // code: the first body gets the pad after its locals
			count, k := uleb(body)
			first := body[k:]
			fsize, fk := uleb(first)
			code := first[fk : fk+int(fsize)]
			decls, dk := uleb(code)
			at := dk
			for ; decls > 0; decls-- {
				_, nk := uleb(code[at:])
				at += nk + 1 // a count and a one-byte value type
			}
			f := append(slices.Clone(code[:at]), pad...)
			f = append(f, code[at:]...)
			nb := binary.AppendUvarint(nil, count)
			nb = binary.AppendUvarint(nb, uint64(len(f)))
			nb = append(append(nb, f...), first[fk+int(fsize):]...)
			body = nb
		}
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
		pos += 1 + k + int(size)
	}
	return append(slices.Clone(wasm[:8]), out...)
}

// uleb decodes an unsigned LEB128 number and returns it and its length.
func uleb(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	return v, n
}

// stageConfig is the config of stage i of a chain of a plugin: resample
// needs a rate to convert to, and alternates between 16 and 8 kHz.
func stageConfig(name string, i int) []byte {
	if name != "resample" {
		return nil
	}
	if i%2 == 0 {
		return []byte(`{"to":16000}`)
	}
	return []byte(`{"to":8000}`)
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
