package preempt

import (
	"math"
	"math/bits"
	"slices"
)

// What follows an opcode; 0 means the opcode is not supported.
const (
	immBad uint8 = iota
	immNone
	immBlock
	immLoop
	immEnd
	immU32
	immLocal
	immGlobal
	immBranch
	immBrTable
	immCall
	immCallIndirect
	immSelect
	immMemarg
	immI32
	immI64
	immF32
	immF64
	immHeapType
	immRefFunc
	immMisc
	immSIMD
)

var imm [256]uint8

func init() {
	set := func(kind uint8, ops ...int) {
		for _, op := range ops {
			imm[op] = kind
		}
	}
	span := func(kind uint8, from, to int) {
		for op := from; op <= to; op++ {
			imm[op] = kind
		}
	}
	set(immNone, 0x00, 0x01, 0x05, 0x0f, 0x1a, 0x1b, 0xd1)
	set(immBlock, 0x02, 0x04)
	set(immLoop, 0x03)
	set(immEnd, 0x0b)
	set(immU32, 0x25, 0x26, 0x3f, 0x40)
	set(immLocal, 0x20, 0x21, 0x22)
	set(immGlobal, 0x23, 0x24)
	set(immBranch, 0x0c, 0x0d)
	set(immBrTable, 0x0e)
	set(immCall, 0x10, 0x12)         // call, return_call
	set(immCallIndirect, 0x11, 0x13) // call_indirect, return_call_indirect
	set(immSelect, 0x1c)             // select t*
	span(immMemarg, 0x28, 0x3e)      // loads and stores
	set(immI32, 0x41)
	set(immI64, 0x42)
	set(immF32, 0x43)
	set(immF64, 0x44)
	span(immNone, 0x45, 0xc4) // numeric, sign extension
	set(immHeapType, 0xd0)    // ref.null
	set(immRefFunc, 0xd2)     // ref.func
	set(immMisc, 0xfc)        // saturating truncation, bulk memory, tables
	set(immSIMD, 0xfd)
	// Left unsupported: exception handling (0x06-0x0a, 0x18, 0x19, 0x1f),
	// typed function references (0x14, 0x15, 0xd3-0xd6), GC (0xfb),
	// threads (0xfe): wazero's WebAssembly 2.0 has none of them.
}

type region struct {
	at   int // offset of the check's weight in the code; -1 for none
	cost int // instructions of the region, imported calls weighted
	// arms is the cost of the region's arms that are charged when they
	// run (heavyArm), not in cost.
	arms  int
	calls bool // it calls a function of the module or through a table
}

// heavyArm is the cost from which the arm of an if is charged when it
// runs, by a subtraction without a check at its start, rather than by the
// check of its region: a block of a frame's work in a loop over samples
// (vad's, 1,600 instructions with two host calls, runs every 80th
// sample) would otherwise weigh on every iteration, and the tick come
// that much sooner. The checks stay where they were, so nothing runs
// longer between two of them than before.
const heavyArm = 64

// arm is what walk's first pass finds out about an if: the costs of its
// arms charged when they run, 0 for those its region's check charges.
type arm struct{ then, els int }

type frame struct {
	loop bool
	// form is how the loop was written (emitter.loop, emitter.split,
	// emitter.counted). The two last write the loop twice: head is its
	// "loop bt" in the input, body where the instructions after the head
	// start in the code of the first copy.
	form   int
	head   []byte
	body   int
	region int // the region the instructions inside the frame belong to
	// dispatch: a split dispatch loop, whose back edges have checks
	// (emitter.backEdge).
	dispatch bool
	// added counts the labels the instrumentation put around this frame
	// and those enclosing it, which branches out of it must skip.
	added uint32
	// id names this frame, or the else part of an if, among all the
	// frames of the function, and cond is an if's condition, when it is
	// one a counted loop can test (walk's first pass).
	id   int
	cond condition
	// arm indexes an if's arm in finder.arms (-1 for other frames); its
	// current arm started when the region cost was armStart, and is the
	// else arm when inElse. inCounted: the frame is in a counted loop,
	// which charges its arms with the rest of its iterations.
	arm       int
	armStart  int
	inElse    bool
	inCounted bool
}

// scratch is reused from one function body to the next.
type scratch struct {
	code, out []byte
	regions   []region
	ctrl      []frame
	find      finder
}

// Where a function keeps its fuel.
const (
	fuelNone   = iota // no checks: a tiny function without loops
	fuelLocal         // a local, loaded at entry and after calls, stored back before calls and exits
	fuelGlobal        // the global itself: for functions that call from inside loops
	stopFlag          // Flag mode
)

// emitter writes the instrumented code of a function during walk's second
// pass. from is how far the input has been copied to code.
type emitter struct {
	m    *module
	src  []byte
	code []byte
	from int
	fuel int
	// local is the fuel local (fuelLocal); n holds a table operation's
	// count (charge), and a, b and n a bulk operation's operands in its
	// helper (bulkHelper); t a counted loop's trip count and charge.
	local, a, b, n, t uint32
	// loops is what walk's first pass found out about each loop, in
	// order, and next how many of them the second has passed.
	loops []loopInfo
	next  int
	// jumps are the weights of the checks of the branches back to a
	// dispatch loop's head, 0 for none (finder.jump), jump how many of
	// them the second pass has passed; arms and nextArm the same for ifs.
	jumps   []int
	jump    int
	arms    []arm
	nextArm int
}

// How a loop is written.
const (
	inPlace = iota // with its check at its head: a loop with parameters
	wrapped        // with its check at its head, and its tick outside (emitter.loop)
	split          // twice: a copy that ticks in another (emitter.split)
	counted        // twice: a copy without checks, charged on entry (emitter.counted)
)

// copyTo copies the input up to offset end.
func (e *emitter) copyTo(end int) {
	e.code = append(e.code, e.src[e.from:end]...)
	e.from = end
}

// take subtracts the weight to be patched in at the returned offset from
// the fuel and leaves the new fuel on the stack.
func (e *emitter) take(b []byte) ([]byte, int) {
	if e.fuel == fuelLocal {
		b = appendU32(append(b, 0x20), e.local) // local.get $f
	} else {
		b = appendU32(append(b, 0x23), e.m.flag) // global.get $fuel
	}
	b = append(b, 0x41) // i32.const W
	at := len(b)
	b = append(b, 0, 0, 0, 0, 0, 0x6b) // i32.sub
	if e.fuel == fuelLocal {
		b = appendU32(append(b, 0x22), e.local) // local.tee $f
	} else {
		b = appendU32(append(b, 0x24), e.m.flag) // global.set $fuel
		b = appendU32(append(b, 0x23), e.m.flag) // global.get $fuel
	}
	return append(b, 0x41, 0x00, 0x48), at // i32.const 0; i32.lt_s
}

// refill calls the tick and stores the fuel it returns.
func (e *emitter) refill(b []byte) []byte {
	b = appendU32(append(b, 0x10), e.m.tick)
	if e.fuel == fuelLocal {
		return appendU32(append(b, 0x21), e.local)
	}
	return appendU32(append(b, 0x24), e.m.flag)
}

// check appends a check done in place (at function entry, or at the head
// of a loop that cannot be wrapped) and returns the offset of its weight,
// or -1.
func (e *emitter) check(b []byte) ([]byte, int) {
	switch e.fuel {
	case fuelLocal, fuelGlobal:
		b, at := e.take(b)
		b = append(b, 0x04, 0x40) // if
		b = e.refill(b)
		return append(b, 0x0b), at
	case stopFlag:
		// global.get $stop; if; unreachable; end
		b = appendU32(append(b, 0x23), e.m.flag)
		return append(b, 0x04, 0x40, 0x00, 0x0b), -1
	}
	return b, -1
}

