package preempt

import "slices"

// The two passes over a function's code (body, walk): the first decodes it
// and finds what it needs (its regions and their costs, its loops, where
// its fuel lives), the second writes the instrumented code through an
// emitter (emit.go).

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
