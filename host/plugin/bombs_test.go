package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/plugin"
)

func leb(v uint64) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// section is a module section: id, size, count, then the entries.
func section(id byte, count int, entries ...[]byte) []byte {
	body := append(leb(uint64(count)), bytes.Join(entries, nil)...)
	return append(append([]byte{id}, leb(uint64(len(body)))...), body...)
}

func module(sections ...[]byte) []byte {
	return append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Join(sections, nil)...)
}

// oneFunction is a module of one function of type () -> () with code.
func oneFunction(code []byte) []byte {
	body := append([]byte{0x00}, code...) // no locals
	return module(section(1, 1, []byte{0x60, 0, 0}), section(3, 1, []byte{0}),
		section(10, 1, append(leb(uint64(len(body))), body...)))
}

// TestLoadTimeBombsAreRefused: modules of a few kilobytes to a few
// megabytes that made loading take seconds and gigabytes, refused before
// wazero sees them, with the limit they break; and invalid modules the
// rewrite would have made valid, refused as invalid.
func TestLoadTimeBombsAreRefused(t *testing.T) {
	rt := newRuntime(t)
	manyLocals := bytes.Repeat([]byte{0x06, 0x01, 0xd0, 0x86, 0x03, 0x7f, 0x0b}, 2600) // 50,000 i32 locals each
	cases := []struct {
		name string
		wasm []byte
		want string
	}{
		{"1000 tables", module(section(4, 1000, bytes.Repeat([]byte{0x70, 0x00, 0x01}, 1000))),
			"1000 tables, over the host's limit of 8 (plugin_limits.tables)"},
		{"a million globals", module(section(6, 1000000, bytes.Repeat([]byte{0x7f, 0x00, 0x41, 0x00, 0x0b}, 1000000))),
			"1000000 globals, over the host's limit of 1024 (plugin_limits.globals)"},
		{"50,000 locals in each of 2,600 functions", module(section(1, 1, []byte{0x60, 0, 0}),
			section(3, 2600, bytes.Repeat([]byte{0}, 2600)), section(10, 2600, manyLocals)),
			"locals in all functions, over the host's limit of 500000 (plugin_limits.module_locals)"},
		{"100,000 nested blocks", oneFunction(append(bytes.Repeat([]byte{0x02, 0x40}, 100000), bytes.Repeat([]byte{0x0b}, 100001)...)),
			"levels of nested blocks, over the host's limit of 4096 (plugin_limits.nesting)"},
		{"a 3 MB function", oneFunction(append(bytes.Repeat([]byte{0x41, 0x00, 0x1a}, 1000000), 0x0b)),
			"bytes in the body of function 0, over the host's limit of 1048576 (plugin_limits.function_bytes)"},
		// A start function must take nothing and return nothing; moved out
		// of the start section it would be a mere export.
		{"start function with a parameter", module(section(1, 1, []byte{0x60, 1, 0x7f, 0}), section(3, 1, []byte{0}),
			[]byte{8, 1, 0}, section(10, 1, []byte{2, 0, 0x0b})), "invalid WebAssembly: "},
		// call_indirect of type 1 of 1: past the types, it would name the
		// tick's type, which the rewrite appends.
		{"call_indirect past the types", module(section(1, 1, []byte{0x60, 0, 0}), section(3, 1, []byte{0}),
			section(4, 1, []byte{0x70, 0x00, 0x01}), section(10, 1, []byte{7, 0, 0x41, 0, 0x11, 1, 0, 0x0b})),
			"invalid WebAssembly: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := rt.Load(context.Background(), "bomb.wasm", tc.wasm)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var verr *plugin.ValidationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v\nwant a *ValidationError containing %q", err, tc.want)
			}
			t.Logf("%d bytes refused in %v, %d KiB allocated: %v", len(tc.wasm), took, (after.TotalAlloc-before.TotalAlloc)>>10, err)
		})
	}
}

// TestWASIOutputIsCappedLikeLog: every line a plugin prints counts against
// the cap of MaxHostCallsPerCall log and emit calls per call into it.
func TestWASIOutputIsCappedLikeLog(t *testing.T) {
	rt, logs := newLoggingRuntime(t)
	p, err := rt.Load(context.Background(), "stdout_flood.wasm", testdata(t, "stdout_flood"))
	if err != nil {
		t.Fatal(err)
	}
	// The cap, not the budget, is under test: a budget that leaves a wide
	// margin. The 1,000 prints of a frame take about 0.2 ms of CPU time,
	// 3 ms under the race detector, and the default budget of 5 ms grants
	// only half of itself in CPU time once its first half has gone by on
	// the wall clock, which a busy machine spends waiting for a core.
	in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Budget: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	logs.take()
	for frame := 1; frame <= 3; frame++ {
		if _, err := in.Process(160); err != nil {
			t.Fatal(err)
		}
		if n := len(logs.take()); n != plugin.MaxHostCallsPerCall {
			t.Fatalf("frame %d: %d lines logged of 1,000 printed, want the cap of %d", frame, n, plugin.MaxHostCallsPerCall)
		}
	}
	if got := in.DroppedHostCalls(); got != 3*(1000-plugin.MaxHostCallsPerCall) {
		t.Fatalf("%d lines counted as dropped, want %d", got, 3*(1000-plugin.MaxHostCallsPerCall))
	}
}

