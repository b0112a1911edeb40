package preempt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/internal/preempt"
)

// The differential test: a generated module (gen_test.go) must compute
// exactly the same before and after the rewrite, with a tick that returns
// so little fuel that checks run out constantly: the same results, the
// same traps, the same memory and globals after every call.

// differentialSeeds is how many generated modules TestInstrumentDifferential
// runs: about 12 s of CPU under the race detector, in parallel.
const differentialSeeds = 400

// seedInput is the decision bytes of a seed: more than a module uses.
func seedInput(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x70726565)) // "pree"
	b := make([]byte, 16<<10)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// diffStats says what a run exercised, so that a test that compares
// nothing is seen to.
type diffStats struct {
	calls, traps, ticks, laps int
	trapped                   map[string]int // calls by trap message
}

func (s *diffStats) add(o diffStats) {
	s.calls += o.calls
	s.traps += o.traps
	s.ticks += o.ticks
	s.laps += o.laps
	for msg, n := range o.trapped {
		if s.trapped == nil {
			s.trapped = map[string]int{}
		}
		s.trapped[msg] += n
	}
}

// TestInstrumentDifferential runs the modules of the first
// differentialSeeds seeds. A failure names its seed, which
// -run 'TestInstrumentDifferential/seeds/N$' runs alone, and prints the
// module.
func TestInstrumentDifferential(t *testing.T) {
	var total diffStats
	results := make(chan diffStats, differentialSeeds)
	t.Run("seeds", func(t *testing.T) {
		for seed := range uint64(differentialSeeds) {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				results <- differential(t, seedInput(seed))
			})
		}
	})
	close(results)
	for s := range results {
		total.add(s)
	}
	t.Logf("%d modules, %d calls, %d of them trapped, %d loop iterations, %d ticks",
		differentialSeeds, total.calls, total.traps, total.laps, total.ticks)
	for _, msg := range slices.Sorted(maps.Keys(total.trapped)) {
		t.Logf("%5d %s", total.trapped[msg], msg)
	}
	if total.calls == 0 || total.traps == total.calls {
		t.Errorf("no call returned: the generator tests nothing")
	}
	if total.ticks == 0 {
		t.Errorf("the tick was never called")
	}
}

// FuzzInstrumentDifferential: whatever module the bytes describe, the
// rewrite computes the same as the original. The committed inputs are
// decisions of this generator, which a change to it reinterprets:
// br_table_function_label made the rewrite of 34d5dff refuse a br_table
// whose first label was the function's (it stopped reading the labels
// there).
func FuzzInstrumentDifferential(f *testing.F) {
	for seed := range uint64(4) {
		b := seedInput(seed)
		f.Add(b[:generate(b, false).used])
	}
	f.Fuzz(func(t *testing.T, b []byte) { differential(t, b) })
}