// loop writes the head of the loop whose "loop bt" spans the input from
// start to end, with its check, and returns the offset of the check's
// weight and the form: wrapped, so that the tick is called outside the
// loop (a call inside a loop, even one never made, costs it registers),
// or in place. The loop
//
//	loop bt ... end
//
// becomes
//
//	block bt                  ;; $done
//	  loop                    ;; $again
//	    block                 ;; $refill
//	      loop bt CHECK ... end   ;; CHECK: take; leave for $refill (emitter.leave)
//	      br $done
//	    end
//	    call $tick; set the fuel
//	    br $again             ;; the loop starts over, at its head
//	  end
//	  unreachable
//	end
//
// which only a loop without parameters allows (the stack at the head of
// the loop is then empty).
func (e *emitter) loop(start, end int, params bool) (at, form int) {
	e.copyTo(start)
	if e.fuel == fuelLocal || e.fuel == fuelGlobal {
		if !params {
			bt := e.src[start+1 : end]
			e.code = append(append(e.code, 0x02), bt...) // block bt
			e.code = append(e.code, 0x03, 0x40, 0x02, 0x40)
			e.copyTo(end)
			e.code, at = e.leave(e.code, 1) // $refill
			return at, wrapped
		}
	}
	e.copyTo(end)
	e.code, at = e.check(e.code)
	return at, inPlace
}

// split writes the head of the leaf loop l whose "loop bt" spans the
// input from start to end, the first of two copies, and returns where the
// copy starts in the code. A loop whose check can tick keeps the values it
// carries in memory (emitter.loop). This copy's check never ticks: when it
// finds the fuel empty, it leaves the loop for the second copy, which
// continues from the same head, ticks at its first check, and runs the
// rest of the loop. The loop
//
//	loop bt ... end
//
// becomes
//
//	block bt                  ;; $done
//	  block
//	    block                 ;; $slow
//	      loop bt CHECK ... end   ;; CHECK: take; leave for $slow
//	      br $done
//	    end
//	  end
//	  loop                    ;; $again
//	    block                 ;; $refill
//	      loop bt CHECK ... end   ;; CHECK: take; leave for $refill
//	      br $done
//	    end
//	    call $tick; set the fuel
//	    br $again
//	  end
//	  unreachable
//	end
//
// Both copies sit three labels deep and leave for the label just outside
// them, so they are the same bytes: walk writes the first, with weights
// the first pass measured, and unsplit copies it into the second.
//
// A dispatch loop (see finder.dispatching) has no check at its head but one
// before it, and one at each back edge that may go back to an earlier
// segment.
func (e *emitter) split(start, end int, l *loopInfo) (body int) {
	e.copyTo(start)
	if l.dispatch {
		var at int
		e.code, at = e.check(e.code)
		putWeight(e.code[at:], l.weight, int(e.m.refill))
	}
	bt := e.src[start+1 : end]
	e.code = append(append(e.code, 0x02), bt...)    // block bt
	e.code = append(e.code, 0x02, 0x40, 0x02, 0x40) // block; block $slow
	body = len(e.code)
	e.copyTo(end)
	if !l.dispatch {
		var at int
		e.code, at = e.leave(e.code, 1) // $slow
		putWeight(e.code[at:], l.weight, int(e.m.refill))
	}
	return body
}

// backEdge writes the check before the branch at start that goes back to
// the head of the dispatch loop of label d, unless it is a hop to a later
// segment.
func (e *emitter) backEdge(start int, d uint32) {
	weight := e.jumps[e.jump]
	e.jump++
	if weight == 0 {
		return
	}
	e.copyTo(start)
	var at int
	e.code, at = e.leave(e.code, d+1)
	putWeight(e.code[at:], weight, int(e.m.refill))
}

// leave appends a check that leaves for the label depth when the fuel is
// empty, and returns the offset of its weight. An if around a br rather
// than a br_if: wazevo compares and jumps in two instructions then, where
// a br_if to a label that takes the loop's values costs it four more.
func (e *emitter) leave(b []byte, depth uint32) ([]byte, int) {
	b, at := e.take(b)
	b = appendU32(append(b, 0x04, 0x40, 0x0c), depth+1) // if; br
	return append(b, 0x0b), at
}

// unsplit writes the rest of the split loop whose first copy starts at
// body in the code and ends at the reader's position end.
func (e *emitter) unsplit(body, end int) {
	e.copyTo(end)
	first := len(e.code)
	b := append(e.code, 0x0c, 0x02, 0x0b, 0x0b) // br $done; end $slow; end
	b = append(b, 0x03, 0x40, 0x02, 0x40)       // loop $again; block $refill
	b = append(b, e.code[body:first]...)
	b = append(b, 0x0c, 0x02, 0x0b) // br $done; end $refill
	b = e.refill(b)
	e.code = append(b, 0x0c, 0x00, 0x0b, 0x00, 0x0b) // br $again; end; unreachable; end
}

// spend subtracts weight from the fuel, after the input up to end, with no
// check: an arm charged when it runs (heavyArm). The fuel cannot wrap: the
// arms charged between two checks are in one region, whose instructions
// FunctionBytes caps.
func (e *emitter) spend(end, weight int) {
	e.copyTo(end)
	b := appendS32(append(e.getFuel(e.code), 0x41), int32(min(weight, int(e.m.refill))))
	e.code = e.setFuel(append(b, 0x6b)) // i32.sub
}

// endArm ends the current arm of the if t, at its else or its end, in the
// region g: an arm charged when it runs leaves g's cost. The first pass
// decides which (finder.arms), the second follows.
func (m *module) endArm(t *frame, g *region, f *finder, e *emitter) {
	if t.arm < 0 {
		return
	}
	w := g.cost - t.armStart
	switch {
	case f != nil:
		if w < heavyArm {
			return
		}
		if t.inElse {
			f.arms[t.arm].els = w
		} else {
			f.arms[t.arm].then = w
		}
		if f.active {
			f.heavy += w
		}
	case e != nil && !t.inCounted:
		if w = e.arms[t.arm].then; t.inElse {
			w = e.arms[t.arm].els
		}
	default:
		return
	}
	g.cost -= w
	g.arms += w
}

// unwrap writes the rest of a wrapped loop, after its end at the reader's
// position.
func (e *emitter) unwrap(end int) {
	e.copyTo(end)
	e.code = append(e.code, 0x0c, 0x02, 0x0b) // br $done; end
	e.code = e.refill(e.code)
	e.code = append(e.code, 0x0c, 0x00, 0x0b, 0x00, 0x0b) // br $again; end; unreachable; end
}

// save writes the fuel local back to the global before the instruction at
// start, which calls or leaves the function.
func (e *emitter) save(start int) {
	if e.fuel == fuelLocal {
		e.copyTo(start)
		e.code = appendU32(append(e.code, 0x20), e.local)
		e.code = appendU32(append(e.code, 0x24), e.m.flag)
	}
}

// load reads the fuel local back from the global after a call ending at end.
func (e *emitter) load(end int) {
	if e.fuel == fuelLocal {
		e.copyTo(end)
		e.code = appendU32(append(e.code, 0x23), e.m.flag)
		e.code = appendU32(append(e.code, 0x21), e.local)
	}
}

// getFuel and setFuel read and write the fuel where the function keeps it.
func (e *emitter) getFuel(b []byte) []byte {
	if e.fuel == fuelLocal {
		return appendU32(append(b, 0x20), e.local) // local.get $f
	}
	return appendU32(append(b, 0x23), e.m.flag) // global.get $fuel
}

func (e *emitter) setFuel(b []byte) []byte {
	if e.fuel == fuelLocal {
		return appendU32(append(b, 0x21), e.local) // local.set $f
	}
	return appendU32(append(b, 0x24), e.m.flag) // global.set $fuel
}

// ifEmpty refills the fuel when it is negative.
func (e *emitter) ifEmpty(b []byte) []byte {
	b = e.getFuel(b)
	b = append(b, 0x41, 0x00, 0x48, 0x04, 0x40) // i32.const 0; i32.lt_s; if
	b = e.refill(b)
	return append(b, 0x0b)
}

