package preempt

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// asm writes the code of one function, counting its instructions.
type asm struct {
	b []byte
	n int
}

func (a *asm) op(b ...byte) { a.b = append(a.b, b...); a.n++ }
func (a *asm) get(x byte)   { a.op(0x20, x) }
func (a *asm) set(x byte)   { a.op(0x21, x) }
func (a *asm) tee(x byte)   { a.op(0x22, x) }
func (a *asm) i32(v int32)  { a.op(appendS32([]byte{0x41}, v)...) }

func (a *asm) operand(o operand) {
	if o.kind == constOperand {
		a.i32(o.value)
	} else {
		a.get(byte(o.local))
	}
}

// Locals of a loop case: the parameters k and n, then the iterations and
// a copy of k.
const (
	caseK, caseN, caseIt, caseCopy, caseAcc = 0, 1, 2, 3, 4
	caseCap                                 = 3000 // iterations before a case returns -1
)

// loopCase is a function (k, n) -> iterations (or -1 past caseCap) whose
// loop has one of the shapes the finder looks for, or almost.
type loopCase struct {
	shape  int // 0: do-while, test after the increment; 1: while, under an if; 2: a br_if out first
	form   int // for shape 0: how the test reads k (see code)
	step   int32
	cmp    byte
	swap   bool  // the test reads (n, k) rather than (k, n)
	bound  int32 // the constant n, when not the parameter
	param  bool  // n is the parameter
	result bool  // the loop has a result (shape 0)
	heavy  bool  // every eighth iteration runs an arm charged when it runs
}

func (c loopCase) String() string {
	return fmt.Sprintf("shape %d form %d step %d cmp 0x%x swap %v n %v/%d result %v heavy %v", c.shape, c.form, c.step, c.cmp, c.swap, c.param, c.bound, c.result, c.heavy)
}

// heavyCost is what the arm of a heavy case costs: its instructions and
// its end.
const heavyCost = 4*25 + 1

// heavy writes the arm of a heavy case, after the counter.
func heavy(a *asm) {
	a.get(caseIt)
	a.i32(7)
	a.op(0x71, i32Eqz, 0x04, 0x40) // i32.and; i32.eqz; if
	for i := 0; i < 25; i++ {
		a.get(caseAcc)
		a.i32(1)
		a.op(0x6a)
		a.set(caseAcc)
	}
	a.op(0x0b)
}

// counter is the start of each iteration: it counts them, and returns -1
// after caseCap.
func counter(a *asm) {
	a.get(caseIt)
	a.i32(1)
	a.op(0x6a)
	a.set(caseIt)
	a.get(caseIt)
	a.i32(caseCap)
	a.op(i32GtU, 0x04, 0x40)
	a.i32(-1)
	a.op(0x0f)
	a.op(0x0b)
}

