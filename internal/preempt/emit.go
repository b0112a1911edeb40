package preempt

// The encoder: what the emitter writes into a function's code during
// walk's second pass: the checks and ticks, the forms of a loop, the
// charges of bulk operations and their helper functions.

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