// charge subtracts an operation's count (on top of the stack, at most
// maxCharge) from the fuel before the operation at start, and refills it
// if that emptied it: a table.fill or memory.init then costs what it
// does, and no number of them in a row can wrap the fuel.
func (e *emitter) charge(start int) {
	if e.fuel != fuelLocal && e.fuel != fuelGlobal {
		return
	}
	e.copyTo(start)
	b := appendU32(append(e.code, 0x22), e.n) // local.tee $n
	b = e.getFuel(b)
	// select(n, maxCharge, n < maxCharge): the count, unsigned, capped.
	b = appendU32(append(b, 0x20), e.n)
	b = appendS32(append(b, 0x41), maxCharge)
	b = appendU32(append(b, 0x20), e.n)
	b = appendS32(append(b, 0x41), maxCharge)
	b = append(b, 0x49, 0x1b, 0x6b) // i32.lt_u; select; i32.sub
	b = e.setFuel(b)
	e.code = e.ifEmpty(b)
}

// Opcodes of the bulk memory operations (after 0xfc).
const (
	memoryCopy = 10
	memoryFill = 11
)

// bulk replaces the memory.copy or memory.fill spanning the input from
// start to end by a call to the module's helper for it (bulkHelper), which
// takes the operands on the stack and the fuel, and returns the fuel. One
// helper per module rather than its code at every operation: the chunked
// operation is ~140 bytes where the original is 3, and wazevo compiles
// each fill as a loop of its own, so a 10 KB module of 1,000 fills became
// 144 KB that took 2.9 s and 177 MB to compile (RATIONALE.md, "Loading is
// bounded by the module's size").
func (e *emitter) bulk(start, end int, op uint32) {
	e.copyTo(start)
	e.from = end
	b := e.getFuel(e.code)
	b = appendU32(append(b, 0x10), e.m.helper(op)) // call $helper
	e.code = e.setFuel(b)
}

// bulkHelper returns the body of the helper of bulk for op, of type
// (a, b, n, fuel) -> fuel: it moves BulkChunk bytes at a time, charging
// each chunk and calling the tick when the fuel runs out. An operation
// that fits in a chunk runs as it is. A larger one that would go out of
// bounds runs as it is too, first, so that it traps before it writes
// anything, as the original does; a copy whose destination lies above its
// source moves its chunks from the end down, so that overlapping ranges
// copy as memmove.
func (m *module) bulkHelper(op uint32) []byte {
	e := &emitter{m: m, fuel: fuelLocal, a: 0, b: 1, n: 2, local: 3}
	get := func(b []byte, local uint32) []byte { return appendU32(append(b, 0x20), local) }
	set := func(b []byte, local uint32) []byte { return appendU32(append(b, 0x21), local) }
	add := func(b []byte, local uint32, sign byte) []byte { // local ±= BulkChunk
		b = get(b, local)
		b = appendS32(append(b, 0x41), BulkChunk)
		return set(append(b, sign), local)
	}
	operation := func(b []byte, n func([]byte) []byte) []byte {
		b = get(get(b, e.a), e.b)
		b = n(b)
		if op == memoryFill {
			return append(b, 0xfc, memoryFill, 0x00)
		}
		return append(b, 0xfc, memoryCopy, 0x00, 0x00)
	}
	whole := func(b []byte) []byte { return get(b, e.n) }
	chunk := func(b []byte) []byte { return appendS32(append(b, 0x41), BulkChunk) }
	// past: (u64)local + n > the memory's size in bytes.
	past := func(b []byte, local uint32) []byte {
		b = append(get(b, local), 0xad) // i64.extend_i32_u
		b = append(get(b, e.n), 0xad, 0x7c)
		b = append(b, 0x3f, 0x00, 0xad, 0x42, 0x10, 0x86) // memory.size; i64.extend_i32_u; i64.const 16; i64.shl
		return append(b, 0x56)                            // i64.gt_u
	}
	// chunks loops while n > BulkChunk, running body then the check.
	chunks := func(b []byte, body func([]byte) []byte) []byte {
		b = append(b, 0x02, 0x40, 0x03, 0x40) // block; loop
		b = get(b, e.n)
		b = appendS32(append(b, 0x41), BulkChunk)
		b = append(b, 0x4d, 0x0d, 0x01) // i32.le_u; br_if 1
		b = body(b)
		var at int
		b, at = e.take(b)
		putWeight(b[at:], BulkChunk, int(e.m.refill))
		b = append(b, 0x04, 0x40) // if
		b = e.refill(b)
		return append(b, 0x0b, 0x0c, 0x00, 0x0b, 0x0b) // end; br 0; end; end
	}

	b := []byte{0x00} // no locals but the parameters
	b = get(b, e.n)
	b = appendS32(append(b, 0x41), BulkChunk)
	b = append(b, 0x4b, 0x04, 0x40) // i32.gt_u; if
	b = past(b, e.a)
	if op == memoryCopy {
		b = append(past(b, e.b), 0x72) // i32.or
	}
	b = append(b, 0x04, 0x40) // if
	b = append(operation(b, whole), 0x0b)
	forward := func(b []byte) []byte {
		b = operation(b, chunk)
		b = add(b, e.a, 0x6a)
		if op == memoryCopy {
			b = add(b, e.b, 0x6a)
		}
		return add(b, e.n, 0x6b)
	}
	if op == memoryFill {
		b = chunks(b, forward)
	} else {
		b = append(get(get(b, e.a), e.b), 0x4b, 0x04, 0x40) // dst > src: if
		b = chunks(b, func(b []byte) []byte {
			b = add(b, e.n, 0x6b)
			// dst + n, src + n, BulkChunk
			b = append(get(get(b, e.a), e.n), 0x6a)
			b = append(get(get(b, e.b), e.n), 0x6a)
			b = chunk(b)
			return append(b, 0xfc, memoryCopy, 0x00, 0x00)
		})
		b = append(b, 0x05) // else
		b = chunks(b, forward)
		b = append(b, 0x0b)
	}
	b = append(b, 0x0b) // end
	b = operation(e.chargeBytes(b), whole)
	return append(get(b, e.local), 0x0b) // the fuel; end
}

// chargeBytes subtracts from the fuel the bytes the last part of a
// memory.fill or memory.copy moves (at most BulkChunk, in local n; the
// whole operation when it fits in a chunk), and refills it if that emptied
// it: a byte costs about what an instruction does, as in the chunks before
// it. Without it an operation that fits in a chunk weighed bulkCost
// whatever its size, and a loop of 60 KiB fills ran ~20 ms between two
// ticks, overrunning a 5 ms budget to 34 ms (TestBudgetStopsRunawayProcess).
func (e *emitter) chargeBytes(b []byte) []byte {
	if e.fuel != fuelLocal && e.fuel != fuelGlobal {
		return b
	}
	b = e.getFuel(b)
	b = appendU32(append(b, 0x20), e.n) // local.get $n
	b = append(b, 0x6b)                 // i32.sub
	b = e.setFuel(b)
	return e.ifEmpty(b)
}

func (m *module) codeSection(s *section) []byte {
	r := s.reader()
	n := r.u32()
	if n != m.funcs {
		r.fail("%d function bodies for %d declared functions", n, m.funcs)
	}
	r.over("code_bytes", uint64(len(s.body)), uint64(m.limits.CodeBytes), "bytes of code")
	out := make([]byte, 0, len(s.body)+len(s.body)/8+16)
	var sc scratch
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		r.over("function_bytes", uint64(size), uint64(m.limits.FunctionBytes), "bytes in the body of function %d", m.funcImports+i)
		start := r.pos
		body := m.body(&reader{b: r.bytes(size), base: s.off + start}, m.funcImports+i, m.params[m.funcType[i]], &sc)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
		m.outgrown(len(out)) // stop a rewrite that grows too much as soon as it does
	}
	if !r.done() {
		r.fail("junk after the code section")
	}
	for _, op := range m.helpers {
		body := m.bulkHelper(op)
		out = append(appendU32(out, uint32(len(body))), body...)
	}
	return append(appendU32(nil, n+uint32(len(m.helpers))), out...)
}