// code returns the function's body and the weight of its loop.
func (c loopCase) code() (body []byte, weight int) {
	n := operand{kind: constOperand, value: c.bound}
	if c.param {
		n = operand{kind: localOperand, local: caseN}
	}
	test := func(a *asm, k func()) {
		if c.swap {
			a.operand(n)
			k()
		} else {
			k()
			a.operand(n)
		}
		a.op(c.cmp)
	}
	incr := func(a *asm) {
		a.get(caseK)
		a.i32(c.step)
		a.op(0x6a)
	}
	var a asm
	var loopAt, loopEnd int // a.n after the loop instruction and after its end
	switch c.shape {
	case 0:
		if c.result {
			a.op(0x03, 0x7f)
		} else {
			a.op(0x03, 0x40)
		}
		loopAt = a.n
		counter(&a)
		if c.heavy {
			heavy(&a)
		}
		if c.result {
			a.get(caseIt)
		}
		switch c.form {
		case 0: // k = k + c; test(k, n)
			incr(&a)
			a.set(caseK)
			test(&a, func() { a.get(caseK) })
		case 1: // test(k = k + c, n)
			test(&a, func() { incr(&a); a.tee(caseK) })
		case 2: // k = copy = k + c; test(copy, n)
			incr(&a)
			a.tee(caseCopy)
			a.set(caseK)
			test(&a, func() { a.get(caseCopy) })
		case 3: // k = k + c, non-zero
			incr(&a)
			a.tee(caseK)
		}
		a.op(0x0d, 0x00) // br_if 0
		a.op(0x0b)
		loopEnd = a.n
		if !c.result {
			a.get(caseIt)
		}
	case 1:
		a.op(0x03, 0x40)
		loopAt = a.n
		test(&a, func() { a.get(caseK) })
		a.op(0x04, 0x40)
		counter(&a)
		if c.heavy {
			heavy(&a)
		}
		incr(&a)
		a.set(caseK)
		a.op(0x0c, 0x01) // br 1
		a.op(0x0b)
		a.op(0x0b)
		loopEnd = a.n
		a.get(caseIt)
	case 2:
		a.op(0x02, 0x40)
		a.op(0x03, 0x40)
		loopAt = a.n
		test(&a, func() { a.get(caseK) })
		a.op(0x0d, 0x01) // br_if 1: out
		counter(&a)
		if c.heavy {
			heavy(&a)
		}
		incr(&a)
		a.set(caseK)
		a.op(0x0c, 0x00) // br 0
		a.op(0x0b)
		loopEnd = a.n
		a.op(0x0b)
		a.get(caseIt)
	}
	a.op(0x0b)
	body = append([]byte{1, 3, 0x7f}, a.b...) // three i32 locals: the iterations, the copy, the arm's
	return append(appendU32(nil, uint32(len(body))), body...), loopEnd - loopAt
}

// module is the case as a module exporting f and, once instrumented, the
// fuel global as "fuel".
func (c loopCase) module() ([]byte, int) {
	code, weight := c.code()
	return bytes.Join([][]byte{
		[]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, []byte{1, 0x60, 2, 0x7f, 0x7f, 1, 0x7f}),
		sec(secFunction, []byte{1, 0}),
		sec(secExport, []byte{1}, name("f"), []byte{0, 0}),
		sec(secCode, []byte{1}, code),
	}, nil), weight
}

// exportFuel adds the export of the fuel global (global 0: the case has no
// other) to an instrumented case.
func exportFuel(t *testing.T, wasm []byte) []byte {
	m := &module{}
	m.split(wasm)
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range m.sections {
		body := s.body
		if s.id == secExport {
			r := s.reader()
			n := r.u32()
			body = append(appendU32(nil, n+1), r.b[r.pos:]...)
			body = append(append(body, name("fuel")...), 3, 0)
		}
		out = append(out, sec(s.id, body)...)
	}
	return out
}

// accepted says whether the finder should take the case for a counted
// loop: a test that fails when k reaches n, and a step that reaches n or,
// moving towards n under an order, passes it.
func (c loopCase) accepted() bool {
	rel := c.cmp
	if c.swap {
		rel = mirror[rel]
	}
	if c.shape == 2 {
		rel = negate[rel]
	}
	if c.shape == 0 && c.form == 3 {
		rel = i32Ne
	}
	up, one := c.step > 0, c.step == 1 || c.step == -1
	strict := rel == i32LtS || rel == i32LtU || rel == i32GtS || rel == i32GtU
	return rel == i32Ne || one && strict || up && (rel == i32LtS || rel == i32LtU) || !up && (rel == i32GtS || rel == i32GtU)
}

var interesting = []int32{0, 1, -1, 2, -2, 3, 7, 100, 2999, 3001, 65536, 1 << 20, math.MaxInt32, math.MaxInt32 - 1,
	math.MaxInt32 - 15, math.MinInt32, math.MinInt32 + 1, math.MinInt32 + 15, -100, -3001}

func pick(r *rand.Rand) int32 {
	switch r.IntN(3) {
	case 0:
		return interesting[r.IntN(len(interesting))]
	case 1:
		return interesting[r.IntN(len(interesting))] + int32(r.IntN(64)) - 32
	}
	return int32(r.Uint32())
}