// TestLoadingHasADeadlineAndACancel: a load that outlasts the compile
// timeout, or whose context ends, returns at once with a reason.
func TestLoadingHasADeadlineAndACancel(t *testing.T) {
	// A function of 150 KB, which takes wazero milliseconds to compile.
	wasm := oneFunction(append(bytes.Repeat([]byte{0x41, 0x00, 0x1a}, 50000), 0x0b))
	rt, err := plugin.NewRuntime(context.Background(), plugin.Options{CacheDir: "-", Logger: quiet, CompileTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	_, err = rt.Load(context.Background(), "slow.wasm", wasm)
	if err == nil || !strings.Contains(err.Error(), "(plugin_limits.compile_timeout)") {
		t.Fatalf("Load error = %v, want the compile timeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = newRuntime(t).Load(ctx, "slow.wasm", wasm)
	if err == nil || !strings.Contains(err.Error(), "loading cancelled: context canceled") {
		t.Fatalf("Load error = %v, want the cancellation", err)
	}
}

// TestClosedInstanceReleasesItsStack: a recursion that overflows grows the
// call stack of vox_process's handle to tens of megabytes; closing the
// instance, as the pipeline does when it bypasses a faulted stage, must
// release it even while the instance itself is still referenced.
func TestClosedInstanceReleasesItsStack(t *testing.T) {
	p := load(t, newRuntime(t), "recursion")
	in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	if _, err := in.Process(160); err == nil {
		t.Fatal("the recursion did not trap")
	}
	grown := heap()
	in.Close(context.Background())
	after := heap()
	t.Logf("heap in use %d MiB before the recursion, %d MiB after it, %d MiB once the instance is closed", before>>20, grown>>20, after>>20)
	// The stack is about 10 MiB here, 5 MiB under the race detector.
	if grown < before+2<<20 {
		t.Fatalf("the recursion grew the heap by only %d KiB: the test does not see the stack", (grown-before)>>10)
	}
	if released := int64(grown) - int64(after); released < int64(grown-before)*3/4 {
		t.Fatalf("Close released %d KiB of the %d KiB the recursion grew", released>>10, (grown-before)>>10)
	}
	runtime.KeepAlive(in)
}

// abiPlugin is a plugin of one page whose vox_process(n) runs code (its
// locals and instructions) and whose vox_buffer returns 1024.
func abiPlugin(code []byte) []byte {
	name := func(s string) []byte { return append(leb(uint64(len(s))), s...) }
	fn := func(b []byte) []byte { return append(leb(uint64(len(b))), b...) }
	return module(section(1, 2, []byte{0x60, 0, 0}, []byte{0x60, 1, 0x7f, 1, 0x7f}),
		section(3, 3, []byte{0}, []byte{1}, []byte{1}),
		section(5, 1, []byte{1, 1, 1}),
		section(7, 4, append(name("memory"), 2, 0), append(name("voxhost_abi_v1"), 0, 0),
			append(name("vox_buffer"), 0, 1), append(name("vox_process"), 0, 2)),
		section(10, 3, fn([]byte{0, 0x0b}), fn([]byte{0, 0x41, 0x80, 0x08, 0x0b}), fn(code)))
}

// TestLoadingIsBoundedBySize: the two modules of issue 27's finding 4. A
// 10 KB plugin of 1,000 memory.fills loads (its rewrite grew 14× and took
// wazevo 2.9 s and 177 MB to compile; each fill now calls one helper);
// one of a 300,000-label br_table, which wazevo takes minutes to compile,
// is refused with the limit it breaks before wazero sees it.
func TestLoadingIsBoundedBySize(t *testing.T) {
	rt := newRuntime(t)
	fills := []byte{0x00, 0x03, 0x40} // no locals; loop
	for i := 0; i < 1000; i++ {
		fills = append(fills, 0x41, 0x80, 0x20, 0x41, 0x00, 0x41, 0x10, 0xfc, 0x0b, 0x00) // fill 16 bytes at 4096
	}
	fills = append(fills, 0x0b, 0x20, 0x00, 0x0b)
	p, err := rt.Load(context.Background(), "fills.wasm", abiPlugin(fills))
	if err != nil {
		t.Fatalf("1,000 fills: %v", err)
	}
	in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	if n, err := in.Process(160); err != nil || n != 160 {
		t.Fatalf("Process(160) = %d, %v", n, err)
	}
	table := []byte{0x00, 0x02, 0x40, 0x20, 0x00, 0x0e} // block; local.get 0; br_table
	table = append(append(table, leb(299999)...), bytes.Repeat([]byte{0}, 300000)...)
	table = append(table, 0x0b, 0x20, 0x00, 0x0b)
	_, err = rt.Load(context.Background(), "brtable.wasm", abiPlugin(table))
	var verr *plugin.ValidationError
	if !errors.As(err, &verr) || !strings.Contains(err.Error(), "300000 br_table labels in function 2, over the host's limit of 4096 (plugin_limits.branch_table_entries)") {
		t.Fatalf("300,000 labels: Load error = %v, want the branch_table_entries limit", err)
	}
}