// bulkCost is what the instructions around a memory.copy or memory.fill
// weigh; the bytes it moves are charged as it runs (bulk, chargeBytes).
const bulkCost = 12

// shape is what walk's first pass finds in a function.
type shape struct {
	top    region // the function's top level
	labels uint64 // of its br_tables (Limits.BranchTableEntries)
	loops  bool
	bulk   bool // memory or table operations charged by their length
	looped bool // a call from inside a loop
}

// body instruments one function body in two passes over its code: the
// first finds what the function needs, the second writes it.
//
// A region is the function's top level or a loop's body, without the loops
// nested in it: each region's check charges the region's instructions each
// time control enters it (function entry, every loop iteration). A
// function counts its fuel in a local of its own, in a register, unless it
// calls from inside a loop: the local is loaded from the fuel global at
// entry and after each call, and stored back before each call and wherever
// the function may return, which would cost more than it saves in a loop
// that calls anyway.
func (m *module) body(r *reader, index, params uint32, sc *scratch) []byte {
	count := r.u32()
	entriesAt := r.pos
	locals := uint64(params)
	for n := count; n > 0; n-- {
		locals += uint64(r.u32())
		r.over("function_locals", locals, m.limits.FunctionLocals, "locals in function %d", index)
		r.valtype()
	}
	m.locals += locals
	r.over("module_locals", m.locals, m.limits.ModuleLocals, "locals in all functions")
	header := r.b[:r.pos]
	entries := r.b[entriesAt:r.pos]
	codeAt := r.pos

	sh := m.walk(r, uint32(locals), sc, nil)
	r.over("branch_table_entries", sh.labels, m.limits.BranchTableEntries, "br_table labels in function %d", index)
	m.labels += sh.labels
	r.over("branch_table_entries", m.labels, m.moduleLabels(), "br_table labels in all functions (one per 16 bytes of module)")
	entry := sh.top.calls || sh.top.cost+sh.top.arms > LeafLimit
	f := &sc.find
	e := &emitter{m: m, src: r.b, code: sc.code[:0], from: codeAt, loops: f.loops, jumps: f.jumps, arms: f.arms}
	added := uint32(0) // locals added
	switch {
	case m.mode == Flag:
		e.fuel = stopFlag
	case !entry && !sh.loops && !sh.bulk:
		e.fuel = fuelNone
	case sh.looped:
		e.fuel = fuelGlobal
	default:
		e.fuel = fuelLocal
		e.local, added = uint32(locals), 1
	}
	if sh.bulk && e.fuel != stopFlag {
		e.n = uint32(locals) + added
		added++
	}
	if e.fuel != stopFlag && slices.ContainsFunc(e.loops, func(l loopInfo) bool { return l.counts }) {
		e.t = uint32(locals) + added
		added++
	}
	r.pos = codeAt
	top := m.walk(r, uint32(locals), sc, e).top
	e.copyTo(len(r.b))

	out := sc.out[:0]
	if added > 0 {
		out = appendU32(out, count+1)
		out = append(out, entries...)
		out = append(out, byte(added), 0x7f)
	} else {
		out = append(out, header...)
	}
	if e.fuel == fuelLocal {
		out = appendU32(append(out, 0x23), m.flag)  // global.get $fuel
		out = appendU32(append(out, 0x21), e.local) // local.set $f
	}
	if entry {
		var at int
		out, at = e.check(out)
		if at >= 0 {
			putWeight(out[at:], top.cost, int(m.refill))
		}
	}
	out = append(out, e.code...)
	sc.code, sc.out = e.code, out
	return out
}

