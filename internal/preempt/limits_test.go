package preempt

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// TestLimitsNameTheLimitAndTheValue sets one limit at a time below what
// testdata/features.wasm declares.
func TestLimitsNameTheLimitAndTheValue(t *testing.T) {
	wasm, err := os.ReadFile("testdata/features.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Instrument(wasm); err != nil {
		t.Fatal(err)
	}
	for limit, l := range map[string]Limits{
		"module_bytes":    {ModuleBytes: 100},
		"functions":       {Functions: 2},
		"function_locals": {FunctionLocals: 1},
		"module_locals":   {ModuleLocals: 3},
		"function_bytes":  {FunctionBytes: 10},
		"code_bytes":      {CodeBytes: 10},
		"nesting":         {Nesting: 1},
		"tables":          {Tables: 1},
		"table_elements":  {TableElements: 4},
		"globals":         {Globals: 2},
		"data_bytes":      {DataBytes: 4},
		"element_entries": {ElementEntries: 2},
	} {
		_, err := InstrumentConfig(wasm, Config{Limits: l})
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != limit {
			t.Errorf("%s: got %v", limit, err)
			continue
		}
		if le.Value <= le.Max {
			t.Errorf("%s: %d is within %d", limit, le.Value, le.Max)
		}
		t.Logf("%s: %v", limit, err)
	}
}

// heavyLoop is a module exporting heavy(k): k iterations of a loop whose
// body weighs 300,004 instructions, more than a refill of fuel.
func heavyLoop() []byte {
	inc := []byte{0x20, 1, 0x41, 1, 0x6a, 0x21, 1} // local.get 1; i32.const 1; i32.add; local.set 1
	f := bytes.Join([][]byte{
		{0x01, 0x01, 0x7f},                    // one i32 local: x
		{0x02, 0x40, 0x03, 0x40},              // block; loop
		{0x20, 0, 0x45, 0x0d, 1},              // br_if 1 (k == 0)
		{0x20, 0, 0x41, 1, 0x6b, 0x21, 0},     // k--
		bytes.Repeat(inc, 75000),              // x += 75000
		{0x0c, 0, 0x0b, 0x0b, 0x20, 1, 0x0b}}, // br 0; end; end; x
		nil)
	return bytes.Join([][]byte{
		[]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, []byte{1, 0x60, 1, 0x7f, 1, 0x7f}),
		sec(secFunction, []byte{1, 0}),
		sec(secExport, []byte{1}, name("heavy"), []byte{0, 0}),
		sec(secCode, []byte{1}, body(f), f),
	}, nil)
}

// TestLoopHeavierThanARefillRuns: no check may weigh more than a refill,
// or the loop finds its fuel negative right after every tick and never
// gets past its head.
func TestLoopHeavierThanARefillRuns(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	ticks := 0
	if _, err := rt.NewHostModuleBuilder(ImportModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) {
			ticks++
			if ticks > 1000 {
				panic("the loop makes no progress between ticks")
			}
			stack[0] = Refill
		}), nil, []api.ValueType{api.ValueTypeI32}).
		Export(ImportTick).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := Instrument(heavyLoop())
	if err != nil {
		t.Fatal(err)
	}
	m, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.ExportedFunction("heavy").Call(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 4*75000 {
		t.Fatalf("heavy(4) = %d, want %d", got[0], 4*75000)
	}
	// Each iteration weighs more than a refill: a tick at least every
	// other iteration, so the time between ticks stays bounded.
	if ticks < 2 {
		t.Fatalf("%d ticks in 4 iterations of %d instructions", ticks, 300004)
	}
}
