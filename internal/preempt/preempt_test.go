package preempt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/internal/preempt"
)

// modules are every WebAssembly module of the repository: the stock
// plugins, the host's test plugins and the examples that are built.
func modules(t testing.TB) map[string][]byte {
	t.Helper()
	var paths []string
	for _, pattern := range []string{"../../plugins/*/*.wasm", "../../host/*/testdata/*.wasm", "../*/testdata/*.wasm", "../../examples/*/build/*.wasm"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = b
	}
	return out
}

var modes = []preempt.Mode{preempt.Fuel, preempt.Flag}

func TestInstrumentedModulesCompile(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	// Which modules are valid, the interpreter says: its CompileModule
	// validates as the compiler's does without generating machine code,
	// which for the 2 MB Go examples is 17 s of CPU under the race
	// detector (a third of this package's time, which overran the
	// 10-minute test timeout on a busy machine). The instrumented modules
	// go through the compiler the host uses.
	valid := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer valid.Close(ctx)
	for path, wasm := range modules(t) {
		if _, err := valid.CompileModule(ctx, wasm); err != nil {
			continue // the host's broken test plugins
		}
		for _, mode := range modes {
			out, err := preempt.InstrumentMode(wasm, mode)
			if errors.Is(err, preempt.ErrReserved) {
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			if _, err := rt.CompileModule(ctx, out); err != nil {
				t.Errorf("%s (mode %d): instrumented module does not compile: %v", path, mode, err)
			}
		}
	}
}

// instance instantiates features.wasm, instrumented in mode (or not, for
// mode < 0), beside its env module and the tick, and calls its moved start
// function.
func instance(t *testing.T, ctx context.Context, rt wazero.Runtime, mode int) api.Module {
	t.Helper()
	wasm, err := os.ReadFile("testdata/features.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if mode >= 0 {
		if wasm, err = preempt.InstrumentMode(wasm, preempt.Mode(mode)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	if start := m.ExportedFunction(preempt.ExportStart); start != nil {
		if _, err := start.Call(ctx); err != nil {
			t.Fatal(err)
		}
	} else if mode >= 0 {
		t.Fatal("the start function was not exported")
	}
	return m
}

func TestInstrumentedModuleComputesTheSame(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	env, err := os.ReadFile("testdata/env.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.InstantiateWithConfig(ctx, env, wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	ticks := 0
	if _, err := rt.NewHostModuleBuilder(preempt.ImportModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) {
			ticks++
			stack[0] = preempt.Refill
		}), nil, []api.ValueType{api.ValueTypeI32}).
		Export(preempt.ImportTick).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	plain := instance(t, ctx, rt, -1)
	for _, mode := range modes {
		m := instance(t, ctx, rt, int(mode))
		for _, g := range []string{"started"} {
			if got, want := m.ExportedGlobal(g).Get(), plain.ExportedGlobal(g).Get(); got != want {
				t.Fatalf("mode %d: global %s = %d, want %d", mode, g, got, want)
			}
		}
		for n := uint64(0); n < 40; n++ {
			want, err := plain.ExportedFunction("run").Call(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.ExportedFunction("run").Call(ctx, n)
			if err != nil {
				t.Fatalf("mode %d, run(%d): %v", mode, n, err)
			}
			if got[0] != want[0] {
				t.Fatalf("mode %d: run(%d) = %d, want %d", mode, n, got[0], want[0])
			}
		}
	}
	// A million iterations of the loop in run(1000000) use up the fuel.
	m := instance(t, ctx, rt, int(preempt.Fuel))
	ticks = 0
	if _, err := m.ExportedFunction("run").Call(ctx, 1_000_000); err != nil {
		t.Fatal(err)
	}
	if ticks == 0 {
		t.Fatal("a million loop iterations never ran out of fuel")
	}
	t.Logf("%d ticks in run(1000000)", ticks)
}

func TestFlagStops(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	wasm, err := os.ReadFile("../../host/plugin/testdata/loop_process.wasm")
	if err != nil {
		t.Fatal(err)
	}
	out, err := preempt.InstrumentMode(wasm, preempt.Flag)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rt.Instantiate(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	// The flag is raised before the call, not from another goroutine while
	// the loop runs: a goroutine in compiled WebAssembly cannot be stopped
	// for a garbage collection, so a setter goroutine could wait on that
	// collection forever (the very reason the host meters with fuel).
	stop := m.ExportedGlobal(preempt.ExportStop).(api.MutableGlobal)
	stop.Set(1)
	if _, err := m.ExportedFunction("vox_process").Call(ctx, 160); err == nil {
		t.Fatal("the loop returned with its stop flag raised")
	}
}

func TestRejects(t *testing.T) {
	for name, wasm := range map[string][]byte{
		"empty":     nil,
		"component": []byte("\x00asm\x0d\x00\x01\x00"),
		"truncated": []byte("\x00asm\x01\x00\x00\x00\x01\x05\x01"),
		// A code section whose only body uses try (exception handling).
		"exceptions": []byte("\x00asm\x01\x00\x00\x00" +
			"\x01\x04\x01\x60\x00\x00" + // type () -> ()
			"\x03\x02\x01\x00" + // one function
			"\x0a\x07\x01\x05\x00\x06\x40\x0b\x0b"), // try end end
	} {
		if _, err := preempt.Instrument(wasm); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// FuzzInstrument: whatever the bytes, Instrument returns a module or an
// error and never panics, and wazero accepts the instrumented module when
// it accepts the original: the instrumentation never breaks a valid
// module. It can make some invalid modules valid (a start function that
// takes parameters becomes a mere export), which is why the host validates
// the original before it rewrites it (host/plugin).
//
// Modules Instrument refuses are not handed to wazero, which would allocate
// from their unchecked counts (gigabytes; the fuzzing process dies); that
// Instrument accepts every module wazero does is tested on every module of
// the repository and on testdata/features.wat.
func FuzzInstrument(f *testing.F) {
	for _, wasm := range modules(f) {
		if len(wasm) < 64<<10 {
			f.Add(wasm)
		}
	}
	ctx := context.Background()
	// The interpreter validates as the compiler does, without compiling.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		outs := map[preempt.Mode][]byte{}
		var errs []error
		for _, mode := range modes {
			out, err := preempt.InstrumentMode(wasm, mode)
			outs[mode] = out
			errs = append(errs, err)
		}
		if (errs[0] == nil) != (errs[1] == nil) {
			t.Fatalf("Fuel says %v, Flag says %v", errs[0], errs[1])
		}
		if errs[0] != nil {
			return
		}
		valid := compile(ctx, rt, wasm) == nil
		for _, mode := range modes {
			err := compile(ctx, rt, outs[mode])
			if valid && err != nil {
				t.Fatalf("mode %d: the instrumented module does not compile: %v", mode, err)
			}
		}
	})
}

// compile reports whether wazero accepts a module. wazero v1.12 panics on
// some malformed modules; that counts as refusing it.
func compile(ctx context.Context, rt wazero.Runtime, wasm []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("wazero panicked: %v", p)
		}
	}()
	c, err := rt.CompileModule(ctx, wasm)
	if err == nil {
		c.Close(ctx)
	}
	return err
}

func BenchmarkInstrument(b *testing.B) {
	var name string
	var wasm []byte
	for path, m := range modules(b) {
		if len(m) > len(wasm) {
			name, wasm = path, m
		}
	}
	b.Logf("%s, %d bytes", name, len(wasm))
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, err := preempt.Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
}
