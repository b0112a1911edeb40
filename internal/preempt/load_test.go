package preempt

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// bulkModule is a module of one function, f(i32) -> (i32), whose loop
// runs ops memory.fills (fill) or memory.copys of 16 bytes once, and a
// memory of one page: the shape of finding 4 of issue 27, whose every bulk
// operation the rewrite once expanded in place.
func bulkModule(ops int, fill bool) []byte {
	code := []byte{0x00, 0x03, 0x40} // no locals; loop
	for i := 0; i < ops; i++ {
		code = appendS32(append(code, 0x41), int32(4096+i%1000)) // dst
		if fill {
			code = append(code, 0x41, 0x00, 0x41, 0x10, 0xfc, memoryFill, 0x00)
		} else {
			code = append(code, 0x41, 0x00, 0x41, 0x10, 0xfc, memoryCopy, 0x00, 0x00)
		}
	}
	code = append(code, 0x0b, 0x20, 0x00, 0x0b) // end; local.get 0; end
	return oneFunctionModule(code)
}

// oneFunctionModule is a module with one page of memory and one function
// of type (i32) -> (i32), exported as "f", whose body (locals and code) is
// code.
func oneFunctionModule(code []byte) []byte {
	return bytes.Join([][]byte{
		[]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, []byte{1, 0x60, 1, 0x7f, 1, 0x7f}),
		sec(secFunction, []byte{1, 0}),
		sec(secMemory, []byte{1, 0, 1}),
		sec(secExport, []byte{1}, name("f"), []byte{0, 0}),
		sec(secCode, []byte{1}, body(code), code),
	}, nil)
}

// brTableModule is a module whose function holds one br_table of labels
// labels (the default among them), all to the block around it.
func brTableModule(labels int) []byte {
	code := []byte{0x00, 0x02, 0x40, 0x20, 0x00, 0x0e} // block; local.get 0; br_table
	code = appendU32(code, uint32(labels-1))
	code = append(code, bytes.Repeat([]byte{0}, labels)...)
	return oneFunctionModule(append(code, 0x0b, 0x20, 0x00, 0x0b))
}

// TestBulkOperationsShareOneHelper: a module of 1,000 bulk operations is
// rewritten to at most the rewrite factor times its size, since each
// operation calls one helper per module (emitter.bulk) instead of carrying
// the chunking loop: it grew 14× (10 KB to 144 KB) when it did, and
// wazevo took seconds and 180 MB to compile that.
func TestBulkOperationsShareOneHelper(t *testing.T) {
	for _, fill := range []bool{true, false} {
		for _, mode := range []Mode{Fuel, Flag} {
			in := bulkModule(1000, fill)
			out, err := InstrumentMode(in, mode)
			if err != nil {
				t.Fatalf("fill %v, mode %d: %v", fill, mode, err)
			}
			if len(out) > DefaultLimits.RewriteFactor*len(in) {
				t.Errorf("fill %v, mode %d: %d bytes rewritten to %d, over %d×", fill, mode, len(in), len(out), DefaultLimits.RewriteFactor)
			}
			t.Logf("fill %v, mode %d: %d bytes rewritten to %d (%.2f×)", fill, mode, len(in), len(out), float64(len(out))/float64(len(in)))
		}
	}
}

// TestBranchTableLabelsAreCapped: a function's br_table labels cost wazevo
// time quadratic in their number, so past the cap the module is refused,
// with the limit's key, before wazero sees it (300,000 labels took it
// 65 s); at the cap it is rewritten within the rewrite factor.
func TestBranchTableLabelsAreCapped(t *testing.T) {
	max := int(DefaultLimits.BranchTableEntries)
	out, err := Instrument(brTableModule(max))
	if err != nil {
		t.Fatalf("%d labels: %v", max, err)
	}
	if in := len(brTableModule(max)); len(out) > DefaultLimits.RewriteFactor*in {
		t.Errorf("%d labels: %d bytes rewritten to %d", max, in, len(out))
	}
	for _, labels := range []int{max + 1, 300000} {
		_, err := Instrument(brTableModule(labels))
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "branch_table_entries" || le.Value != uint64(labels) ||
			!strings.Contains(err.Error(), "(plugin_limits.branch_table_entries)") {
			t.Errorf("%d labels: error %v, want the limit branch_table_entries", labels, err)
		}
	}
}

// brTableFunctionsModule is a module of funcs functions, each one
// br_table of labels labels as brTableModule's.
func brTableFunctionsModule(funcs, labels int) []byte {
	code := []byte{0x00, 0x02, 0x40, 0x20, 0x00, 0x0e}
	code = appendU32(code, uint32(labels-1))
	code = append(code, bytes.Repeat([]byte{0}, labels)...)
	code = append(code, 0x0b, 0x20, 0x00, 0x0b)
	types := appendU32(nil, uint32(funcs))
	bodies := appendU32(nil, uint32(funcs))
	for range funcs {
		types = append(types, 0)
		bodies = append(append(bodies, body(code)...), code...)
	}
	return bytes.Join([][]byte{
		[]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, []byte{1, 0x60, 1, 0x7f, 1, 0x7f}),
		sec(secFunction, types),
		sec(secMemory, []byte{1, 0, 1}),
		sec(secCode, bodies),
	}, nil)
}

// TestBranchTableLabelsAreCappedPerModule: functions each within the cap
// are refused together past one label per 16 bytes of the module (sixteen
// at the cap in 64 KiB took wazevo 0.27–0.37 s of CPU), with the limit's
// key; a module of 16 bytes a label passes.
func TestBranchTableLabelsAreCappedPerModule(t *testing.T) {
	perFunc := int(DefaultLimits.BranchTableEntries) - 1
	dense := brTableFunctionsModule(16, perFunc)
	_, err := Instrument(dense)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "branch_table_entries" || !strings.Contains(err.Error(), "all functions") {
		t.Fatalf("16 functions of %d labels in %d bytes: error %v, want branch_table_entries for all functions", perFunc, len(dense), err)
	}
	if _, err := Instrument(brTableFunctionsModule(1, perFunc)); err != nil {
		t.Fatalf("one function of %d labels: %v", perFunc, err)
	}
}

// TestRewriteFactorBoundsTheOutput: a module that grows more than the
// rewrite factor allows is refused with the limit's key. Nested empty
// loops are the densest input: each loop of 3 bytes gains a wrapper and
// a check.
func TestRewriteFactorBoundsTheOutput(t *testing.T) {
	const depth = 3000
	code := append([]byte{0x00}, bytes.Repeat([]byte{0x03, 0x40}, depth)...)
	code = append(code, bytes.Repeat([]byte{0x0b}, depth)...)
	in := oneFunctionModule(append(code, 0x20, 0x00, 0x0b))
	_, err := Instrument(in)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "rewrite_factor" || !strings.Contains(err.Error(), "(plugin_limits.rewrite_factor)") {
		t.Fatalf("error %v, want the limit rewrite_factor", err)
	}
	if want := uint64(DefaultLimits.RewriteFactor*len(in) + rewriteSlack); le.Max != want {
		t.Errorf("limit %d, want %d", le.Max, want)
	}
	t.Log(err)
	out, err := InstrumentConfig(in, Config{Limits: Limits{RewriteFactor: 100}})
	if err != nil {
		t.Fatalf("with a factor of 100: %v", err)
	}
	t.Logf("%d bytes rewritten to %d (%.1f×)", len(in), len(out), float64(len(out))/float64(len(in)))
}