// differential generates the module that b describes, runs it as it is
// and rewritten, and fails on the first difference.
func differential(t *testing.T, b []byte) diffStats {
	t.Helper()
	ctx := context.Background()
	gm := generate(b, false)
	stats := diffStats{trapped: map[string]int{}}
	fail := func(format string, args ...any) {
		t.Helper()
		text := generate(b, true).wat
		t.Fatalf("%s\n\nmodule (refill %d, flag mode %v):\n%s", fmt.Sprintf(format, args...), gm.refill, gm.flag, text)
	}

	newRuntime := func() wazero.Runtime {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
		t.Cleanup(func() { rt.Close(ctx) })
		if gm.env {
			if _, err := rt.InstantiateWithConfig(ctx, envModule(), wazero.NewModuleConfig().WithName("env")); err != nil {
				t.Fatal(err)
			}
		}
		return rt
	}
	plainRuntime, rewrittenRuntime := newRuntime(), newRuntime()
	// ticks counts the tick's calls; callTicks those of the current call,
	// which a rewrite that broke a loop's exit would make endless.
	ticks, callTicks := 0, 0
	if _, err := rewrittenRuntime.NewHostModuleBuilder(preempt.ImportModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			ticks++
			if callTicks++; callTicks > maxTicksPerCall {
				panic(errRunaway)
			}
			stack[0] = uint64(uint32(gm.refill))
		}), nil, []api.ValueType{api.ValueTypeI32}).
		Export(preempt.ImportTick).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}

	plainCompiled, err := plainRuntime.CompileModule(ctx, gm.wasm)
	if err != nil {
		fail("generator bug: wazero refuses the generated module: %v", err)
	}
	config := preempt.Config{Mode: preempt.Fuel, Refill: gm.refill}
	if gm.flag {
		config.Mode = preempt.Flag
	}
	rewritten, err := preempt.InstrumentConfig(gm.wasm, config)
	if err != nil {
		fail("the rewrite refuses the module: %v", err)
	}
	rewrittenCompiled, err := rewrittenRuntime.CompileModule(ctx, rewritten)
	if err != nil {
		fail("wazero refuses the rewritten module: %v", err)
	}
	// No start functions by name: only the start section runs.
	moduleConfig := wazero.NewModuleConfig().WithName("generated").WithStartFunctions()
	plain, plainStart := plainRuntime.InstantiateModule(ctx, plainCompiled, moduleConfig)
	mod, err := rewrittenRuntime.InstantiateModule(ctx, rewrittenCompiled, moduleConfig)
	if err != nil {
		fail("the rewritten module does not instantiate: %v", err)
	}
	var start error
	if f := mod.ExportedFunction(preempt.ExportStart); f != nil {
		_, start = f.Call(ctx)
	} else if gm.start {
		fail("the rewritten module does not export %s", preempt.ExportStart)
	}
	if a, b := trapMessage(plainStart), trapMessage(start); a != b {
		fail("start function: the original gives %q, the rewritten module %q", a, b)
	}
	if plainStart != nil {
		return stats // the original did not instantiate: nothing more to call
	}
	if d := compareState(gm, plain, mod); d != "" {
		fail("after the start function: %s", d)
	}

	// The fuel never exceeds a refill, and each loop iteration takes at
	// least 1 from it; a call that returns leaves what is left in the
	// global. So calls that returned after more iterations than a refill
	// lasts must have ticked, each of them and all of them together.
	lapsReturned := int(uint32(mod.ExportedGlobal(exportLaps).Get())) // the start function's
	for i, call := range gm.calls {
		for _, m := range []api.Module{plain, mod} {
			m.ExportedGlobal(exportSteps).(api.MutableGlobal).Set(stepsPerCall)
		}
		lapsBefore, ticksBefore := mod.ExportedGlobal(exportLaps).Get(), ticks
		callTicks = 0
		want, errWant := plain.ExportedFunction(call.export).Call(ctx, call.args...)
		got, errGot := mod.ExportedFunction(call.export).Call(ctx, call.args...)
		where := fmt.Sprintf("call %d, %s%v", i, call.export, call.args)
		if a, b := trapMessage(errWant), trapMessage(errGot); a != b {
			fail("%s: the original gives %q, the rewritten module %q", where, a, b)
		}
		if errWant == nil && !slices.Equal(want, got) {
			fail("%s: the original returns %v, the rewritten module %v", where, want, got)
		}
		if d := compareState(gm, plain, mod); d != "" {
			fail("%s: %s", where, d)
		}
		laps := int(uint32(mod.ExportedGlobal(exportLaps).Get() - lapsBefore))
		stats.calls++
		stats.laps += laps
		if errWant != nil {
			stats.traps++
			stats.trapped[trapMessage(errWant)]++
			continue
		}
		lapsReturned += laps
		if !gm.flag && laps > int(gm.refill) && ticks == ticksBefore {
			fail("%s: %d loop iterations on a refill of %d fuel, and no tick", where, laps, gm.refill)
		}
	}
	if !gm.flag && lapsReturned > int(gm.refill) && ticks == 0 {
		fail("calls that returned made %d loop iterations on a refill of %d fuel, and no tick", lapsReturned, gm.refill)
	}
	stats.ticks = ticks
	return stats
}

// maxTicksPerCall is far more ticks than any generated call needs, even
// with a refill of 1 (a tick per check): stepsPerCall function entries,
// each with loops of a few iterations. Flag mode has no tick, and no such
// guard.
const maxTicksPerCall = 1 << 20

var errRunaway = errors.New("the rewritten module runs far longer than any generated module can: does a loop no longer end?")

// trapMessage is what a call's error says, without wazero's stack trace,
// whose function indices the rewrite shifts, and without what the original
// says around it when its start function fails during instantiation.
func trapMessage(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if i := strings.Index(msg, "wasm error:"); i >= 0 {
		msg = msg[i:]
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// compareState describes how the memories and exported globals of two
// instances differ, or returns "".
func compareState(gm *genModule, a, b api.Module) string {
	ma, mb := a.ExportedMemory(exportMemory), b.ExportedMemory(exportMemory)
	if ma.Size() != mb.Size() {
		return fmt.Sprintf("memory of %d bytes, rewritten %d", ma.Size(), mb.Size())
	}
	ba, _ := ma.Read(0, ma.Size())
	bb, _ := mb.Read(0, mb.Size())
	if !bytes.Equal(ba, bb) {
		i := 0
		for ba[i] == bb[i] {
			i++
		}
		j := len(ba) - 1
		for ba[j] == bb[j] {
			j--
		}
		return fmt.Sprintf("memory differs from byte %d to byte %d: % x, rewritten % x", i, j,
			ba[i:min(j+1, i+16)], bb[i:min(j+1, i+16)])
	}
	for _, name := range gm.globals {
		if va, vb := a.ExportedGlobal(name).Get(), b.ExportedGlobal(name).Get(); va != vb {
			return fmt.Sprintf("global %s is %d, rewritten %d", name, va, vb)
		}
	}
	return ""
}