// walk decodes a function's code, from r's position to its final end, and
// returns its shape. With an emitter, it also writes the instrumented code.
// locals counts the function's parameters and locals: a local or global
// index out of range would name what the instrumentation adds (the fuel),
// and is an error.
//
// The first pass in Fuel mode also finds out about the loops (finder):
// which are leaves, which count, which dispatch.
func (m *module) walk(r *reader, locals uint32, sc *scratch, e *emitter) (sh shape) {
	regions, ctrl := sc.regions[:0], sc.ctrl[:0]
	var f *finder
	if e == nil && m.mode == Fuel {
		f = &sc.find
		f.reset(locals)
	}
	regions = append(regions, region{at: -1})
	ctrl = append(ctrl, frame{region: 0, arm: -1})
	cur, inLoop := 0, 0
	for len(ctrl) > 0 {
		start := r.pos
		op := r.byte()
		regions[cur].cost++
		top := ctrl[len(ctrl)-1]
		in := instr{op: op}
		switch imm[op] {
		case immNone:
			if op == 0x0f && e != nil { // return
				e.save(start)
			}
			if op == 0x05 { // else
				t := &ctrl[len(ctrl)-1]
				m.endArm(t, &regions[cur], f, e)
				t.armStart, t.inElse = regions[cur].cost, true
				if f != nil { // another frame, as far as the finder knows
					t.id, t.cond = f.newID(), condition{}
				}
				if e != nil && t.arm >= 0 && !t.inCounted && e.arms[t.arm].els > 0 {
					e.spend(r.pos, e.arms[t.arm].els)
				}
			}
		case immBlock:
			m.blocktype(r)
			fr := frame{region: cur, added: top.added, arm: -1, inCounted: top.inCounted}
			if f != nil {
				fr.id = f.newID()
				if op == 0x04 { // if
					fr.cond = f.cond()
					fr.arm = len(f.arms)
					f.arms = append(f.arms, arm{})
				}
			}
			if e != nil && op == 0x04 && e.nextArm < len(e.arms) {
				fr.arm = e.nextArm
				e.nextArm++
				if a := e.arms[fr.arm]; a.then > 0 && !fr.inCounted {
					e.spend(r.pos, a.then)
				}
			}
			fr.armStart = regions[cur].cost
			ctrl = append(ctrl, fr)
			r.over("nesting", uint64(len(ctrl)-1), uint64(m.limits.Nesting), "levels of nested blocks")
		case immLoop:
			params := m.blocktype(r)
			sh.loops = true
			inLoop++
			fr := frame{loop: true, region: len(regions), added: top.added, arm: -1}
			at := -1
			if f != nil {
				fr.id = f.newID()
				f.enter(len(ctrl)+1, start, params)
			}
			if e != nil {
				var l loopInfo
				if e.next < len(e.loops) {
					l = e.loops[e.next]
				}
				e.next++
				fr.head = e.src[start:r.pos]
				switch { // (Flag mode finds nothing)
				case l.counts:
					fr.form, fr.body = counted, e.counted(start, r.pos, &l)
					fr.added += 4
					fr.inCounted = true
				case l.leaf:
					fr.form, fr.dispatch = split, l.dispatch
					fr.body = e.split(start, r.pos, &l)
					fr.added += 3
				default:
					if at, fr.form = e.loop(start, r.pos, params); fr.form == wrapped {
						fr.added += 3
					}
				}
			}
			regions = append(regions, region{at: at})
			cur = len(regions) - 1
			ctrl = append(ctrl, fr)
			r.over("nesting", uint64(len(ctrl)-1), uint64(m.limits.Nesting), "levels of nested blocks")
		case immEnd:
			if len(ctrl) == 1 && e != nil { // the function's end
				e.save(start)
			}
			m.endArm(&top, &regions[cur], f, e)
			if f != nil {
				f.ended(len(ctrl)-1, regions[cur].cost)
				if f.active && len(ctrl) == f.depth {
					f.leave(regions[top.region].cost, r.pos)
				}
			}
			ctrl = ctrl[:len(ctrl)-1]
			if top.loop {
				inLoop--
			}
			switch {
			case e == nil:
			case top.form == wrapped:
				e.unwrap(r.pos)
			case top.form == split:
				e.unsplit(top.body, r.pos)
			case top.form == counted:
				regions[top.region].at = e.uncount(top.head, top.body, r.pos)
			}
			if len(ctrl) > 0 {
				cur = ctrl[len(ctrl)-1].region
			}
		case immBranch:
			at := r.pos
			d := r.u32()
			if f != nil && int(d) < len(ctrl) {
				f.branch(op, len(ctrl)-1-int(d), ctrl)
			}
			if e != nil {
				if d == uint32(len(ctrl)-1) { // to the function's end
					e.save(start)
				}
				if t := len(ctrl) - 1 - int(d); t >= 0 && ctrl[t].dispatch {
					e.backEdge(start, d)
				}
				e.label(at, r.pos, d, ctrl)
			}
		case immBrTable:
			out := false
			n := r.u32()
			sh.labels += uint64(n) + 1
			labels := r.pos
			var x uint32
			opens := false
			if f != nil {
				x, opens = f.dispatching(len(ctrl))
				f.table = f.table[:0]
			}
			back, dispatch := uint32(0), -1           // a label to a dispatch loop, and the loop
			backs := false                            // a label to the loop the finder follows
			for i := uint64(0); i <= uint64(n); i++ { // n labels and the default
				d := r.u32()
				out = out || d == uint32(len(ctrl)-1)
				if f != nil && f.active && int(d) == len(ctrl)-f.depth {
					f.edges += 2 // a back edge the finder does not follow
					backs = true
				}
				if opens {
					f.table = append(f.table, d)
				}
				if t := len(ctrl) - 1 - int(d); e != nil && t >= 0 && ctrl[t].dispatch {
					back, dispatch = d, t
				}
			}
			if opens {
				f.opened(x, len(ctrl))
			}
			if backs && f.k > 0 {
				f.jumps = append(f.jumps, unknownJump)
			}
			if e != nil {
				if dispatch >= 0 {
					e.backEdge(start, back)
				}
				if out {
					e.save(start)
				}
				if top.added > 0 {
					// Rewrite every label.
					end := r.pos
					rr := &reader{b: r.b, pos: labels, base: r.base}
					for i := uint64(0); i <= uint64(n); i++ {
						at := rr.pos
						d := rr.u32()
						e.label(at, rr.pos, d, ctrl)
					}
					r.pos = end
				}
			}
		case immU32:
			r.u32()
		case immLocal:
			i := r.u32()
			if i >= locals {
				r.fail("local %d does not exist (%d locals)", i, locals)
			}
			if f != nil {
				in.local = i
				if op != 0x20 { // local.set, local.tee
					f.wrote(i, ctrl)
				}
			}
		case immGlobal:
			m.global(r)
		case immCall, immRefFunc:
			at := r.pos
			f := r.u32()
			own := f >= m.funcImports
			if op == 0x10 && !own {
				regions[cur].cost += ImportCallCost
			} else if imm[op] == immCall {
				regions[cur].calls = true
				sh.looped = sh.looped || inLoop > 0
			}
			if e == nil {
				break
			}
			if imm[op] == immCall && (own || op == 0x12) {
				e.save(start)
			}
			if m.shift != 0 && own {
				e.copyTo(at)
				e.code = appendU32(e.code, f+m.shift)
				e.from = r.pos
			}
			if op == 0x10 && own {
				e.load(r.pos)
			}
		case immCallIndirect:
			r.u32()
			r.u32()
			regions[cur].calls = true
			sh.looped = sh.looped || inLoop > 0
			if e != nil {
				e.save(start)
				if op == 0x11 {
					e.load(r.pos)
				}
			}
		case immSelect:
			for n := r.u32(); n > 0; n-- {
				r.valtype()
			}
		case immMemarg:
			r.memarg()
		case immI32:
			r.skipLEB(5)
			if f != nil {
				in.value = s32(r.b[start+1 : r.pos])
			}
		case immI64:
			r.skipLEB(10)
		case immF32:
			r.bytes(4)
		case immF64:
			r.bytes(8)
		case immHeapType:
			r.skipLEB(5)
		case immMisc:
			switch sub := misc(r); sub {
			case memoryCopy, memoryFill:
				sh.bulk = true
				regions[cur].cost += bulkCost
				if f != nil {
					f.ok = false
				}
				if e != nil && e.fuel != stopFlag {
					e.bulk(start, r.pos, sub)
				}
			case 8, 12, 14, 15, 17: // memory.init, table.init/copy/grow/fill
				sh.bulk = true
				if f != nil {
					f.ok = false
				}
				if e != nil {
					e.charge(start)
				}
			}
		case immSIMD:
			simd(r)
		default:
			r.pos = start
			r.fail("unsupported instruction 0x%02x (exception handling, threads, GC and typed function references are not supported)", op)
		}
		if f != nil {
			f.push(in)
		}
	}
	if !r.done() {
		r.fail("junk after the end of a function body")
	}
	if e != nil && (e.fuel == fuelLocal || e.fuel == fuelGlobal) {
		for _, g := range regions[1:] {
			if g.at >= 0 { // split loops have their weights already
				putWeight(e.code[g.at:], g.cost, int(e.m.refill))
			}
		}
	}
	sc.regions, sc.ctrl = regions, ctrl
	sh.top = regions[0]
	return sh
}

// label rewrites a branch's label d, read from at to end, when the
// instrumentation put labels between the branch and its target.
func (e *emitter) label(at, end int, d uint32, ctrl []frame) {
	if int(d) >= len(ctrl) {
		return // an invalid label, which wazero reports
	}
	extra := ctrl[len(ctrl)-1].added - ctrl[len(ctrl)-1-int(d)].added
	if extra == 0 {
		return
	}
	e.copyTo(at)
	e.code = appendU32(e.code, d+extra)
	e.from = end
}

// blocktype reads the type of a block, loop or if and reports whether it
// takes parameters.
func (m *module) blocktype(r *reader) (params bool) {
	switch r.peek() {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		r.pos++
		return false
	case 0x63, 0x64:
		r.pos++
		r.skipLEB(5)
		return false
	}
	t := r.s33()
	if t < 0 || t >= int64(m.types) {
		r.fail("block type %d does not exist", t)
	}
	return m.params[t] > 0
}

// misc passes over the immediates of a 0xfc instruction and returns its
// number.
func misc(r *reader) uint32 {
	sub := r.u32()
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // saturating float-to-int
	case 8, 10, 12, 14: // memory.init, memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	case 9, 11, 13, 15, 16, 17: // data.drop, memory.fill, elem.drop, table.grow/size/fill
		r.u32()
	default:
		r.fail("unsupported instruction 0xfc %d", sub)
	}
	return sub
}

// simd passes over the immediates of a 0xfd instruction.
func simd(r *reader) {
	switch sub := r.u32(); {
	case sub <= 11 || sub == 92 || sub == 93: // loads, store, load_zero
		r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		r.byte()
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		r.memarg()
		r.byte()
	case sub > 255:
		r.fail("unsupported instruction 0xfd %d (relaxed SIMD is not supported)", sub)
	}
}

// Counted loops. A loop whose trip count is known when it starts needs no
// check inside: it is charged its count times its weight once, before it
// starts, and runs without a check. A loop counts when
//
//   - it is a leaf (loopInfo);
//   - it has one back edge, the branch that starts its next iteration;
//   - one local, k, is written once in the loop, by k = k ± c (0 < c ≤
//     2^15), on every path to the back edge (the write dominates it);
//   - every path to the back edge also passes a test of k against a local
//     the loop does not write, or a constant, n: the back edge is a br_if
//     on it, or lies in the then part of an if on it, or a br_if that
//     leaves the loop on it comes first; and the test fails (the loop
//     ends) once k reaches n.
//
// An i32 that moves by ±1 passes every value, n among them, within 2^32
// steps: any test that fails when k equals n (k ≠ n, or k < n, k > n,
// signed or not, whichever way k moves) ends the loop within the distance
// from k to n. Longer steps reach n exactly when the distance is a
// multiple of the step (k ≠ n), or pass it without wrapping when n is far
// enough from the end of the range (k < n moving up, k > n moving down),
// which the count computed on entry checks (emitter.counted). A loop that
// fails these tests when it starts, or whose count is too high for the
// fuel left, runs the copy that is checked as a split loop's second copy.