// TestCountedLoops runs loops of every shape the finder knows, and some
// it must refuse, with trip counts from none to past 2^32, and checks that
// the instrumented module returns what the original does and charges at
// least the weight of every iteration that ran: a count computed short
// would let a loop run unchecked beyond its charge.
func TestCountedLoops(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	const big = 1 << 30 // a refill no case empties: the fuel tells what was charged
	refill := int32(big)
	if _, err := rt.NewHostModuleBuilder(ImportModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) { stack[0] = uint64(refill) }), nil, []api.ValueType{api.ValueTypeI32}).
		Export(ImportTick).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	steps := []int32{1, -1, 2, -2, 3, -3, 4, -4, 12, -12, 16, -16, 1 << 15, -1 << 15}
	cmps := []byte{i32Eq, i32Ne, i32LtS, i32LtU, i32GtS, i32GtU, i32LeS, i32LeU, i32GeS, i32GeU}
	counted, runs := 0, 0
	for i := 0; i < 400; i++ {
		c := loopCase{shape: r.IntN(3), form: r.IntN(4), step: steps[r.IntN(len(steps))], cmp: cmps[r.IntN(len(cmps))],
			swap: r.IntN(2) == 0, param: r.IntN(2) == 0, bound: pick(r), result: r.IntN(4) == 0, heavy: r.IntN(3) == 0}
		if c.shape != 0 {
			c.form, c.result = 0, false
		}
		wasm, weight := c.module()
		plain, err := rt.Instantiate(ctx, wasm)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		instrumented := map[int32]api.Module{}
		for _, rf := range []int32{big, 1000, 1} {
			out, err := InstrumentConfig(wasm, Config{Refill: rf})
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			if rf == big {
				// The two copies of a counted loop end with br $done;
				// else, a split loop's with br $done; end; end.
				count := bytes.Contains(out, []byte{0x0c, 0x03, 0x05})
				if count != c.accepted() {
					t.Fatalf("%v: counted %v, want %v", c, count, c.accepted())
				}
				if count {
					counted++
				}
			}
			m, err := rt.Instantiate(ctx, exportFuel(t, out))
			if err != nil {
				t.Fatalf("%v (refill %d): %v", c, rf, err)
			}
			instrumented[rf] = m
		}
		for j := 0; j < 20; j++ {
			k, n := pick(r), pick(r)
			if j%4 == 0 { // near n, to end within the cap
				k = n - c.step*int32(r.IntN(100)) + int32(r.IntN(3)) - 1
			}
			want, err := plain.ExportedFunction("f").Call(ctx, uint64(uint32(k)), uint64(uint32(n)))
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			iterations := int64(int32(want[0]))
			if iterations < 0 {
				iterations = caseCap + 1
			}
			for rf, m := range instrumented {
				refill = rf
				fuel := m.ExportedGlobal("fuel").(api.MutableGlobal)
				fuel.Set(uint64(uint32(rf)))
				got, err := m.ExportedFunction("f").Call(ctx, uint64(uint32(k)), uint64(uint32(n)))
				if err != nil {
					t.Fatalf("%v (refill %d), f(%d, %d): %v", c, rf, k, n, err)
				}
				if got[0] != want[0] {
					t.Fatalf("%v (refill %d): f(%d, %d) = %d, want %d", c, rf, k, n, int32(got[0]), int32(want[0]))
				}
				if rf == big {
					charged := int64(big) - int64(int32(fuel.Get()))
					ran := iterations * int64(weight)
					if c.heavy { // the arm ran every eighth iteration
						ran = iterations*int64(weight-heavyCost) + iterations/8*heavyCost
					}
					if charged < ran {
						t.Fatalf("%v: f(%d, %d) ran %d iterations, %d instructions, and was charged %d", c, k, n, iterations, ran, charged)
					}
				}
				runs++
			}
		}
	}
	if counted < 100 {
		t.Fatalf("only %d of the loops counted", counted)
	}
	t.Logf("%d loops counted, %d calls", counted, runs)
}

