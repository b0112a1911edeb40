package preempt_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/internal/preempt"
)

// smallRefill makes ticks happen every few instructions.
const smallRefill = 1000

// sandboxPair instantiates testdata/sandbox.wasm as it is and instrumented
// with a small refill, each in its own runtime, and counts the ticks.
func sandboxPair(t *testing.T) (plain, metered api.Module, ticks *int) {
	t.Helper()
	ctx := context.Background()
	wasm, err := os.ReadFile("testdata/sandbox.wasm")
	if err != nil {
		t.Fatal(err)
	}
	out, err := preempt.InstrumentConfig(wasm, preempt.Config{Refill: smallRefill})
	if err != nil {
		t.Fatal(err)
	}
	ticks = new(int)
	instantiate := func(wasm []byte, tick bool) api.Module {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
		t.Cleanup(func() { rt.Close(ctx) })
		if tick {
			if _, err := rt.NewHostModuleBuilder(preempt.ImportModule).NewFunctionBuilder().
				WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) {
					*ticks++
					stack[0] = smallRefill
				}), nil, []api.ValueType{api.ValueTypeI32}).
				Export(preempt.ImportTick).Instantiate(ctx); err != nil {
				t.Fatal(err)
			}
		}
		m, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	return instantiate(wasm, false), instantiate(out, true), ticks
}

func call(m api.Module, name string, args ...uint64) ([]uint64, error) {
	return m.ExportedFunction(name).Call(context.Background(), args...)
}

// TestTablesGrowOnlyWithinTheCap: a table that declares no maximum gets
// one, so that table.grow past the host's cap fails in the guest with -1
// (it made wazero allocate gigabytes); a table's own maximum is kept, and
// tables without one share the cap rather than the first taking it all.
func TestTablesGrowOnlyWithinTheCap(t *testing.T) {
	plain, metered, _ := sandboxPair(t)
	cap := preempt.DefaultLimits.TableElements
	// $t: 2 elements, no maximum; $u: 1 of at most 4; $v: 1, no maximum.
	// $u keeps its room; $t and $v share the rest of the cap equally.
	share := (cap - 4 - 3) / 2
	for _, step := range []struct {
		fn    string
		delta uint64
		plain bool // whether plain wazero must agree (it has no cap)
		want  int32
	}{
		{"grow", 0, true, 2},
		{"grow", 100, true, 2},
		{"grow_u", 3, true, 1},
		{"grow_u", 1, true, -1},
		{"grow", 1 << 31, false, -1},
		{"grow_v", 1, true, 1},
		{"grow", share - 100, true, 102},
		{"grow", 1, false, -1},
		{"grow_v", cap - 4 - 3 - share - 1, true, 2},
		{"grow_v", 1, false, -1},
	} {
		got, err := call(metered, step.fn, step.delta)
		if err != nil {
			t.Fatal(err)
		}
		if int32(got[0]) != step.want {
			t.Fatalf("%s(%d) = %d, want %d", step.fn, step.delta, int32(got[0]), step.want)
		}
		if step.plain {
			want, err := call(plain, step.fn, step.delta)
			if err != nil {
				t.Fatal(err)
			}
			if want[0] != got[0] {
				t.Fatalf("%s(%d) = %d instrumented, %d plain", step.fn, step.delta, int32(got[0]), int32(want[0]))
			}
		}
	}
}

// TestBulkMemoryIsChunkedWithTheSameResult runs fills and copies of every
// size, overlapping both ways and out of bounds, on the module as it is and
// instrumented; memory must end the same and traps must match.
func TestBulkMemoryIsChunkedWithTheSameResult(t *testing.T) {
	plain, metered, ticks := sandboxPair(t)
	const size = 4 << 16
	steps := [][]uint64{}
	for _, n := range []uint64{0, 1, 100, preempt.BulkChunk - 1, preempt.BulkChunk, preempt.BulkChunk + 1, 200000, size} {
		steps = append(steps, []uint64{0, 3, 0, n}, []uint64{1, 5, 7, n})
	}
	for _, c := range [][3]uint64{
		{1000, 0, 200000}, {0, 1000, 200000}, // overlapping, both directions
		{3, 3, size - 3}, {size - 70000, 0, 70000}, {0, size - 70000, 70000},
		{200000, 0, 100000}, {0, 200000, 100000}, {size, 0, 0}, {size + 1, 0, 0}, // out of bounds
		{0xffffffff, 0, 70000}, {0, 0xffffffff, 70000},
	} {
		steps = append(steps, []uint64{1, c[0], c[1], c[2]})
	}
	steps = append(steps, []uint64{0, 200000, 9, 100000}, []uint64{0, 0xfffffff0, 9, 70000})
	for _, step := range steps {
		for _, m := range []api.Module{plain, metered} {
			if _, err := call(m, "pattern", size); err != nil {
				t.Fatal(err)
			}
		}
		fn := []string{"fill", "copy"}[step[0]]
		_, wantErr := call(plain, fn, step[1:]...)
		_, gotErr := call(metered, fn, step[1:]...)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%s%v: instrumented %v, plain %v", fn, step[1:], gotErr, wantErr)
		}
		want, _ := plain.Memory().Read(0, size)
		got, _ := metered.Memory().Read(0, size)
		if !bytes.Equal(got, want) {
			i := 0
			for got[i] == want[i] {
				i++
			}
			t.Fatalf("%s%v: memory differs from byte %d", fn, step[1:], i)
		}
	}
	*ticks = 0
	if _, err := call(metered, "fill_many", 100, size); err != nil {
		t.Fatal(err)
	}
	// Each fill of 4 chunks charges 3 of them (the last runs as it is),
	// each a full refill here: a tick at least every other chunk.
	if *ticks < 100 {
		t.Fatalf("%d ticks in 100 fills of %d bytes: the chunks are not charged", *ticks, size)
	}
}