// operand is one side of a test: a local, a constant, or the increment of
// k itself when the test reads what its local.tee leaves.
type operand struct {
	kind  uint8
	local uint32
	value int32
	ord   int // the instruction that reads it
}

const (
	noOperand = iota
	localOperand
	constOperand
	stepOperand
)

// condition is what an i32 comparison of two operands, an i32.eqz of one,
// or one operand alone (non-zero), leaves for a br_if or an if.
type condition struct {
	cmp  byte // i32.eq ... i32.ge_u
	a, b operand
}

// Comparison opcodes.
const (
	i32Eqz = 0x45
	i32Eq  = 0x46
	i32Ne  = 0x47
	i32LtS = 0x48
	i32LtU = 0x49
	i32GtS = 0x4a
	i32GtU = 0x4b
	i32LeS = 0x4c
	i32LeU = 0x4d
	i32GeS = 0x4e
	i32GeU = 0x4f
)

// loopInfo is what walk's first pass finds out about a loop. A leaf has
// no loop inside it, no operation charged by its operands (which would
// tick inside it) and no parameters: it can be written twice. A dispatch
// loop is a leaf that dispatches on a local (finder.opened). One that
// counts is a leaf in which k moves by step towards n, while rel(k, n)
// holds, a relation that fails when k = n. after says the test reads k
// after the increment in an iteration. weight is the loop's region cost.
type loopInfo struct {
	leaf, counts bool
	dispatch     bool
	k            uint32
	n            operand
	step         int32
	rel          byte
	after        bool
	weight       int
}

// instr is an instruction of the history the finder matches patterns in.
type instr struct {
	op    byte
	local uint32 // of local.get, local.set, local.tee
	value int32  // of i32.const
}

// write is what the finder knows about the writes of a local in the loop
// it follows (when gen is that loop's): their number, and whether the last
// is an increment, with its step, its frame and its place. alias marks the
// local.tee y of k = y = k + c, whose y holds the new k too (of is k).
type write struct {
	gen   int
	count int
	step  int32
	incr  bool
	alias bool
	of    uint32
	depth int // len(ctrl) at the write
	id    int // id of the innermost frame at the write
	ord   int
}

// exit is a br_if that leaves the loop, with where it stands.
type exit struct {
	cond      condition
	depth, id int
}

// finder finds out about the loops (loopInfo) during walk's first pass,
// in time linear in the code: it follows one loop at a time, the one
// opened last, and gives up on it when a loop opens inside it.
type finder struct {
	hist [16]instr // the last instructions, hist[ord%16] the one of ordinal ord
	ord  int       // ordinal of the instruction being read
	ids  int       // frame ids handed out
	// loops holds, for each loop of the function in order, what was found.
	loops []loopInfo
	// The loop followed: its index in loops, its frame ctrl[depth-1],
	// whether it can still be a leaf, how many branches go back to its
	// head, and what the first such branch tested.
	active bool
	loop   int
	depth  int
	at     int // input offset of its loop instruction
	ok     bool
	edges  int
	found  loopInfo
	gen    int
	writes []write // by local, grown to the function's locals when needed
	locals uint32
	exits  []exit
	// A dispatch loop opens with k blocks and a br_table on local x
	// (opened): table holds the block, or segment, each value of x goes
	// to, closed how many of the k blocks have ended, seg the loop's cost
	// where each segment starts, start the loop's ordinal. jumps holds,
	// for each branch back to the head of a dispatch loop, the weight of
	// its check (jump), from jumpStart for the loop followed.
	k, closed, start int
	x                uint32
	table            []uint32
	seg              []int
	jumps            []int
	jumpStart        int
	// arms holds, for each if of the function in order, which arms are
	// charged when they run (emitter.endArm); heavy sums those of the
	// loop followed, which go back into its weight if it counts.
	arms  []arm
	heavy int
}

// reset readies the finder for a function with locals locals.
func (f *finder) reset(locals uint32) {
	f.ord, f.ids, f.loops, f.active, f.locals = 0, 0, f.loops[:0], false, locals
	f.jumps, f.arms = f.jumps[:0], f.arms[:0]
}

// newID names a frame.
func (f *finder) newID() int {
	f.ids++
	return f.ids
}

// back returns the instruction i places before the one being read, or one
// that matches nothing when there is none.
func (f *finder) back(i int) instr {
	if i > f.ord || i > len(f.hist) {
		return instr{}
	}
	return f.hist[(f.ord-i)%len(f.hist)]
}

// push records the instruction just read.
func (f *finder) push(in instr) {
	f.hist[f.ord%len(f.hist)] = in
	f.ord++
}

// step matches local.get x; i32.const c; i32.add (or i32.const c first, or
// i32.sub) ending i places back, and returns ±c, or 0.
func (f *finder) step(i int, x uint32) int32 {
	op, b, a := f.back(i), f.back(i+1), f.back(i+2)
	var c int32
	switch {
	case op.op == 0x6a && a.op == 0x20 && a.local == x && b.op == 0x41:
		c = b.value
	case op.op == 0x6a && b.op == 0x20 && b.local == x && a.op == 0x41:
		c = a.value
	case op.op == 0x6b && a.op == 0x20 && a.local == x && b.op == 0x41:
		c = -b.value
	default:
		return 0
	}
	if m := max(int64(c), -int64(c)); c == 0 || m > 1<<15 {
		return 0
	}
	return c
}

// operand parses the operand whose last instruction is i places back, and
// returns it and the place before it.
func (f *finder) operand(i int) (operand, int) {
	in := f.back(i)
	switch in.op {
	case 0x20:
		return operand{kind: localOperand, local: in.local, ord: f.ord - i}, i + 1
	case 0x41:
		return operand{kind: constOperand, value: in.value}, i + 1
	case 0x22:
		if f.step(i+1, in.local) != 0 {
			return operand{kind: stepOperand, local: in.local, ord: f.ord - i}, i + 4
		}
	}
	return operand{}, i
}

// cond parses the condition the instruction being read (a br_if or an if)
// pops.
func (f *finder) cond() condition {
	zero := operand{kind: constOperand}
	switch op := f.back(1).op; {
	case op >= i32Eq && op <= i32GeU:
		b, i := f.operand(2)
		a, _ := f.operand(i)
		return condition{cmp: op, a: a, b: b}
	case op == i32Eqz:
		if op := f.back(2).op; op >= i32Eq && op <= i32GeU { // the opposite comparison
			b, i := f.operand(3)
			a, _ := f.operand(i)
			return condition{cmp: negate[op], a: a, b: b}
		}
		a, _ := f.operand(2)
		return condition{cmp: i32Eq, a: a, b: zero}
	default:
		a, _ := f.operand(1)
		return condition{cmp: i32Ne, a: a, b: zero}
	}
}

// maxCopy is the most bytes of code a loop may have to be written twice.
// The Go guest's 2 MB hold 923 leaf loops; copying every one makes it
// 3.1 MB, copying the 599 within 1 KiB makes it 2.4 MB. A check and its
// spills weigh little in a longer body.
const maxCopy = 1 << 10

// enter starts following the loop just opened at input offset at, the
// len(ctrl)th frame, a leaf until another opens inside it.
func (f *finder) enter(depth, at int, params bool) {
	if f.active { // a loop inside: the one followed is no dispatch leaf
		f.jumps = f.jumps[:f.jumpStart]
	}
	f.jumpStart, f.seg = len(f.jumps), f.seg[:0]
	f.loops = append(f.loops, loopInfo{})
	f.active, f.loop, f.depth, f.ok, f.edges, f.at = true, len(f.loops)-1, depth, !params, 0, at
	f.found = loopInfo{}
	f.exits = f.exits[:0]
	f.k, f.closed, f.start, f.heavy = 0, 0, f.ord, 0
	f.gen++
}