// dispatcher is a function (n) -> sum of 0..n-1 written as the Go
// compiler writes functions: a loop that opens with a br_table on a local,
// the resume point, which every jump sets and goes back to the head.
// Segment 0 sets up and hops forwards to 1, which leaves or adds and hops
// forwards to 2, which counts and jumps back to 1: back with the constant
// 1, or, when computed, with a value the rewrite cannot know.
func dispatcher(computed bool) []byte {
	const n, pc, i, acc = 0, 1, 2, 3
	var a asm
	a.op(0x02, 0x40) // block $exit
	a.op(0x03, 0x40) // loop
	a.op(0x02, 0x40)
	a.op(0x02, 0x40)
	a.op(0x02, 0x40)
	a.get(pc)
	a.op(0x0e, 3, 0, 1, 2, 2) // br_table 0 1 2, default 2
	a.op(0x0b)                // segment 0
	a.i32(0)
	a.set(i)
	a.i32(1)
	a.set(pc)
	a.op(0x0c, 2) // a hop to segment 1
	a.op(0x0b)    // segment 1
	a.get(i)
	a.get(n)
	a.op(i32GeS, 0x0d, 2) // br_if $exit
	a.get(acc)
	a.get(i)
	a.op(0x6a)
	a.set(acc)
	a.i32(2)
	a.set(pc)
	a.op(0x0c, 1) // a hop to segment 2
	a.op(0x0b)    // segment 2
	a.get(i)
	a.i32(1)
	a.op(0x6a)
	a.set(i)
	if computed {
		a.get(i)
		a.i32(0)
		a.op(0x6c) // i32.mul
		a.i32(1)
		a.op(0x6a)
	} else {
		a.i32(1)
	}
	a.set(pc)
	a.op(0x0c, 0) // back to segment 1
	a.op(0x0b)    // the loop's end
	a.op(0x0b)    // $exit
	a.get(acc)
	a.op(0x0b)
	body := append([]byte{1, 3, 0x7f}, a.b...)
	code := append(appendU32(nil, uint32(len(body))), body...)
	return bytes.Join([][]byte{
		[]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, []byte{1, 0x60, 1, 0x7f, 1, 0x7f}),
		sec(secFunction, []byte{1, 0}),
		sec(secExport, []byte{1}, name("f"), []byte{0, 0}),
		sec(secCode, []byte{1}, code),
	}, nil)
}

// TestDispatchLoops checks that a dispatch loop computes what it did, that
// its hops forward go unchecked, and that its jumps back still tick often
// enough: every iteration runs more than twenty instructions.
func TestDispatchLoops(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	const refill = 1000
	ticks := 0
	if _, err := rt.NewHostModuleBuilder(ImportModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) { ticks++; stack[0] = refill }), nil, []api.ValueType{api.ValueTypeI32}).
		Export(ImportTick).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, computed := range []bool{false, true} {
		wasm := dispatcher(computed)
		out, err := InstrumentConfig(wasm, Config{Refill: refill})
		if err != nil {
			t.Fatal(err)
		}
		// In each copy, one check that leaves the loop, at the jump back:
		// none at the head, none at the hops.
		if got := bytes.Count(out, []byte{0x04, 0x40, 0x0c}); got != 2 {
			t.Errorf("computed %v: %d checks that leave the loop, want 2", computed, got)
		}
		plain, err := rt.Instantiate(ctx, wasm)
		if err != nil {
			t.Fatal(err)
		}
		m, err := rt.Instantiate(ctx, out)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int32{0, 1, 2, 100, 100000} {
			want, err := plain.ExportedFunction("f").Call(ctx, uint64(n))
			if err != nil {
				t.Fatal(err)
			}
			ticks = 0
			got, err := m.ExportedFunction("f").Call(ctx, uint64(n))
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != want[0] {
				t.Fatalf("computed %v: f(%d) = %d, want %d", computed, n, got[0], want[0])
			}
			if ticks < int(n)*20/refill {
				t.Fatalf("computed %v: f(%d) ticked %d times", computed, n, ticks)
			}
		}
		plain.Close(ctx)
		m.Close(ctx)
	}
}
