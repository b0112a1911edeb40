package preempt

import (
	"math"
	"math/bits"
)

// The finder: what walk's first pass finds out about a function's loops
// (which are leaves, which dispatch, which count) and ifs, and the
// emitter's two copies of a counted loop.

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