// Dispatch loops. The Go compiler writes every function as one loop that
// opens with blocks and a br_table on a local, the resume point: a jump
// sets it and goes back to the head, which dispatches to the code after
// the end of one of the blocks, a segment. Every iteration of the loop, Go
// loop or not, goes through the head; a check there would cost a check
// per jump. A jump that sets the local to a constant going to a later
// segment than its own cannot close a cycle by itself: control only moves
// forwards within and between segments, so every cycle takes a back edge
// that goes to an earlier segment (or an unknown one). Only those get
// checks, each of the loop's weight (plus the dispatch of every jump in
// between), and one before the loop charges the way in.

// dispatching says whether the br_table being read, at depth len(ctrl),
// opens the loop followed after blocks only, and on which local.
func (f *finder) dispatching(depth int) (uint32, bool) {
	blocks := depth - f.depth
	if !f.active || f.k != 0 || blocks < 1 || f.ord != f.start+blocks+2 || f.back(1).op != 0x20 {
		return 0, false
	}
	for i := 2; i <= blocks+1; i++ {
		if f.back(i).op != 0x02 {
			return 0, false
		}
	}
	return f.back(1).local, true
}

// opened makes the loop followed a dispatch loop on x with the br_table
// in f.table, at depth len(ctrl), if every label is one of its blocks.
func (f *finder) opened(x uint32, depth int) {
	blocks := depth - f.depth
	for _, d := range f.table {
		if int(d) >= blocks {
			return
		}
	}
	f.k, f.x = blocks, x
}

// ended notes the end of the frame ctrl[i], where the loop's cost is
// cost: a dispatch block's end starts a segment.
func (f *finder) ended(i, cost int) {
	if f.active && f.closed < f.k && i == f.depth+f.k-1-f.closed {
		f.closed++
		f.seg = append(f.seg, cost)
	}
}

// What a branch back to a dispatch loop's head goes on to, in f.jumps
// until the loop ends: a segment, or one of these.
const (
	hopJump     = -1 // a later segment: no check
	unknownJump = -2 // a segment the rewrite cannot know
)

// jump notes a branch (op) back to the dispatch loop's head. A br that
// sets the local to a constant goes on to a known segment, and one later
// than its own needs no check.
func (f *finder) jump(op byte) {
	set, c := f.back(1), f.back(2)
	if op != 0x0c || set.op != 0x21 || set.local != f.x || c.op != 0x41 {
		f.jumps = append(f.jumps, unknownJump)
		return
	}
	t := int(f.table[min(uint64(uint32(c.value)), uint64(len(f.table)-1))])
	if t > f.closed-1 {
		t = hopJump
	}
	f.jumps = append(f.jumps, t)
}

// wrote records a local.set or local.tee of x (at depth len(ctrl)).
func (f *finder) wrote(x uint32, ctrl []frame) {
	if !f.active {
		return
	}
	if int(x) >= len(f.writes) {
		f.writes = append(f.writes, make([]write, int(f.locals)-len(f.writes))...)
	}
	w := &f.writes[x]
	if w.gen != f.gen {
		*w = write{gen: f.gen}
	}
	w.count++
	w.step = f.step(1, x)
	if tee := f.back(1); w.step == 0 && tee.op == 0x22 && tee.local != x {
		// local.get x; i32.const c; i32.add; local.tee y; local.set x
		if w.step = f.step(2, x); w.step != 0 {
			if count, y := f.writesOf(tee.local); count == 1 && y.ord == f.ord-1 {
				y.alias, y.of = true, x
			}
		}
	}
	w.incr = w.step != 0
	w.depth, w.id, w.ord = len(ctrl), ctrl[len(ctrl)-1].id, f.ord
}

// writesOf returns how often the loop followed wrote x so far, and the
// write when it is its only one.
func (f *finder) writesOf(x uint32) (int, *write) {
	if int(x) >= len(f.writes) || f.writes[x].gen != f.gen {
		return 0, nil
	}
	return f.writes[x].count, &f.writes[x]
}

// dominates says whether every path from the loop's head to the
// instruction being read, at depth len(ctrl), passed the instruction that
// stood at depth in the frame id.
func dominates(depth, id int, ctrl []frame) bool {
	return depth <= len(ctrl) && ctrl[depth-1].id == id
}

// branch notes a br or br_if (op) from the top of ctrl to frame target.
func (f *finder) branch(op byte, target int, ctrl []frame) {
	if !f.active {
		return
	}
	switch {
	case target == f.depth-1: // back to the loop's head
		f.edges++
		if f.edges == 1 {
			f.found = f.backEdge(op, ctrl)
		}
		if f.k > 0 {
			f.jump(op)
		}
	case target < f.depth-1 && op == 0x0d: // out of the loop
		f.exits = append(f.exits, exit{cond: f.cond(), depth: len(ctrl), id: ctrl[len(ctrl)-1].id})
	}
}

// backEdge looks for the test that guards the loop's back edge, the
// instruction being read.
func (f *finder) backEdge(op byte, ctrl []frame) loopInfo {
	if op == 0x0d {
		if c, ok := f.counts(f.cond(), false, ctrl); ok {
			return c
		}
	}
	for i := len(ctrl) - 1; i >= f.depth; i-- {
		if ctrl[i].cond.cmp != 0 {
			if c, ok := f.counts(ctrl[i].cond, false, ctrl); ok {
				return c
			}
		}
	}
	for _, x := range f.exits {
		if dominates(x.depth, x.id, ctrl) {
			if c, ok := f.counts(x.cond, true, ctrl); ok {
				return c
			}
		}
	}
	return loopInfo{}
}

// mirror[rel] is the relation of b to a when a rel b holds, negate[rel]
// the one that holds when a rel b does not.
var mirror, negate [i32GeU + 1]byte

func init() {
	for _, p := range [][2]byte{{i32Eq, i32Eq}, {i32Ne, i32Ne}, {i32LtS, i32GtS}, {i32LtU, i32GtU}, {i32LeS, i32GeS}, {i32LeU, i32GeU}} {
		mirror[p[0]], mirror[p[1]] = p[1], p[0]
	}
	for _, p := range [][2]byte{{i32Eq, i32Ne}, {i32LtS, i32GeS}, {i32LtU, i32GeU}, {i32GtS, i32LeS}, {i32GtU, i32LeU}} {
		negate[p[0]], negate[p[1]] = p[1], p[0]
	}
}

// counts says whether condition c, on which the loop goes on (or leaves
// when leaves), makes the loop followed a counted one.
func (f *finder) counts(c condition, leaves bool, ctrl []frame) (loopInfo, bool) {
	for _, swap := range []bool{false, true} {
		k, n, rel := c.a, c.b, c.cmp
		if swap {
			k, n, rel = c.b, c.a, mirror[c.cmp]
		}
		if leaves {
			rel = negate[rel]
		}
		if k.kind != localOperand && k.kind != stepOperand {
			continue
		}
		x := k.local
		count, w := f.writesOf(x)
		after := k.kind == stepOperand || count == 1 && w.ord < k.ord
		if count == 1 && w.alias && k.kind == localOperand && w.ord < k.ord {
			// The test reads the copy of the new k.
			x = w.of
			count, w = f.writesOf(x)
		}
		if count != 1 || !w.incr || !dominates(w.depth, w.id, ctrl) || k.kind == stepOperand && w.ord != k.ord {
			continue
		}
		switch n.kind {
		case constOperand:
		case localOperand:
			if count, _ := f.writesOf(n.local); n.local == k.local || n.local == x || count != 0 {
				continue
			}
		default:
			continue
		}
		up := w.step > 0
		one := w.step == 1 || w.step == -1
		switch {
		case rel == i32Ne, one && (rel == i32LtS || rel == i32LtU || rel == i32GtS || rel == i32GtU):
		case up && (rel == i32LtS || rel == i32LtU), !up && (rel == i32GtS || rel == i32GtU):
		default:
			continue
		}
		return loopInfo{counts: true, k: x, n: n, step: w.step, rel: rel, after: after}, true
	}
	return loopInfo{}, false
}

