package preempt

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
	at    int  // offset of the check's weight in the code; -1 for none
	cost  int  // instructions of the region, imported calls weighted
	calls bool // it calls a function of the module or through a table
}

type frame struct {
	loop bool
	// wrapped: the loop is wrapped in three blocks that refill its fuel
	// outside it (emitter.loop).
	wrapped bool
	region  int // the region the instructions inside the frame belong to
	// added counts the labels the instrumentation put around this frame
	// and those enclosing it, which branches out of it must skip.
	added uint32
}

// scratch is reused from one function body to the next.
type scratch struct {
	code, out []byte
	regions   []region
	ctrl      []frame
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
	// local is the fuel local (fuelLocal); a, b and n hold a bulk
	// operation's operands.
	local, a, b, n uint32
}

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
// start to the reader's position, with its check; wrapped says the loop was
// wrapped so that the tick is called outside it: a call inside a loop,
// even one never made, costs the loop registers. The loop
//
//	loop bt ... end
//
// becomes
//
//	block bt                  ;; $done
//	  loop                    ;; $again
//	    block                 ;; $refill
//	      loop bt CHECK ... end   ;; CHECK: take; br_if $refill
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
func (e *emitter) loop(start, end int, params bool) (at int, wrapped bool) {
	e.copyTo(start)
	if e.fuel == fuelLocal || e.fuel == fuelGlobal {
		if !params {
			bt := e.src[start+1 : end]
			e.code = append(append(e.code, 0x02), bt...) // block bt
			e.code = append(e.code, 0x03, 0x40, 0x02, 0x40)
			e.copyTo(end)
			e.code, at = e.take(e.code)
			e.code = append(e.code, 0x0d, 0x01) // br_if $refill
			return at, true
		}
	}
	e.copyTo(end)
	e.code, at = e.check(e.code)
	return at, false
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
// start to end by a loop that moves BulkChunk bytes at a time, charging
// each chunk and refilling the fuel when it runs out. Its operands are
// on the stack: (dst, src, n) or (dst, value, n). An operation that fits
// in a chunk runs as it is. A larger one that would go out of bounds runs
// as it is too, first, so that it traps before it writes anything, as the
// original does; a copy whose destination lies above its source moves its
// chunks from the end down, so that overlapping ranges copy as memmove.
func (e *emitter) bulk(start, end int, op uint32) {
	e.copyTo(start)
	e.from = end
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

	b := set(set(set(e.code, e.n), e.b), e.a)
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
	e.code = operation(b, whole)
}

func (m *module) codeSection(s *section) []byte {
	r := s.reader()
	n := r.u32()
	if n != m.funcs {
		r.fail("%d function bodies for %d declared functions", n, m.funcs)
	}
	r.over("code_bytes", uint64(len(s.body)), uint64(m.limits.CodeBytes), "bytes of code")
	out := make([]byte, 0, len(s.body)+len(s.body)/8+16)
	out = appendU32(out, n)
	var sc scratch
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		r.over("function_bytes", uint64(size), uint64(m.limits.FunctionBytes), "bytes in the body of function %d", m.funcImports+i)
		start := r.pos
		body := m.body(&reader{b: r.bytes(size), base: s.off + start}, m.funcImports+i, m.params[m.funcType[i]], &sc)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if !r.done() {
		r.fail("junk after the code section")
	}
	return out
}

// bulkCost is what the instructions around a memory.copy or memory.fill
// weigh when it fits in a chunk; larger ones charge their chunks.
const bulkCost = 12

// shape is what walk's first pass finds in a function.
type shape struct {
	top    region // the function's top level
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
	entry := sh.top.calls || sh.top.cost > LeafLimit
	e := &emitter{m: m, src: r.b, code: sc.code[:0], from: codeAt}
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
		e.a, e.b, e.n = uint32(locals)+added, uint32(locals)+added+1, uint32(locals)+added+2
		added += 3
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
func (m *module) walk(r *reader, locals uint32, sc *scratch, e *emitter) (sh shape) {
	regions, ctrl := sc.regions[:0], sc.ctrl[:0]
	regions = append(regions, region{at: -1})
	ctrl = append(ctrl, frame{region: 0})
	cur, inLoop := 0, 0
	for len(ctrl) > 0 {
		start := r.pos
		op := r.byte()
		regions[cur].cost++
		top := ctrl[len(ctrl)-1]
		switch imm[op] {
		case immNone:
			if op == 0x0f && e != nil { // return
				e.save(start)
			}
		case immBlock:
			m.blocktype(r)
			ctrl = append(ctrl, frame{region: cur, added: top.added})
			r.over("nesting", uint64(len(ctrl)-1), uint64(m.limits.Nesting), "levels of nested blocks")
		case immLoop:
			params := m.blocktype(r)
			sh.loops = true
			inLoop++
			at, wrapped := -1, false
			if e != nil {
				at, wrapped = e.loop(start, r.pos, params)
			}
			regions = append(regions, region{at: at})
			cur = len(regions) - 1
			f := frame{loop: true, wrapped: wrapped, region: cur, added: top.added}
			if wrapped {
				f.added += 3
			}
			ctrl = append(ctrl, f)
			r.over("nesting", uint64(len(ctrl)-1), uint64(m.limits.Nesting), "levels of nested blocks")
		case immEnd:
			if len(ctrl) == 1 && e != nil { // the function's end
				e.save(start)
			}
			ctrl = ctrl[:len(ctrl)-1]
			if top.loop {
				inLoop--
			}
			if top.wrapped && e != nil {
				e.unwrap(r.pos)
			}
			if len(ctrl) > 0 {
				cur = ctrl[len(ctrl)-1].region
			}
		case immBranch:
			at := r.pos
			d := r.u32()
			if e != nil {
				if d == uint32(len(ctrl)-1) { // to the function's end
					e.save(start)
				}
				e.label(at, r.pos, d, ctrl)
			}
		case immBrTable:
			out := false
			n := r.u32()
			labels := r.pos
			for i := n; i > 0; i-- {
				out = out || r.u32() == uint32(len(ctrl)-1)
			}
			out = out || r.u32() == uint32(len(ctrl)-1)
			if e != nil {
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
			if i := r.u32(); i >= locals {
				r.fail("local %d does not exist (%d locals)", i, locals)
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
				if e != nil && e.fuel != stopFlag {
					e.bulk(start, r.pos, sub)
				}
			case 8, 12, 14, 15, 17: // memory.init, table.init/copy/grow/fill
				sh.bulk = true
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
	}
	if !r.done() {
		r.fail("junk after the end of a function body")
	}
	if e != nil && (e.fuel == fuelLocal || e.fuel == fuelGlobal) {
		for _, g := range regions[1:] {
			putWeight(e.code[g.at:], g.cost, int(e.m.refill))
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