// leave ends the loop followed, whose region cost is weight, at its end at
// input offset end.
func (f *finder) leave(weight, end int) {
	l := f.found
	f.active = false
	if end-f.at > maxCopy {
		f.ok = false
	}
	if !f.ok || f.edges == 0 || f.k == 0 { // jumps are for dispatch leaves
		f.jumps = f.jumps[:f.jumpStart]
	}
	if !f.ok || f.edges == 0 { // a loop that never goes round needs one copy
		return
	}
	l.leaf, l.weight, l.dispatch = true, weight, f.k > 0
	if l.dispatch {
		// The path after a check goes from the segment it goes on to,
		// through the dispatch of every hop.
		l.weight += 2 * f.k
		for i, t := range f.jumps[f.jumpStart:] {
			switch {
			case t == hopJump:
				t = 0
			case t == unknownJump:
				t = l.weight
			default:
				t = max(l.weight-f.seg[t], 1)
			}
			f.jumps[f.jumpStart+i] = t
		}
	}
	if count, _ := f.writesOf(l.k); f.edges != 1 || count != 1 {
		l.counts = false
	}
	if count, _ := f.writesOf(l.n.local); l.n.kind == localOperand && count != 0 {
		l.counts = false
	}
	if l.counts {
		// Its unchecked copy runs no arm's charge either.
		l.weight += f.heavy
	}
	f.loops[f.loop] = l
}

// maxCount caps the trip count of a counted loop's unchecked copy, so that
// the step's remainder bits rotated in by emitter.counted always exceed it
// (they are at least 2^17).
const maxCount = 1 << 16

// counted writes the head of the counted loop c whose "loop bt" spans the
// input from start to end. The loop
//
//	loop bt ... end
//
// becomes
//
//	block bt                  ;; $done
//	  loop                    ;; $again
//	    block                 ;; $refill
//	      COUNT               ;; $t = the iterations left, at most one refill's worth
//	      if                  ;; ... and the fuel holds them
//	        fuel -= $t
//	        loop bt ... end   ;; no check
//	        br $done
//	      else
//	        loop bt CHECK ... end   ;; CHECK: take; leave for $refill
//	        br $done
//	      end
//	    end
//	    call $tick; set the fuel
//	    br $again
//	  end
//	  unreachable
//	end
//
// Both copies sit four labels deep, so they are the same bytes; walk writes
// the first, and uncount copies it into the second. A refill starts over
// at COUNT, which then usually finds the rest of the loop fits.
func (e *emitter) counted(start, end int, c *loopInfo) (body int) {
	e.copyTo(start)
	bt := e.src[start+1 : end]
	b := append(append(e.code, 0x02), bt...)  // block bt
	b = append(b, 0x03, 0x40, 0x02, 0x40)     // loop; block
	get := func(b []byte, o operand) []byte { // the value of a side of the test on entry
		if o.kind == constOperand {
			return appendS32(append(b, 0x41), o.value)
		}
		return appendU32(append(b, 0x20), o.local)
	}
	k := operand{kind: localOperand, local: c.k}
	// d: how far k has to go to reach n, in the direction it moves.
	if c.step > 0 {
		b = append(get(get(b, c.n), k), 0x6b) // n - k
	} else {
		b = append(get(get(b, k), c.n), 0x6b) // k - n
	}
	size := max(c.step, -c.step)
	shift := byte(bits.TrailingZeros32(uint32(size)))
	pow2 := size == 1<<shift
	passes := size > 1 && c.rel != i32Ne
	exact := false // the count holds when size divides d (checked below)
	switch {
	case passes:
		// ceil(d / size): the steps until k is at or past n.
		b = appendS32(append(b, 0x41), size-1)
		b = append(b, 0x6a) // i32.add
		if pow2 {
			b = append(b, 0x41, shift, 0x76) // i32.const shift; i32.shr_u
		} else {
			b = appendS32(append(b, 0x41), size)
			b = append(b, 0x6e) // i32.div_u
		}
	case pow2 && size > 1:
		// d / size when size divides d, and at least 2^17 when it does
		// not: the steps until k equals n.
		b = append(b, 0x41, shift, 0x78) // i32.const shift; i32.rotr
	case size > 1:
		// d / size, the steps until k equals n, when size divides d.
		exact = true
		b = appendU32(append(b, 0x22), e.t) // local.tee $t
		b = appendS32(append(b, 0x41), size)
		b = append(b, 0x70, i32Eqz) // i32.rem_u; i32.eqz
		b = appendU32(append(b, 0x20), e.t)
		b = appendS32(append(b, 0x41), size)
		b = append(b, 0x6e) // i32.div_u
	}
	// The iterations that start, less one: the one whose test fails
	// starts too unless the test reads k after its increment, and the
	// count is then at least one (0 - 1 wraps, and does not fit).
	if c.after {
		b = append(b, 0x41, 0x01, 0x6b)
	}
	w := min(c.weight, int(e.m.refill))
	limit := min(int(e.m.refill)/w, maxCount)
	b = appendU32(append(b, 0x22), e.t) // local.tee $t
	b = appendS32(append(b, 0x41), int32(limit))
	b = append(b, i32LtU)
	if exact {
		b = append(b, 0x71) // i32.and
	}
	if passes {
		// k has not passed n yet, and n leaves room for the last step
		// before the end of the range: k cannot wrap around.
		signed := c.rel == i32LtS || c.rel == i32GtS
		b = append(get(get(b, k), c.n), c.rel, 0x71) // rel(k, n); i32.and
		b = get(b, c.n)
		var room int32
		var cmp byte
		switch {
		case c.step > 0 && signed:
			room, cmp = math.MaxInt32-(size-1), i32LeS
		case c.step > 0:
			room, cmp = -size, i32LeU // 2^32 - size
		case signed:
			room, cmp = math.MinInt32+(size-1), i32GeS
		default:
			room, cmp = size-1, i32GeU
		}
		b = appendS32(append(b, 0x41), room)
		b = append(b, cmp, 0x71)
	}
	// $t = (iterations) * weight, which must not empty the fuel: the
	// loop then runs within the refill the last tick gave.
	b = appendU32(append(b, 0x20), e.t)
	b = append(b, 0x41, 0x01, 0x6a) // i32.const 1; i32.add
	b = appendS32(append(b, 0x41), int32(w))
	b = append(b, 0x6c)                 // i32.mul
	b = appendU32(append(b, 0x22), e.t) // local.tee $t
	b = e.getFuel(b)
	b = append(b, i32LeS, 0x71, 0x04, 0x40) // i32.le_s; i32.and; if
	b = e.getFuel(b)
	b = appendU32(append(b, 0x20), e.t)
	b = e.setFuel(append(b, 0x6b))
	e.code = b
	e.copyTo(end) // loop bt
	return len(e.code)
}

// uncount writes the rest of the counted loop with the "loop bt" head
// whose copy without checks has its instructions past the head start at
// body and end at the reader's position end. It returns the offset of the
// checked copy's weight.
func (e *emitter) uncount(head []byte, body, end int) (at int) {
	e.copyTo(end)
	bodyEnd := len(e.code)
	b := append(e.code, 0x0c, 0x03, 0x05) // br $done; else
	b = append(b, head...)
	b, at = e.leave(b, 2) // $refill
	b = append(b, e.code[body:bodyEnd]...)
	b = append(b, 0x0c, 0x03, 0x0b, 0x0b) // br $done; end; end $refill
	b = e.refill(b)
	e.code = append(b, 0x0c, 0x00, 0x0b, 0x00, 0x0b) // br $again; end; unreachable; end
	return at
}

// s32 decodes the signed LEB128 b, at most five bytes.
func s32(b []byte) int32 {
	var v int32
	shift := 0
	for _, c := range b {
		v |= int32(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 32 && c&0x40 != 0 {
				v |= -1 << shift
			}
			break
		}
	}
	return v
}
