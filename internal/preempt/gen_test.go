package preempt_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/voxhost/voxhost/internal/preempt"
)

// This file generates random valid WebAssembly 2.0 modules for the
// differential test of the rewriter (diff_test.go). Every decision is read
// from a byte string, so that a fuzzer's mutations of the bytes become
// changes to the module, and a seed's bytes reproduce its module exactly.
// Generated code always terminates: every loop counts a local of its own
// towards a small bound, and takes a branch back to its head only while
// the count lasts; every function starts by taking one step from a global
// budget (steps), returning at once when it is spent, which bounds
// recursion, direct or through the table.

// choices hands out the generator's decisions. Once the bytes run out
// every choice is 0, and option 0 is always the simplest one (a constant,
// no statement), so that generation ends and a shrunk fuzz input shrinks
// the module too.
type choices struct {
	b   []byte
	pos int
}

func (c *choices) byte() byte {
	if c.pos >= len(c.b) {
		return 0
	}
	c.pos++
	return c.b[c.pos-1]
}

func (c *choices) u32() uint32 {
	return uint32(c.byte()) | uint32(c.byte())<<8 | uint32(c.byte())<<16 | uint32(c.byte())<<24
}

// intn returns a number in [0, n), reading one byte when n fits in one.
func (c *choices) intn(n int) int {
	switch {
	case n <= 1:
		return 0
	case n <= 256:
		return int(c.byte()) % n
	}
	return int(c.u32() % uint32(n))
}

// oneIn is true about once in n times, and never once the bytes run out.
func (c *choices) oneIn(n int) bool { return c.intn(n) == n-1 }

// pick chooses an option by weight; options of weight 0 are never chosen,
// except option 0 when all are 0.
func (c *choices) pick(weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	v := c.intn(total)
	for i, w := range weights {
		if v < w {
			return i
		}
		v -= w
	}
	return 0
}

// element chooses one of values.
func element[T any](c *choices, values []T) T { return values[c.intn(len(values))] }

type valType byte

const (
	i32     valType = 0x7f
	i64     valType = 0x7e
	funcref valType = 0x70
)

func (t valType) String() string {
	switch t {
	case i32:
		return "i32"
	case i64:
		return "i64"
	case funcref:
		return "funcref"
	}
	return fmt.Sprintf("type0x%02x", byte(t))
}

type funcType struct{ params, results []valType }

func (ft funcType) String() string {
	var b strings.Builder
	b.WriteString("(func")
	for _, t := range ft.params {
		b.WriteString(" (param " + t.String() + ")")
	}
	for _, t := range ft.results {
		b.WriteString(" (result " + t.String() + ")")
	}
	b.WriteString(")")
	return b.String()
}

// The encoders are the rewriter's own.
var appendULEB, appendSLEB = preempt.AppendULEB, preempt.AppendSLEB

func appendWasmName(b []byte, s string) []byte {
	return append(appendULEB(b, uint64(len(s))), s...)
}

// appendSection appends a section with its id and size.
func appendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendULEB(out, uint64(len(body)))
	return append(out, body...)
}

// code is a function body being written, as binary and, when asked for,
// as indented text close to WAT, which is what a failure prints.
type code struct {
	bin   []byte
	text  *strings.Builder
	depth int
	count int // instructions written
}

func (c *code) line(format string, args ...any) {
	if c.text == nil {
		return
	}
	c.text.WriteString(strings.Repeat("  ", c.depth+2))
	fmt.Fprintf(c.text, format, args...)
	c.text.WriteByte('\n')
}

// op writes an instruction without immediates.
func (c *code) op(name string, enc ...byte) {
	c.bin = append(c.bin, enc...)
	c.count++
	c.line("%s", name)
}

// opIdx writes an instruction whose immediates are u32s.
func (c *code) opIdx(name string, enc []byte, imms ...uint32) {
	c.bin = append(c.bin, enc...)
	text := name
	for _, v := range imms {
		c.bin = appendULEB(c.bin, uint64(v))
		text += fmt.Sprintf(" %d", v)
	}
	c.count++
	c.line("%s", text)
}

func (c *code) i32Const(v int32) {
	c.bin = appendSLEB(append(c.bin, 0x41), int64(v))
	c.count++
	c.line("i32.const %d", v)
}

func (c *code) i64Const(v int64) {
	c.bin = appendSLEB(append(c.bin, 0x42), v)
	c.count++
	c.line("i64.const %d", v)
}

// blockType is the encoding of a block's type and its text.
type blockType struct {
	enc  []byte
	text string
}

func (c *code) open(name string, op byte, bt blockType) {
	c.bin = append(append(c.bin, op), bt.enc...)
	c.count++
	c.line("%s%s", name, bt.text)
	c.depth++
}

func (c *code) elseBranch() {
	c.bin = append(c.bin, 0x05)
	c.count++
	c.depth--
	c.line("else")
	c.depth++
}

func (c *code) end() {
	c.bin = append(c.bin, 0x0b)
	c.count++
	c.depth--
	c.line("end")
}

// Instructions by what they take and give.
type opcode struct {
	op   byte
	name string
}

var (
	i32Unary   = []opcode{{0x45, "i32.eqz"}, {0x67, "i32.clz"}, {0x68, "i32.ctz"}, {0x69, "i32.popcnt"}, {0xc0, "i32.extend8_s"}, {0xc1, "i32.extend16_s"}}
	i64Unary   = []opcode{{0x79, "i64.clz"}, {0x7a, "i64.ctz"}, {0x7b, "i64.popcnt"}, {0xc2, "i64.extend8_s"}, {0xc3, "i64.extend16_s"}, {0xc4, "i64.extend32_s"}}
	i32Binary  = []opcode{{0x6a, "i32.add"}, {0x6b, "i32.sub"}, {0x6c, "i32.mul"}, {0x6d, "i32.div_s"}, {0x6e, "i32.div_u"}, {0x6f, "i32.rem_s"}, {0x70, "i32.rem_u"}, {0x71, "i32.and"}, {0x72, "i32.or"}, {0x73, "i32.xor"}, {0x74, "i32.shl"}, {0x75, "i32.shr_s"}, {0x76, "i32.shr_u"}, {0x77, "i32.rotl"}, {0x78, "i32.rotr"}}
	i64Binary  = []opcode{{0x7c, "i64.add"}, {0x7d, "i64.sub"}, {0x7e, "i64.mul"}, {0x7f, "i64.div_s"}, {0x80, "i64.div_u"}, {0x81, "i64.rem_s"}, {0x82, "i64.rem_u"}, {0x83, "i64.and"}, {0x84, "i64.or"}, {0x85, "i64.xor"}, {0x86, "i64.shl"}, {0x87, "i64.shr_s"}, {0x88, "i64.shr_u"}, {0x89, "i64.rotl"}, {0x8a, "i64.rotr"}}
	i32Compare = []opcode{{0x46, "i32.eq"}, {0x47, "i32.ne"}, {0x48, "i32.lt_s"}, {0x49, "i32.lt_u"}, {0x4a, "i32.gt_s"}, {0x4b, "i32.gt_u"}, {0x4c, "i32.le_s"}, {0x4d, "i32.le_u"}, {0x4e, "i32.ge_s"}, {0x4f, "i32.ge_u"}}
	i64Compare = []opcode{{0x51, "i64.eq"}, {0x52, "i64.ne"}, {0x53, "i64.lt_s"}, {0x54, "i64.lt_u"}, {0x55, "i64.gt_s"}, {0x56, "i64.gt_u"}, {0x57, "i64.le_s"}, {0x58, "i64.le_u"}, {0x59, "i64.ge_s"}, {0x5a, "i64.ge_u"}}
)

// memoryOp is a load or store with the log2 of its natural alignment.
type memoryOp struct {
	op    byte
	name  string
	align uint32
}

var (
	i32Loads  = []memoryOp{{0x28, "i32.load", 2}, {0x2c, "i32.load8_s", 0}, {0x2d, "i32.load8_u", 0}, {0x2e, "i32.load16_s", 1}, {0x2f, "i32.load16_u", 1}}
	i64Loads  = []memoryOp{{0x29, "i64.load", 3}, {0x30, "i64.load8_s", 0}, {0x31, "i64.load8_u", 0}, {0x32, "i64.load16_s", 1}, {0x33, "i64.load16_u", 1}, {0x34, "i64.load32_s", 2}, {0x35, "i64.load32_u", 2}}
	i32Stores = []memoryOp{{0x36, "i32.store", 2}, {0x3a, "i32.store8", 0}, {0x3b, "i32.store16", 1}}
	i64Stores = []memoryOp{{0x37, "i64.store", 3}, {0x3c, "i64.store8", 0}, {0x3d, "i64.store16", 1}, {0x3e, "i64.store32", 2}}
)

// Values that find edge cases: zero, signs, the extremes, page and chunk
// sizes.
var (
	interesting32 = []int32{0, 1, -1, 2, 3, 7, 8, 16, 31, 32, 63, 64, 255, 256, 4096, 65535, 65536, 65537,
		math.MaxInt32, math.MinInt32, math.MaxInt32 - 1, math.MinInt32 + 1, -2, -65536}
	interesting64 = []int64{0, 1, -1, 2, 7, 63, 64, 255, 65536, 1 << 32, 1<<32 - 1, math.MaxInt64, math.MinInt64,
		math.MaxInt32, math.MinInt32, -2, 1 << 62}
	// Lengths of bulk operations: a few bytes, a few KiB, about a page (the
	// size of the rewrite's chunks), more than a page, more than the memory.
	smallBulkLengths = []int32{0, 1, 3, 8, 63, 64, 65, 127}
	kibBulkLengths   = []int32{1000, 1024, 4095, 4096, 4097, 5000, 8192, 12000, 16384, 40000}
	largeBulkLengths = []int32{65535, 65536, 65537, 70000, 100000, 131071, 131072, 131073, 150000, 196608, 200000, -1, math.MinInt32}
)

// Exported names of the generated module.
const (
	exportMemory = "mem"
	// exportSteps is the global budget of function entries; the harness
	// sets it before every call.
	exportSteps = "steps"
	// exportLaps counts loop iterations, so that the harness knows how
	// many checks a call must have passed.
	exportLaps = "laps"
)

type genFunc struct {
	ft      funcType
	typeIdx uint32
	locals  []valType // after the parameters
	code    code
}

type genGlobal struct {
	t        valType
	mutable  bool
	writable bool // by generated code: steps and laps are not
	init     []byte
	initText string
	export   string
}

// genTable is a funcref table and the active element segment that fills
// it from offset.
type genTable struct {
	index  uint32
	min    uint32
	max    uint32 // 0: none
	offset uint32
	elems  elemList
}

// elemList is what an element segment holds: function indices, -1 for
// ref.null, written as expressions or (without nulls) as indices.
type elemList struct {
	funcs []int32
	exprs bool
}

// plannedCall is one call the harness makes to the module.
type plannedCall struct {
	export string
	args   []uint64
}

// genModule is a generated module and what the harness needs to know
// about it.
type genModule struct {
	wasm    []byte
	wat     string // empty unless asked for
	env     bool   // imports from the env module (envModule)
	start   bool   // has a start function
	calls   []plannedCall
	globals []string // exported globals
	refill  int32    // fuel per tick for the rewrite
	flag    bool     // rewrite in Flag mode rather than Fuel
	used    int      // decision bytes read; the rest of the input is ignored
}

// generator holds a module while its functions are written.
type generator struct {
	in           *choices
	types        []funcType
	typeIdx      map[string]uint32
	importFunc   bool // env.h (i32) -> (i32) is function 0
	importGlobal bool // env.g, an immutable i32, is global 0
	funcs        []*genFunc
	globals      []genGlobal
	steps, laps  uint32 // global indices
	tables       []*genTable
	// passiveElems is a passive element segment, which follows the
	// tables' segments, for table.init; nil if none.
	passiveElems *elemList
	memMin       uint32
	memMax       uint32
	dataAt       uint32
	data         []byte
	passive      []byte // a passive data segment, data index 1, or nil
	start        int    // the defined function that is the start function, or -1
}

// Entry budget per call: enough for recursion to go a few levels through
// every function.
const stepsPerCall = 48

// funcIndex is the function index of the i-th defined function.
func (g *generator) funcIndex(i int) uint32 {
	if g.importFunc {
		return uint32(i) + 1
	}
	return uint32(i)
}

func (g *generator) typeIndex(ft funcType) uint32 {
	key := ft.String()
	if i, ok := g.typeIdx[key]; ok {
		return i
	}
	g.typeIdx[key] = uint32(len(g.types))
	g.types = append(g.types, ft)
	return uint32(len(g.types) - 1)
}

func (g *generator) valType() valType {
	if g.in.intn(3) == 2 {
		return i64
	}
	return i32
}

func (g *generator) valTypes(weights ...int) []valType {
	ts := make([]valType, g.in.pick(weights...))
	for i := range ts {
		ts[i] = g.valType()
	}
	return ts
}

// envModule is what generated modules import: a function and a global,
// defined in WebAssembly so that both runtimes get the same.
func envModule() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = appendSection(out, 1, []byte{1, 0x60, 1, 0x7f, 1, 0x7f})
	out = appendSection(out, 3, []byte{1, 0})
	out = appendSection(out, 6, []byte{1, 0x7f, 0x00, 0x41, 0x2a, 0x0b}) // 42
	exports := appendWasmName([]byte{2}, "h")
	exports = append(exports, 0, 0)
	exports = appendWasmName(exports, "g")
	exports = append(exports, 3, 0)
	out = appendSection(out, 7, exports)
	// h(x) = x*3 + 1
	body := []byte{0, 0x20, 0, 0x41, 3, 0x6c, 0x41, 1, 0x6a, 0x0b}
	return appendSection(out, 10, append([]byte{1, byte(len(body))}, body...))
}

// generate builds a module from the decisions in b; with text it also
// writes the module as text.
func generate(b []byte, text bool) *genModule {
	in := &choices{b: b}
	g := &generator{in: in, typeIdx: map[string]uint32{}, start: -1}
	gm := &genModule{}
	// Refills small enough that checks run out all the time, in loops, at
	// function entries and between the chunks of bulk operations.
	gm.refill = element(in, []int32{1, 2, 3, 5, 8, 13, 21, 34, 50, 100, 1000})
	gm.flag = in.oneIn(8) // Flag mode shares the rewrite of branches and indices
	// The imports shift the indices the rewrite renumbers: the tick comes
	// after the imported functions, the fuel after all globals.
	g.importFunc = in.intn(2) == 1
	g.importGlobal = in.intn(2) == 1
	gm.env = g.importFunc || g.importGlobal
	if g.importFunc {
		g.typeIndex(funcType{params: []valType{i32}, results: []valType{i32}})
	}

	for n := 1 + in.intn(6); n > 0; n-- {
		ft := funcType{params: g.valTypes(3, 3, 2, 1), results: g.valTypes(3, 4, 2, 1)}
		g.funcs = append(g.funcs, &genFunc{ft: ft, typeIdx: g.typeIndex(ft)})
	}
	if in.intn(3) == 2 {
		g.start = len(g.funcs)
		ft := funcType{}
		g.funcs = append(g.funcs, &genFunc{ft: ft, typeIdx: g.typeIndex(ft)})
	}
	gm.start = g.start >= 0

	firstGlobal := uint32(0)
	if g.importGlobal {
		firstGlobal = 1
	}
	g.steps, g.laps = firstGlobal, firstGlobal+1
	g.globals = append(g.globals,
		genGlobal{t: i32, mutable: true, init: appendSLEB([]byte{0x41}, stepsPerCall), initText: fmt.Sprintf("i32.const %d", stepsPerCall), export: exportSteps},
		genGlobal{t: i32, mutable: true, init: []byte{0x41, 0}, initText: "i32.const 0", export: exportLaps})
	for n := in.intn(5); n > 0; n-- {
		gl := genGlobal{t: g.valType(), mutable: in.intn(3) != 0}
		gl.writable = gl.mutable
		switch {
		case gl.t == i32 && g.importGlobal && !gl.mutable && in.intn(2) == 1:
			gl.init, gl.initText = []byte{0x23, 0}, "global.get 0"
		case gl.t == i32:
			v := element(in, interesting32)
			gl.init, gl.initText = appendSLEB([]byte{0x41}, int64(v)), fmt.Sprintf("i32.const %d", v)
		default:
			v := element(in, interesting64)
			gl.init, gl.initText = appendSLEB([]byte{0x42}, v), fmt.Sprintf("i64.const %d", v)
		}
		gl.export = fmt.Sprintf("g%d", firstGlobal+uint32(len(g.globals)))
		g.globals = append(g.globals, gl)
	}
	if in.intn(2) == 1 {
		// A funcref global, initialised with ref.func, which the rewrite
		// renumbers; it is not exported (its value is an address).
		f := in.intn(len(g.funcs))
		g.globals = append(g.globals, genGlobal{t: funcref, mutable: in.intn(2) == 1,
			init:     appendULEB([]byte{0xd2}, uint64(g.funcIndex(f))),
			initText: fmt.Sprintf("ref.func %d", g.funcIndex(f))})
	}

	for n := in.pick(1, 4, 2); n > 0; n-- {
		t := &genTable{index: uint32(len(g.tables)), offset: uint32(in.intn(3)), elems: g.elemList()}
		t.min = t.offset + uint32(len(t.elems.funcs)) + uint32(in.intn(3))
		if in.intn(2) == 1 {
			t.max = t.min + uint32(in.intn(12))
		}
		g.tables = append(g.tables, t)
	}
	if len(g.tables) > 0 && in.intn(2) == 1 {
		l := g.elemList()
		g.passiveElems = &l
	}

	// Mostly a page; larger memories let bulk operations longer than a
	// page succeed.
	g.memMin = uint32(element(in, []int{1, 1, 1, 2, 3}))
	g.memMax = g.memMin + uint32(in.intn(3))
	// Data all over the memory, mostly, so that a copy in the wrong order
	// shows.
	size := int(65536 * g.memMin)
	dataSize := size
	switch in.pick(2, 1, 1) {
	case 1:
		dataSize = in.intn(8193)
	case 2:
		dataSize = size / 2
	}
	g.data = pseudoRandomBytes(in.u32(), dataSize)
	g.dataAt = uint32(in.intn(size - dataSize + 1))
	if in.intn(2) == 1 {
		g.passive = pseudoRandomBytes(in.u32(), 1+in.intn(6000))
	}

	for _, f := range g.funcs {
		g.function(f, text)
	}

	// The calls: each function at least once, in an order the bytes choose.
	for i := range g.funcs {
		gm.calls = append(gm.calls, g.plannedCall(i))
	}
	for n := in.intn(2 * len(g.funcs)); n > 0; n-- {
		gm.calls = append(gm.calls, g.plannedCall(in.intn(len(g.funcs))))
	}
	for i := len(gm.calls) - 1; i > 0; i-- {
		j := in.intn(i + 1)
		gm.calls[i], gm.calls[j] = gm.calls[j], gm.calls[i]
	}
	for _, gl := range g.globals {
		if gl.export != "" {
			gm.globals = append(gm.globals, gl.export)
		}
	}
	gm.used = in.pos
	gm.wasm = g.encode()
	if text {
		gm.wat = g.text()
	}
	return gm
}

func (g *generator) elemList() elemList {
	l := elemList{exprs: g.in.intn(2) == 1}
	functions := len(g.funcs)
	if g.importFunc {
		functions++
	}
	for n := 1 + g.in.intn(8); n > 0; n-- {
		f := int32(g.in.intn(functions))
		if l.exprs && g.in.oneIn(5) {
			f = -1
		}
		l.funcs = append(l.funcs, f)
	}
	return l
}

// encode writes the segment's flags, which say whether it holds
// expressions, from those of its mode, and its contents.
func (l *elemList) encode(b []byte, flags byte, rest []byte) []byte {
	if l.exprs {
		flags |= 4
	}
	b = append(append(b, flags), rest...)
	if flags&3 != 0 { // an element kind or a reference type
		if l.exprs {
			b = append(b, 0x70)
		} else {
			b = append(b, 0x00)
		}
	}
	b = appendULEB(b, uint64(len(l.funcs)))
	for _, f := range l.funcs {
		switch {
		case !l.exprs:
			b = appendULEB(b, uint64(f))
		case f < 0:
			b = append(b, 0xd0, 0x70, 0x0b)
		default:
			b = append(appendULEB(append(b, 0xd2), uint64(f)), 0x0b)
		}
	}
	return b
}

func (l *elemList) String() string {
	var b strings.Builder
	if l.exprs {
		b.WriteString("funcref")
	} else {
		b.WriteString("func")
	}
	for _, f := range l.funcs {
		switch {
		case f < 0:
			b.WriteString(" (ref.null func)")
		case l.exprs:
			fmt.Fprintf(&b, " (ref.func %d)", f)
		default:
			fmt.Fprintf(&b, " %d", f)
		}
	}
	return b.String()
}

func (g *generator) plannedCall(f int) plannedCall {
	c := plannedCall{export: fmt.Sprintf("f%d", f)}
	for _, t := range g.funcs[f].ft.params {
		if t == i64 {
			c.args = append(c.args, uint64(g.constant64()))
		} else {
			c.args = append(c.args, uint64(uint32(g.constant32())))
		}
	}
	return c
}

func (g *generator) constant32() int32 {
	switch g.in.pick(3, 3, 1) {
	case 0:
		return int32(g.in.intn(16))
	case 1:
		return element(g.in, interesting32)
	}
	return int32(g.in.u32())
}

func (g *generator) constant64() int64 {
	switch g.in.pick(3, 3, 1) {
	case 0:
		return int64(g.in.intn(16))
	case 1:
		return element(g.in, interesting64)
	}
	return int64(g.in.u32())<<32 | int64(g.in.u32())
}

// pseudoRandomBytes returns n bytes of a xorshift sequence from seed:
// data that copies visibly without spending the fuzzer's bytes on it.
func pseudoRandomBytes(seed uint32, n int) []byte {
	x := seed | 1
	b := make([]byte, n)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// fnState is the function being written: its locals and its open blocks.
type fnState struct {
	g      *generator
	in     *choices
	f      *genFunc
	c      *code
	locals []localVar
	ctrl   []frame
	loops  int // open loops
	limit  int // instructions the function may have, about
	// risk weighs the choices likely to trap (an address past the end,
	// a divisor that may be 0, unreachable): 0 in a careful function,
	// whose calls mostly return, so that the code after a trap-prone
	// instruction gets compared too.
	risk int
}

type localVar struct {
	t        valType
	writable bool // loop counters and ends are not
}

// frame is an open block, loop, if or the function's body.
type frame struct {
	op      byte         // opBlock, opLoop, opIf, or opFunction
	labels  []valType    // what a branch to it carries
	counter *loopCounter // of a loop: how it counts its iterations
	// single: the loop's one back edge is its own; other branches to it
	// would break the count (an exact test, or a while loop's update).
	single bool
}

const (
	opFunction byte = 0
	opBlock    byte = 0x02
	opLoop     byte = 0x03
	opIf       byte = 0x04
)

// Size limits of a function: nesting of blocks and loops and of
// expressions.
const (
	maxFrames    = 7
	maxLoops     = 3
	maxExprDepth = 4
	maxStmtDepth = 3
)

func (g *generator) function(f *genFunc, text bool) {
	s := &fnState{g: g, in: g.in, f: f, c: &f.code, limit: 40 + g.in.intn(260), risk: element(g.in, []int{0, 0, 0, 1, 1, 2})}
	if text {
		s.c.text = &strings.Builder{}
	}
	for _, t := range f.ft.params {
		s.locals = append(s.locals, localVar{t: t, writable: true})
	}
	for n := s.in.intn(4); n > 0; n-- {
		s.newLocal(s.g.valType(), true)
	}
	s.prologue()
	s.ctrl = []frame{{op: opFunction, labels: f.ft.results}}
	s.stmts(maxStmtDepth, 8)
	s.values(f.ft.results, maxExprDepth)
	s.c.bin = append(s.c.bin, 0x0b)
}

func (s *fnState) newLocal(t valType, writable bool) uint32 {
	s.locals = append(s.locals, localVar{t: t, writable: writable})
	s.f.locals = append(s.f.locals, t)
	return uint32(len(s.locals) - 1)
}

// prologue takes a step from the budget, or returns zeros if there is
// none left.
func (s *fnState) prologue() {
	c := s.c
	c.opIdx("global.get", []byte{0x23}, s.g.steps)
	c.i32Const(0)
	c.op("i32.le_s", 0x4c)
	c.open("if", opIf, blockType{enc: []byte{0x40}})
	for _, t := range s.f.ft.results {
		s.zero(t)
	}
	c.op("return", 0x0f)
	c.end()
	c.opIdx("global.get", []byte{0x23}, s.g.steps)
	c.i32Const(1)
	c.op("i32.sub", 0x6b)
	c.opIdx("global.set", []byte{0x24}, s.g.steps)
}

func (s *fnState) zero(t valType) {
	if t == i64 {
		s.c.i64Const(0)
	} else {
		s.c.i32Const(0)
	}
}

func (s *fnState) full() bool { return s.c.count >= s.limit }

func (s *fnState) top() frame { return s.ctrl[len(s.ctrl)-1] }

// canNest says whether another block fits.
func (s *fnState) canNest() bool { return len(s.ctrl) < maxFrames && !s.full() }

// local chooses a local of type t, writable if asked; ok is false if there
// is none.
func (s *fnState) local(t valType, writable bool) (idx uint32, ok bool) {
	var candidates []uint32
	for i, l := range s.locals {
		if l.t == t && (l.writable || !writable) {
			candidates = append(candidates, uint32(i))
		}
	}
	if len(candidates) == 0 {
		return 0, false
	}
	return element(s.in, candidates), true
}

// global chooses a global of type t the code may read, or write if asked.
func (s *fnState) global(t valType, write bool) (idx uint32, ok bool) {
	var candidates []uint32
	if s.g.importGlobal && t == i32 && !write {
		candidates = append(candidates, 0)
	}
	first := s.g.steps
	for i, gl := range s.g.globals {
		if gl.t == t && (gl.writable || !write) {
			candidates = append(candidates, first+uint32(i))
		}
	}
	if len(candidates) == 0 {
		return 0, false
	}
	return element(s.in, candidates), true
}

// callee is a function code may call.
type callee struct {
	index uint32
	ft    funcType
}

func (s *fnState) callees() []callee {
	var cs []callee
	if s.g.importFunc {
		cs = append(cs, callee{0, funcType{params: []valType{i32}, results: []valType{i32}}})
	}
	for i, f := range s.g.funcs {
		cs = append(cs, callee{s.g.funcIndex(i), f.ft})
	}
	return cs
}

// returning lists the callees whose results include a t.
func (s *fnState) returning(t valType) []callee {
	var cs []callee
	for _, c := range s.callees() {
		for _, r := range c.ft.results {
			if r == t {
				cs = append(cs, c)
				break
			}
		}
	}
	return cs
}

func (s *fnState) constant(t valType) {
	if t == i64 {
		s.c.i64Const(s.g.constant64())
	} else {
		s.c.i32Const(s.g.constant32())
	}
}

func (s *fnState) leaf(t valType) {
	switch s.in.pick(3, 3, 1) {
	case 1:
		if l, ok := s.local(t, false); ok {
			s.c.opIdx("local.get", []byte{0x20}, l)
			return
		}
	case 2:
		if gl, ok := s.global(t, false); ok {
			s.c.opIdx("global.get", []byte{0x23}, gl)
			return
		}
	}
	s.constant(t)
}

func (s *fnState) values(ts []valType, depth int) {
	for _, t := range ts {
		s.expr(t, depth)
	}
}

// expr writes code that pushes one value of type t.
func (s *fnState) expr(t valType, depth int) {
	if depth <= 0 || s.full() {
		s.leaf(t)
		return
	}
	in, c := s.in, s.c
	nest, calls, indirect, unreachable, memory := 0, 0, 0, 0, 0
	if s.canNest() {
		nest = 3
	}
	if len(s.returning(t)) > 0 {
		calls = 2
	}
	if len(s.g.tables) > 0 {
		indirect = 1
	}
	if s.top().op == opIf {
		unreachable = s.risk
	}
	if t == i32 {
		memory = 2
	}
	switch in.pick(4, 2, 5, 2, 1, 3, 1, 1, calls, indirect, nest, memory, unreachable, 1, 1, 1) {
	case 0:
		s.leaf(t)
	case 1: // unary
		switch {
		case t == i32 && in.intn(4) == 0:
			s.expr(i64, depth-1)
			u := element(in, []opcode{{0x50, "i64.eqz"}, {0xa7, "i32.wrap_i64"}})
			c.op(u.name, u.op)
		case t == i32:
			s.expr(i32, depth-1)
			u := element(in, i32Unary)
			c.op(u.name, u.op)
		case in.intn(3) == 0:
			s.expr(i32, depth-1)
			u := element(in, []opcode{{0xac, "i64.extend_i32_s"}, {0xad, "i64.extend_i32_u"}})
			c.op(u.name, u.op)
		default:
			s.expr(i64, depth-1)
			u := element(in, i64Unary)
			c.op(u.name, u.op)
		}
	case 2: // binary
		ops := i32Binary
		if t == i64 {
			ops = i64Binary
		}
		o := element(in, ops)
		s.expr(t, depth-1)
		s.expr(t, depth-1)
		if isDivision(o.op) && in.pick(8, s.risk) == 0 {
			// Mostly a divisor that is not zero, so that calls get past it.
			if t == i64 {
				c.i64Const(1)
				c.op("i64.or", 0x84)
			} else {
				c.i32Const(1)
				c.op("i32.or", 0x72)
			}
		}
		c.op(o.name, o.op)
	case 3: // comparison
		if t == i64 {
			s.expr(i32, depth-1)
			c.op("i64.extend_i32_u", 0xad)
			break
		}
		ot, ops := i32, i32Compare
		if in.intn(2) == 1 {
			ot, ops = i64, i64Compare
		}
		o := element(in, ops)
		s.expr(ot, depth-1)
		s.expr(ot, depth-1)
		c.op(o.name, o.op)
	case 4: // conversion
		if t == i32 {
			s.expr(i64, depth-1)
			c.op("i32.wrap_i64", 0xa7)
		} else {
			s.expr(i32, depth-1)
			c.op("i64.extend_i32_s", 0xac)
		}
	case 5:
		s.load(t, depth)
	case 6: // select
		s.expr(t, depth-1)
		s.expr(t, depth-1)
		s.expr(i32, depth-1)
		if in.intn(2) == 1 {
			c.opIdx("select (result "+t.String()+")", []byte{0x1c, 1, byte(t)})
		} else {
			c.op("select", 0x1b)
		}
	case 7:
		if l, ok := s.local(t, true); ok {
			s.expr(t, depth-1)
			c.opIdx("local.tee", []byte{0x22}, l)
		} else {
			s.leaf(t)
		}
	case 8:
		s.callFor(t, element(in, s.returning(t)), depth)
	case 9:
		s.callIndirectFor(t, depth)
	case 10: // a block, loop or if whose result is the value
		params := s.g.valTypes(6, 2, 1)
		s.values(params, depth-1)
		s.structured(element(in, []byte{opBlock, opLoop, opIf}), params, []valType{t}, depth-1)
	case 11: // memory and table sizes
		switch in.pick(2, 2, 1, 1) {
		case 0:
			c.opIdx("memory.size", []byte{0x3f}, 0)
		case 1:
			s.growDelta(depth)
			c.opIdx("memory.grow", []byte{0x40}, 0)
		case 2:
			if len(s.g.tables) > 0 {
				c.opIdx("table.size", []byte{0xfc, 16}, element(in, s.g.tables).index)
			} else {
				c.opIdx("memory.size", []byte{0x3f}, 0)
			}
		case 3:
			if len(s.g.tables) > 0 {
				s.reference()
				c.i32Const(int32(in.intn(3)))
				c.opIdx("table.grow", []byte{0xfc, 15}, element(in, s.g.tables).index)
			} else {
				c.opIdx("memory.size", []byte{0x3f}, 0)
			}
		}
	case 12:
		if in.oneIn(4) {
			c.op("unreachable", 0x00)
		} else {
			s.leaf(t)
		}
	case 13: // a value that went through the memory
		s.address(depth)
		s.expr(t, depth-1)
		if t == i64 {
			c.opIdx("i64.store", []byte{0x37}, 3, 0)
		} else {
			c.opIdx("i32.store", []byte{0x36}, 2, 0)
		}
		s.load(t, depth)
	case 14:
		s.float(t, depth)
	case 15:
		s.vector(depth)
		s.reduce(t)
	}
}

// Floats that stay finite through the arithmetic below.
var (
	float32s = []float32{0, 1, -1, 0.5, -2.75, 3e9, -3e9, 1e-3, 65536, 1 << 24}
	float64s = []float64{0, 1, -1, 0.5, -2.75, 9.3e18, -9.3e18, 1e-300, 1 << 53, 1e300}
)

// float writes an integer computed through floats: constants, or an
// integer converted, combined and truncated back. No NaN reaches the
// result but through a saturating truncation, which turns it into 0: a
// NaN's bits need not be the same after the rewrite.
func (s *fnState) float(t valType, depth int) {
	in, c := s.in, s.c
	f32 := func() {
		v := element(in, float32s)
		c.bin = binary.LittleEndian.AppendUint32(append(c.bin, 0x43), math.Float32bits(v))
		c.count++
		c.line("f32.const %g", v)
	}
	f64 := func() {
		v := element(in, float64s)
		c.bin = binary.LittleEndian.AppendUint64(append(c.bin, 0x44), math.Float64bits(v))
		c.count++
		c.line("f64.const %g", v)
	}
	switch {
	case t == i32 && in.intn(3) == 0:
		f32()
		c.op("i32.reinterpret_f32", 0xbc)
	case t == i32:
		s.expr(i32, depth-1)
		c.op("f32.convert_i32_s", 0xb2)
		f32()
		o := element(in, []opcode{{0x92, "f32.add"}, {0x94, "f32.mul"}, {0x96, "f32.min"}, {0x97, "f32.max"}})
		c.op(o.name, o.op)
		if in.pick(6, s.risk) == 1 {
			c.op("i32.trunc_f32_s", 0xa8) // traps past the range
		} else {
			c.opIdx("i32.trunc_sat_f32_s", []byte{0xfc, 0})
		}
	case in.intn(3) == 0:
		f64()
		c.op("i64.reinterpret_f64", 0xbd)
	default:
		s.expr(i64, depth-1)
		c.op("f64.convert_i64_s", 0xb9)
		f64()
		o := element(in, []opcode{{0xa0, "f64.add"}, {0xa2, "f64.mul"}, {0xa3, "f64.div"}})
		c.op(o.name, o.op)
		if in.intn(2) == 1 {
			c.op("f64.sqrt", 0x9f) // NaN when negative
		}
		c.opIdx("i64.trunc_sat_f64_u", []byte{0xfc, 7})
	}
}

// simdOp writes a SIMD instruction (0xfd, then its number, a LEB128 that
// takes two bytes past 127) and its immediates.
func (s *fnState) simdOp(name string, sub uint32, imms ...byte) {
	c := s.c
	c.bin = append(appendULEB(append(c.bin, 0xfd), uint64(sub)), imms...)
	c.count++
	if len(imms) > 0 {
		c.line("%s % x", name, imms)
	} else {
		c.line("%s", name)
	}
}

// simdMemarg writes a SIMD load or store with its alignment and offset,
// and a lane if asked.
func (s *fnState) simdMemarg(name string, sub, align uint32, lane int) {
	imms := appendULEB(nil, uint64(s.in.intn(int(align)+1)))
	imms = appendULEB(imms, uint64(element(s.in, []int{0, 0, 4, 17})))
	if lane >= 0 {
		imms = append(imms, byte(lane))
	}
	s.simdOp(name, sub, imms...)
}

// vector writes code that pushes a v128. The rewrite only passes over
// SIMD instructions, but it must read each one's immediates exactly.
func (s *fnState) vector(depth int) {
	in := s.in
	if depth <= 0 || s.full() {
		s.simdOp("v128.const", 12, pseudoRandomBytes(in.u32(), 16)...)
		return
	}
	switch in.pick(2, 2, 2, 2, 3, 1, 1, 1) {
	case 0:
		s.simdOp("v128.const", 12, pseudoRandomBytes(in.u32(), 16)...)
	case 1:
		s.expr(i32, depth-1)
		o := element(in, []struct {
			name string
			sub  uint32
		}{{"i8x16.splat", 15}, {"i16x8.splat", 16}, {"i32x4.splat", 17}})
		s.simdOp(o.name, o.sub)
	case 2:
		s.expr(i64, depth-1)
		s.simdOp("i64x2.splat", 18)
	case 3:
		s.address(depth)
		switch in.intn(4) {
		case 0:
			s.simdMemarg("v128.load", 0, 4, -1)
		case 1:
			s.simdMemarg("v128.load32_splat", 9, 2, -1)
		case 2:
			s.simdMemarg("v128.load64_zero", 93, 3, -1)
		case 3:
			s.simdMemarg("v128.load8x8_u", 2, 3, -1)
		}
	case 4:
		s.vector(depth - 1)
		s.vector(depth - 1)
		o := element(in, []struct {
			name string
			sub  uint32
		}{{"v128.and", 78}, {"v128.xor", 81}, {"i8x16.swizzle", 14}, {"i8x16.add", 110}, {"i16x8.add", 142},
			{"i32x4.add", 174}, {"i32x4.sub", 177}, {"i32x4.mul", 181}, {"i64x2.add", 206}})
		s.simdOp(o.name, o.sub)
	case 5:
		s.vector(depth - 1)
		s.vector(depth - 1)
		lanes := pseudoRandomBytes(in.u32(), 16)
		for i := range lanes {
			lanes[i] %= 32
		}
		s.simdOp("i8x16.shuffle", 13, lanes...)
	case 6:
		s.vector(depth - 1)
		if in.intn(2) == 1 {
			s.expr(i64, depth-1)
			s.simdOp("i64x2.replace_lane", 30, byte(in.intn(2)))
		} else {
			s.expr(i32, depth-1)
			s.simdOp("i32x4.replace_lane", 28, byte(in.intn(4)))
		}
	case 7:
		s.address(depth)
		s.vector(depth - 1)
		if in.intn(2) == 1 {
			s.simdMemarg("v128.load32_lane", 86, 2, in.intn(4))
		} else {
			s.simdMemarg("v128.load8_lane", 84, 0, in.intn(16))
		}
	}
}

// reduce turns the v128 on the stack into a t.
func (s *fnState) reduce(t valType) {
	in := s.in
	if t == i64 {
		s.simdOp("i64x2.extract_lane", 29, byte(in.intn(2)))
		return
	}
	switch in.intn(6) {
	case 0:
		s.simdOp("i32x4.extract_lane", 27, byte(in.intn(4)))
	case 1:
		s.simdOp("i8x16.extract_lane_u", 22, byte(in.intn(16)))
	case 2:
		s.simdOp("i16x8.extract_lane_s", 24, byte(in.intn(8)))
	case 3:
		s.simdOp("v128.any_true", 83)
	case 4:
		s.simdOp("i32x4.all_true", 163)
	case 5:
		s.simdOp("i8x16.bitmask", 100)
	}
}

func isDivision(op byte) bool {
	return op >= 0x6d && op <= 0x70 || op >= 0x7f && op <= 0x82
}

func (s *fnState) growDelta(depth int) {
	if s.in.intn(3) == 0 {
		s.expr(i32, depth-1)
		s.c.i32Const(3)
		s.c.op("i32.and", 0x71)
	} else {
		s.c.i32Const(int32(s.in.intn(3)))
	}
}

// address pushes an address: mostly one inside the memory, rarely one
// near its end or anywhere, which mostly traps.
func (s *fnState) address(depth int) {
	c := s.c
	switch s.in.pick(6, 4, s.risk, s.risk) {
	case 0:
		c.i32Const(int32(s.in.intn(int(65536*s.g.memMin) - 8)))
	case 1:
		s.expr(i32, depth-1)
		c.i32Const(element(s.in, []int32{0xff, 0xfff, 0xfff8}))
		c.op("i32.and", 0x71)
	case 2:
		c.i32Const(int32(65536*s.g.memMin) - int32(s.in.intn(24)))
	case 3:
		s.expr(i32, depth-1)
		c.i32Const(element(s.in, []int32{0x1ffff, -1}))
		c.op("i32.and", 0x71)
	}
}

func (s *fnState) memarg(o memoryOp) {
	offset := uint32(0)
	switch s.in.pick(24, 12, s.risk) {
	case 1:
		offset = uint32(s.in.intn(64))
	case 2:
		offset = 65536 - uint32(s.in.intn(16))
	}
	s.c.opIdx(o.name, []byte{o.op}, uint32(s.in.intn(int(o.align)+1)), offset)
}

func (s *fnState) load(t valType, depth int) {
	s.address(depth)
	ops := i32Loads
	if t == i64 {
		ops = i64Loads
	}
	s.memarg(element(s.in, ops))
}

func (s *fnState) store(depth int) {
	if s.in.oneIn(8) {
		s.address(depth)
		s.vector(depth - 1)
		if s.in.intn(2) == 1 {
			s.simdMemarg("v128.store", 11, 4, -1)
		} else {
			s.simdMemarg("v128.store32_lane", 90, 2, s.in.intn(4))
		}
		return
	}
	t := s.g.valType()
	s.address(depth)
	s.expr(t, depth-1)
	ops := i32Stores
	if t == i64 {
		ops = i64Stores
	}
	s.memarg(element(s.in, ops))
}

// bulkLength chooses the length of a bulk operation: mostly a few bytes or
// KiB, sometimes more than a page, rarely more than the memory. computed
// says the length is an expression (below 16 KiB) rather than n.
func (s *fnState) bulkLength() (n uint32, computed bool) {
	large := 1
	if s.g.memMin > 1 {
		large = 4 // lengths the rewrite cuts into chunks, and that fit
	}
	switch s.in.pick(4, 4, 2, large) {
	case 0:
		return uint32(element(s.in, smallBulkLengths)), false
	case 1:
		return uint32(element(s.in, kibBulkLengths)), false
	case 2:
		return 1 << 14, true
	}
	n = uint32(element(s.in, largeBulkLengths))
	if n > 65536*s.g.memMin && s.risk == 0 {
		n = 65536 * s.g.memMin
	}
	return n, false
}

func (s *fnState) pushLength(n uint32, computed bool, depth int) {
	if computed {
		s.expr(i32, depth-1)
		s.c.i32Const(1<<14 - 1)
		s.c.op("i32.and", 0x71)
	} else {
		s.c.i32Const(int32(n))
	}
}

// bulkStart chooses where a bulk operation of n bytes starts: mostly
// where it fits in the memory (as it is before any memory.grow), sometimes
// near the end so that a few KiB go out of bounds. It returns -1 for an
// address that is an expression.
func (s *fnState) bulkStart(n uint32) int64 {
	size := int64(65536 * s.g.memMin)
	switch s.in.pick(8, s.risk, s.risk, s.risk) {
	case 0:
		if int64(n) <= size {
			return int64(s.in.intn(int(size-int64(n)) + 1))
		}
		return int64(s.in.intn(int(size)))
	case 1:
		return size - int64(s.in.intn(20000))
	case 2:
		return int64(s.in.intn(int(size)))
	}
	return -1
}

func (s *fnState) pushStart(at int64, depth int) {
	if at < 0 {
		s.expr(i32, depth-1)
		s.c.i32Const(0xffff)
		s.c.op("i32.and", 0x71)
	} else {
		s.c.i32Const(int32(at))
	}
}

func (s *fnState) bulk(depth int) {
	in, c := s.in, s.c
	n, computed := s.bulkLength()
	switch in.pick(3, 3, 2, 1) {
	case 0:
		s.pushStart(s.bulkStart(n), depth)
		s.expr(i32, depth-1)
		s.pushLength(n, computed, depth)
		c.opIdx("memory.fill", []byte{0xfc, 11}, 0)
	case 1:
		dst, src := s.bulkStart(n), s.bulkStart(n)
		if dst >= 0 && in.intn(2) == 1 {
			// Overlapping ranges, in either direction.
			src = max(0, dst+int64(in.intn(20001))-10000)
			if limit := int64(65536*s.g.memMin) - int64(n); src > limit && in.pick(4, s.risk) == 0 {
				src = max(0, limit)
			}
		}
		s.pushStart(dst, depth)
		s.pushStart(src, depth)
		s.pushLength(n, computed, depth)
		c.opIdx("memory.copy", []byte{0xfc, 10}, 0, 0)
	case 2:
		if s.g.passive == nil {
			c.op("nop", 0x01)
			break
		}
		// Mostly a part of the segment, sometimes past its end.
		size := len(s.g.passive)
		from := in.intn(size + 1)
		if in.pick(4, s.risk) == 0 {
			n, computed = uint32(in.intn(size-from+1)), false
		}
		s.pushStart(s.bulkStart(n), depth)
		c.i32Const(int32(from))
		s.pushLength(n, computed, depth)
		c.opIdx("memory.init", []byte{0xfc, 8}, 1, 0)
	case 3:
		if s.g.passive == nil || s.risk == 0 || !in.oneIn(3) {
			c.op("nop", 0x01)
			break
		}
		c.opIdx("data.drop", []byte{0xfc, 9}, 1)
	}
}

// reference pushes a funcref.
func (s *fnState) reference() {
	c := s.c
	switch s.in.pick(3, 1, 1) {
	case 0:
		f := s.in.intn(len(s.g.funcs))
		c.opIdx("ref.func", []byte{0xd2}, s.g.funcIndex(f))
	case 1:
		c.opIdx("ref.null func", []byte{0xd0, 0x70})
	case 2:
		if gl, ok := s.global(funcref, false); ok {
			c.opIdx("global.get", []byte{0x23}, gl)
		} else {
			c.opIdx("ref.null func", []byte{0xd0, 0x70})
		}
	}
}

// table writes a table operation; they change what calls through the
// table find, so only risky functions make them.
func (s *fnState) table() {
	in, c := s.in, s.c
	t := element(in, s.g.tables)
	// Indices and counts mostly within the table, which does not grow
	// by much.
	index := func(t *genTable) { c.i32Const(int32(in.intn(int(t.min) + in.pick(8, s.risk)))) }
	passive := 0
	if s.g.passiveElems != nil {
		passive = 1
	}
	switch in.pick(3, 1, 1, passive, passive) {
	case 0:
		index(t)
		s.reference()
		c.opIdx("table.set", []byte{0x26}, t.index)
	case 1:
		index(t)
		s.reference()
		c.i32Const(int32(in.intn(3)))
		c.opIdx("table.fill", []byte{0xfc, 17}, t.index)
	case 2:
		from := element(in, s.g.tables)
		index(t)
		index(from)
		c.i32Const(int32(in.intn(3)))
		c.opIdx("table.copy", []byte{0xfc, 14}, t.index, from.index)
	case 3:
		index(t)
		c.i32Const(int32(in.intn(len(s.g.passiveElems.funcs) + 1)))
		c.i32Const(int32(in.intn(3)))
		c.opIdx("table.init", []byte{0xfc, 12}, uint32(len(s.g.tables)), t.index)
	case 4:
		if in.oneIn(3) {
			c.opIdx("elem.drop", []byte{0xfc, 13}, uint32(len(s.g.tables)))
		} else {
			c.op("nop", 0x01)
		}
	}
}

// tableIndex pushes an index into table t, often past its end.
func (s *fnState) tableIndex(t *genTable, depth int) {
	switch s.in.pick(4, 2, 1) {
	case 0:
		s.c.i32Const(int32(s.in.intn(int(t.min) + 1)))
	case 1:
		s.expr(i32, depth-1)
		s.c.i32Const(7)
		s.c.op("i32.and", 0x71)
	case 2:
		s.expr(i32, depth-1)
	}
}

// callFor calls f and keeps one of its results, of type t.
func (s *fnState) callFor(t valType, f callee, depth int) {
	s.values(f.ft.params, depth-1)
	s.c.opIdx("call", []byte{0x10}, f.index)
	s.keep(t, f.ft.results)
}

// keep reduces the results on the stack to one of type t.
func (s *fnState) keep(t valType, results []valType) {
	k := -1
	for i, r := range results {
		if r == t && (k < 0 || s.in.intn(2) == 1) {
			k = i
		}
	}
	for i := len(results) - 1; i > k; i-- {
		s.c.op("drop", 0x1a)
	}
	if k == 0 {
		return
	}
	tmp := s.newLocal(t, true)
	s.c.opIdx("local.set", []byte{0x21}, tmp)
	for i := k - 1; i >= 0; i-- {
		s.c.op("drop", 0x1a)
	}
	s.c.opIdx("local.get", []byte{0x20}, tmp)
}

// indirectTarget chooses a call through a table: mostly a slot its
// element segment fills and the type of its function, so that most calls
// get through; otherwise a computed index and any type, which a call may
// find out of the table, null or of another type. slot is -1 for a
// computed index.
func (s *fnState) indirectTarget(want func(funcType) bool) (t *genTable, slot int, ft funcType, ok bool) {
	type candidate struct {
		slot int
		ft   funcType
	}
	var candidates []candidate
	t = element(s.in, s.g.tables)
	for i, e := range t.elems.funcs {
		if e < 0 {
			continue
		}
		ft := funcType{params: []valType{i32}, results: []valType{i32}}
		if !s.g.importFunc || e != 0 {
			ft = s.g.funcs[int(uint32(e)-s.g.funcIndex(0))].ft
		}
		if want(ft) {
			candidates = append(candidates, candidate{int(t.offset) + i, ft})
		}
	}
	if len(candidates) == 0 && s.risk == 0 {
		return t, 0, funcType{}, false
	}
	if len(candidates) == 0 || s.in.pick(6, s.risk) == 1 {
		var types []funcType
		for _, ft := range s.g.types {
			if want(ft) {
				types = append(types, ft)
			}
		}
		if len(types) == 0 {
			return t, 0, funcType{}, false
		}
		return t, -1, element(s.in, types), true
	}
	c := element(s.in, candidates)
	return t, c.slot, c.ft, true
}

func (s *fnState) callIndirect(t *genTable, slot int, ft funcType, depth int) {
	s.values(ft.params, depth-1)
	if slot >= 0 {
		s.c.i32Const(int32(slot))
	} else {
		s.tableIndex(t, depth)
	}
	s.c.opIdx("call_indirect", []byte{0x11}, s.g.typeIndex(ft), t.index)
}

func (s *fnState) callIndirectFor(t valType, depth int) {
	table, slot, ft, ok := s.indirectTarget(func(ft funcType) bool {
		for _, r := range ft.results {
			if r == t {
				return true
			}
		}
		return false
	})
	if !ok {
		s.leaf(t)
		return
	}
	s.callIndirect(table, slot, ft, depth)
	s.keep(t, ft.results)
}

// blockType encodes a block type: a value type or none where that says it,
// otherwise (or at random) a type index.
func (s *fnState) blockType(params, results []valType) blockType {
	ft := funcType{params: params, results: results}
	if len(params) == 0 && len(results) <= 1 && s.in.intn(4) != 0 {
		if len(results) == 0 {
			return blockType{enc: []byte{0x40}}
		}
		return blockType{enc: []byte{byte(results[0])}, text: " (result " + results[0].String() + ")"}
	}
	i := s.g.typeIndex(ft)
	return blockType{enc: appendSLEB(nil, int64(i)), text: fmt.Sprintf(" (type %d) ;; %s", i, ft)}
}

// structured writes a block, loop or if that takes params, already on the
// stack, and leaves results.
func (s *fnState) structured(op byte, params, results []valType, depth int) {
	if op == opLoop && s.loops >= maxLoops {
		op = opBlock
	}
	c := s.c
	bt := s.blockType(params, results)
	switch op {
	case opLoop:
		s.loop(params, results, bt, depth)
		return
	case opBlock:
		c.open("block", opBlock, bt)
		s.ctrl = append(s.ctrl, frame{op: opBlock, labels: results})
		s.body(params, results, depth)
	case opIf:
		s.expr(i32, depth)
		c.open("if", opIf, bt)
		s.ctrl = append(s.ctrl, frame{op: opIf, labels: results})
		s.body(params, results, depth)
		if len(params) > 0 || len(results) > 0 || s.in.intn(2) == 1 {
			c.elseBranch()
			s.body(params, results, depth)
		}
	}
	s.ctrl = s.ctrl[:len(s.ctrl)-1]
	c.end()
}

// body is the inside of a block or an if's branch.
func (s *fnState) body(params, results []valType, depth int) {
	s.consume(params)
	s.stmts(depth, 4)
	s.values(results, depth)
}

// loopCounter is how a loop counts its iterations, in one of the forms a
// rewrite might recognise as a counted loop (k = k ± 2^s, tested against a
// constant or a local the loop does not write), each of which ends within
// bound iterations.
type loopCounter struct {
	k, n  uint32 // the counter, and the local holding the end (if byLocal)
	up    bool   // k counts up from 0 to limit, else down from limit to 0
	step  int32  // a power of two
	limit int32  // bound * step
	// test compares k with the end: in a do-while loop the updated k, and
	// true goes on; in a while loop k before its update, and true goes on
	// (under an if) or leaves (a br_if out).
	test    opcode
	swap    bool // the test reads (end, k)
	byLocal bool // the end is in local n
	tee     bool // the update leaves k with local.tee, else local.set; local.get
}

// Loop shapes.
const (
	doWhile  = iota // loop; ...; update; test; br_if 0
	whileTop        // block; loop; test; br_if 1; ...; update; br 0
	whileIf         // loop; test; if; ...; update; br 1
)

// Tests of a counter, by direction and by whether they read (k, end) or
// (end, k). exactTests are those that fail only on k == end, which a
// counter that may pass its end (updated more than once an iteration)
// would miss.
var (
	goOnUp       = []opcode{{0x48, "i32.lt_s"}, {0x49, "i32.lt_u"}, {0x47, "i32.ne"}}
	goOnUpSwap   = []opcode{{0x4a, "i32.gt_s"}, {0x4b, "i32.gt_u"}, {0x47, "i32.ne"}}
	goOnDown     = []opcode{{0x4a, "i32.gt_s"}, {0x4b, "i32.gt_u"}, {0x47, "i32.ne"}}
	goOnDownSwap = []opcode{{0x48, "i32.lt_s"}, {0x49, "i32.lt_u"}, {0x47, "i32.ne"}}
	leaveUp      = []opcode{{0x4e, "i32.ge_s"}, {0x4f, "i32.ge_u"}, {0x46, "i32.eq"}}
	leaveUpSwap  = []opcode{{0x4c, "i32.le_s"}, {0x4d, "i32.le_u"}, {0x46, "i32.eq"}}
	leaveDown    = []opcode{{0x4c, "i32.le_s"}, {0x4d, "i32.le_u"}, {0x46, "i32.eq"}, {0x45, "i32.eqz"}}
	leaveDnSwap  = []opcode{{0x4e, "i32.ge_s"}, {0x4f, "i32.ge_u"}, {0x46, "i32.eq"}}
)

// exact says whether a do-while test fails only on k == end: i32.ne, and
// the unsigned tests of a counter going down to 0.
func (lc *loopCounter) exact() bool {
	switch lc.test.op {
	case 0x47:
		return true
	case 0x4b, 0x49:
		return !lc.up
	}
	return false
}

// newCounter chooses a loop's counter for shape and writes its start.
func (s *fnState) newCounter(shape int) *loopCounter {
	in, c := s.in, s.c
	bound := int32(in.intn(4))
	if in.oneIn(8) {
		bound = int32(in.intn(40))
	}
	lc := &loopCounter{k: s.newLocal(i32, false), up: in.intn(2) == 1, step: 1, swap: in.intn(3) == 2,
		byLocal: in.intn(3) == 2, tee: in.intn(4) != 3}
	var tests []opcode
	switch {
	case shape == whileTop && lc.up && lc.swap:
		tests = leaveUpSwap
	case shape == whileTop && lc.up:
		tests = leaveUp
	case shape == whileTop && lc.swap:
		tests = leaveDnSwap
	case shape == whileTop:
		tests = leaveDown
	case lc.up && lc.swap:
		tests = goOnUpSwap
	case lc.up:
		tests = goOnUp
	case lc.swap:
		tests = goOnDownSwap
	default:
		tests = goOnDown
	}
	lc.test = element(in, tests)
	if lc.test.op == 0x45 { // i32.eqz reads k alone
		lc.swap = false
	}
	exact := shape == doWhile && lc.exact()
	if exact && bound == 0 {
		bound = 1 // a do-while loop runs once before its test
	}
	// Larger steps where the counter is updated once an iteration, so
	// that a counter that passes its end cannot wrap around to it.
	if shape != doWhile || exact {
		lc.step = element(in, []int32{1, 1, 2, 4, 1 << 15})
	} else {
		lc.step = element(in, []int32{1, 1, 2, 8})
	}
	lc.limit = bound * lc.step
	start := int32(0)
	if !lc.up {
		start = lc.limit
	}
	c.i32Const(start)
	c.opIdx("local.set", []byte{0x21}, lc.k)
	if lc.byLocal {
		lc.n = s.newLocal(i32, false)
		c.i32Const(lc.end())
		c.opIdx("local.set", []byte{0x21}, lc.n)
	}
	return lc
}

// end is the value k stops at.
func (lc *loopCounter) end() int32 {
	if lc.up {
		return lc.limit
	}
	return 0
}

func (s *fnState) pushEnd(lc *loopCounter) {
	if lc.byLocal {
		s.c.opIdx("local.get", []byte{0x20}, lc.n)
	} else {
		s.c.i32Const(lc.end())
	}
}

// update moves k one step, leaving it on the stack if asked.
func (s *fnState) update(lc *loopCounter, leave bool) {
	c := s.c
	c.opIdx("local.get", []byte{0x20}, lc.k)
	c.i32Const(lc.step)
	if lc.up {
		c.op("i32.add", 0x6a)
	} else {
		c.op("i32.sub", 0x6b)
	}
	switch {
	case !leave:
		c.opIdx("local.set", []byte{0x21}, lc.k)
	case lc.tee:
		c.opIdx("local.tee", []byte{0x22}, lc.k)
	default:
		c.opIdx("local.set", []byte{0x21}, lc.k)
		c.opIdx("local.get", []byte{0x20}, lc.k)
	}
}

// test compares k, after its update if asked, with the end.
func (s *fnState) test(lc *loopCounter, update bool) {
	k := func() {
		if update {
			s.update(lc, true)
		} else {
			s.c.opIdx("local.get", []byte{0x20}, lc.k)
		}
	}
	switch {
	case lc.test.op == 0x45:
		k()
	case lc.swap:
		s.pushEnd(lc)
		k()
	default:
		k()
		s.pushEnd(lc)
	}
	s.c.op(lc.test.name, lc.test.op)
}

// guard moves the counter of a do-while loop and pushes whether the loop
// goes on, which every branch back to its head requires.
func (s *fnState) guard(lc *loopCounter) { s.test(lc, true) }

// lap counts an iteration in the laps global.
func (s *fnState) lap() {
	c := s.c
	c.opIdx("global.get", []byte{0x23}, s.g.laps)
	c.i32Const(1)
	c.op("i32.add", 0x6a)
	c.opIdx("global.set", []byte{0x24}, s.g.laps)
}

// loop writes a loop that takes params, already on the stack, and leaves
// results, in one of the shapes compilers emit: a do-while loop (which
// alone takes parameters or has results), or a while loop that tests at
// its head.
func (s *fnState) loop(params, results []valType, bt blockType, depth int) {
	c := s.c
	s.loops++
	shape := doWhile
	if len(params) == 0 && len(results) == 0 {
		shape = s.in.pick(4, 1, 1)
	}
	lc := s.newCounter(shape)
	switch shape {
	case doWhile:
		c.open("loop", opLoop, bt)
		s.ctrl = append(s.ctrl, frame{op: opLoop, labels: params, counter: lc, single: lc.exact()})
		s.lap()
		s.consume(params)
		s.stmts(depth, 4)
		s.values(params, depth)
		s.guard(lc)
		c.opIdx("br_if", []byte{0x0d}, 0)
		s.consume(params)
		s.values(results, depth)
	case whileTop:
		c.open("block", opBlock, bt)
		s.ctrl = append(s.ctrl, frame{op: opBlock})
		c.open("loop", opLoop, bt)
		s.ctrl = append(s.ctrl, frame{op: opLoop, counter: lc, single: true})
		s.test(lc, false)
		c.opIdx("br_if", []byte{0x0d}, 1)
		s.lap()
		s.stmts(depth, 4)
		s.update(lc, false)
		c.opIdx("br", []byte{0x0c}, 0)
		s.ctrl = s.ctrl[:len(s.ctrl)-1]
		c.end()
	case whileIf:
		c.open("loop", opLoop, bt)
		s.ctrl = append(s.ctrl, frame{op: opLoop, counter: lc, single: true})
		s.test(lc, false)
		c.open("if", opIf, blockType{enc: []byte{0x40}})
		s.ctrl = append(s.ctrl, frame{op: opIf})
		s.lap()
		s.stmts(depth, 4)
		s.update(lc, false)
		c.opIdx("br", []byte{0x0c}, 1)
		s.ctrl = s.ctrl[:len(s.ctrl)-1]
		c.end()
	}
	s.ctrl = s.ctrl[:len(s.ctrl)-1]
	c.end()
	s.loops--
}

// consume pops values of types ts, into locals, globals or nowhere.
func (s *fnState) consume(ts []valType) {
	for i := len(ts) - 1; i >= 0; i-- {
		switch s.in.pick(2, 2, 1) {
		case 1:
			if l, ok := s.local(ts[i], true); ok {
				s.c.opIdx("local.set", []byte{0x21}, l)
				continue
			}
		case 2:
			if gl, ok := s.global(ts[i], true); ok {
				s.c.opIdx("global.set", []byte{0x24}, gl)
				continue
			}
		}
		s.c.op("drop", 0x1a)
	}
}

func (s *fnState) stmts(depth, max int) {
	for n := s.in.intn(max + 1); n > 0 && !s.full(); n-- {
		s.stmt(depth)
	}
}

// stmt writes code that leaves the stack as it was.
func (s *fnState) stmt(depth int) {
	in, c := s.in, s.c
	nest, table, unreachable := 0, 0, 0
	if depth > 0 && s.canNest() {
		nest = 5
	}
	if len(s.g.tables) > 0 {
		table = 1
	}
	if s.top().op == opIf {
		unreachable = s.risk
	}
	switch in.pick(1, 4, 2, 3, 3, 1, 3, 2*table, nest, 3, 1, table*s.risk, unreachable) {
	case 0:
		c.op("nop", 0x01)
	case 1:
		t := s.g.valType()
		if l, ok := s.local(t, true); ok {
			s.expr(t, maxExprDepth)
			c.opIdx("local.set", []byte{0x21}, l)
		} else {
			c.op("nop", 0x01)
		}
	case 2:
		t := s.g.valType()
		if gl, ok := s.global(t, true); ok {
			s.expr(t, maxExprDepth)
			c.opIdx("global.set", []byte{0x24}, gl)
		} else {
			c.op("nop", 0x01)
		}
	case 3:
		s.store(maxExprDepth)
	case 4:
		s.bulk(maxExprDepth)
	case 5:
		s.expr(s.g.valType(), maxExprDepth)
		c.op("drop", 0x1a)
	case 6:
		f := element(in, s.callees())
		s.values(f.ft.params, maxExprDepth-1)
		c.opIdx("call", []byte{0x10}, f.index)
		s.consume(f.ft.results)
	case 7:
		if t, slot, ft, ok := s.indirectTarget(func(funcType) bool { return true }); ok {
			s.callIndirect(t, slot, ft, maxExprDepth)
			s.consume(ft.results)
		} else {
			c.op("nop", 0x01)
		}
	case 8:
		params := s.g.valTypes(6, 2, 1)
		results := s.g.valTypes(4, 3, 2, 1)
		s.values(params, maxExprDepth-1)
		s.structured(element(in, []byte{opBlock, opLoop, opIf, opLoop}), params, results, depth-1)
		s.consume(results)
	case 9:
		s.branch()
	case 10:
		s.conditionally(func() {
			s.values(s.f.ft.results, maxExprDepth-1)
			c.op("return", 0x0f)
		})
	case 11:
		s.table()
	case 12:
		if in.oneIn(3) {
			c.op("unreachable", 0x00)
		} else {
			c.op("nop", 0x01)
		}
	}
}

// conditionally writes code that leaves the current block (a branch, a
// return) inside an if, mostly, so that the code after it still runs.
func (s *fnState) conditionally(leave func()) {
	if s.top().op == opIf && s.in.intn(2) == 1 || !s.canNest() {
		leave()
		return
	}
	s.expr(i32, maxExprDepth-1)
	s.c.open("if", opIf, blockType{enc: []byte{0x40}})
	s.ctrl = append(s.ctrl, frame{op: opIf})
	leave()
	s.ctrl = s.ctrl[:len(s.ctrl)-1]
	s.c.end()
}

// label is the relative depth of the frame at ctrl[i].
func (s *fnState) label(i int) uint32 { return uint32(len(s.ctrl) - 1 - i) }

// branch writes a br, br_if or br_table to an enclosing label. A branch
// to a loop is taken only while the loop's counter lasts.
func (s *fnState) branch() {
	in, c := s.in, s.c
	target := in.intn(len(s.ctrl))
	f := s.ctrl[target]
	if f.single {
		c.op("nop", 0x01) // its count allows no other branch back
		return
	}
	switch in.pick(2, 3, 2) {
	case 0: // br
		if f.op == opLoop {
			s.branchBack(target, false)
			return
		}
		s.conditionally(func() {
			s.values(f.labels, maxExprDepth-1)
			c.opIdx("br", []byte{0x0c}, s.label(target))
		})
	case 1: // br_if
		if f.op == opLoop {
			s.branchBack(target, true)
			return
		}
		s.values(f.labels, maxExprDepth-1)
		s.expr(i32, maxExprDepth-1)
		c.opIdx("br_if", []byte{0x0d}, s.label(target))
		s.consume(f.labels)
	case 2:
		s.branchTable(target)
	}
}

// branchBack branches to the loop at ctrl[target] while its counter lasts,
// and also on a condition if asked.
func (s *fnState) branchBack(target int, condition bool) {
	f, c := s.ctrl[target], s.c
	s.values(f.labels, maxExprDepth-1)
	s.guard(f.counter)
	if condition {
		s.expr(i32, maxExprDepth-1)
		c.i32Const(0)
		c.op("i32.ne", 0x47)
		c.op("i32.and", 0x71)
	}
	c.opIdx("br_if", []byte{0x0d}, s.label(target))
	s.consume(f.labels)
}

// branchTable writes a br_table among labels that take what ctrl[target]
// does. Its default is a label that is not a loop's; when a loop is among
// the others, the index goes to the default unless the outermost such
// loop's counter lasts, which bounds the branches back to every loop
// inside it.
func (s *fnState) branchTable(target int) {
	in, c := s.in, s.c
	labels := s.ctrl[target].labels
	var same, forward []int
	for i, f := range s.ctrl {
		if slices.Equal(f.labels, labels) && !f.single {
			same = append(same, i)
			if f.op != opLoop {
				forward = append(forward, i)
			}
		}
	}
	if len(forward) == 0 {
		s.branchBack(target, true)
		return
	}
	def := element(in, forward)
	targets := []int{target}
	for n := in.intn(4); n > 0; n-- {
		targets = append(targets, element(in, same))
	}
	outerLoop := -1
	for _, i := range targets {
		if s.ctrl[i].op == opLoop && (outerLoop < 0 || i < outerLoop) {
			outerLoop = i
		}
	}
	s.conditionally(func() {
		s.values(labels, maxExprDepth-1)
		switch in.pick(2, 2, 1) {
		case 0:
			c.i32Const(int32(in.intn(len(targets) + 1)))
		case 1:
			s.expr(i32, maxExprDepth-1)
			c.i32Const(3)
			c.op("i32.and", 0x71)
		case 2:
			s.expr(i32, maxExprDepth-1)
		}
		if outerLoop >= 0 {
			c.i32Const(-1)
			s.guard(s.ctrl[outerLoop].counter)
			c.op("select", 0x1b)
		}
		enc := appendULEB([]byte{0x0e}, uint64(len(targets)))
		text := "br_table"
		for _, i := range append(targets, def) {
			enc = appendULEB(enc, uint64(s.label(i)))
			text += fmt.Sprintf(" %d", s.label(i))
		}
		c.op(text, enc...)
	})
}

// encode writes the module in the binary format.
func (g *generator) encode() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")

	types := appendULEB(nil, uint64(len(g.types)))
	for _, ft := range g.types {
		types = append(types, 0x60)
		types = appendULEB(types, uint64(len(ft.params)))
		for _, t := range ft.params {
			types = append(types, byte(t))
		}
		types = appendULEB(types, uint64(len(ft.results)))
		for _, t := range ft.results {
			types = append(types, byte(t))
		}
	}
	out = appendSection(out, 1, types)

	if g.importFunc || g.importGlobal {
		var imports []byte
		n := 0
		if g.importFunc {
			imports = appendWasmName(appendWasmName(imports, "env"), "h")
			imports = append(imports, 0x00, 0x00) // type 0
			n++
		}
		if g.importGlobal {
			imports = appendWasmName(appendWasmName(imports, "env"), "g")
			imports = append(imports, 0x03, 0x7f, 0x00)
			n++
		}
		out = appendSection(out, 2, append(appendULEB(nil, uint64(n)), imports...))
	}

	funcs := appendULEB(nil, uint64(len(g.funcs)))
	for _, f := range g.funcs {
		funcs = appendULEB(funcs, uint64(f.typeIdx))
	}
	out = appendSection(out, 3, funcs)

	if len(g.tables) > 0 {
		tables := appendULEB(nil, uint64(len(g.tables)))
		for _, t := range g.tables {
			if t.max > 0 {
				tables = appendULEB(appendULEB(append(tables, 0x70, 0x01), uint64(t.min)), uint64(t.max))
			} else {
				tables = appendULEB(append(tables, 0x70, 0x00), uint64(t.min))
			}
		}
		out = appendSection(out, 4, tables)
	}

	memory := appendULEB([]byte{1, 0x01}, uint64(g.memMin))
	out = appendSection(out, 5, appendULEB(memory, uint64(g.memMax)))

	globals := appendULEB(nil, uint64(len(g.globals)))
	for _, gl := range g.globals {
		mut := byte(0)
		if gl.mutable {
			mut = 1
		}
		globals = append(append(append(globals, byte(gl.t), mut), gl.init...), 0x0b)
	}
	out = appendSection(out, 6, globals)

	var exports []byte
	n := 0
	for i := range g.funcs {
		exports = appendWasmName(exports, fmt.Sprintf("f%d", i))
		exports = appendULEB(append(exports, 0x00), uint64(g.funcIndex(i)))
		n++
	}
	for i, gl := range g.globals {
		if gl.export != "" {
			exports = appendWasmName(exports, gl.export)
			exports = appendULEB(append(exports, 0x03), uint64(g.steps)+uint64(i))
			n++
		}
	}
	exports = append(appendWasmName(exports, exportMemory), 0x02, 0x00)
	n++
	out = appendSection(out, 7, append(appendULEB(nil, uint64(n)), exports...))

	if g.start >= 0 {
		out = appendSection(out, 8, appendULEB(nil, uint64(g.funcIndex(g.start))))
	}

	if len(g.tables) > 0 {
		segments := len(g.tables)
		if g.passiveElems != nil {
			segments++
		}
		elem := appendULEB(nil, uint64(segments))
		for _, t := range g.tables {
			offset := append(appendSLEB([]byte{0x41}, int64(t.offset)), 0x0b)
			if t.index == 0 {
				elem = t.elems.encode(elem, 0, offset) // active, table 0
			} else {
				elem = t.elems.encode(elem, 2, append(appendULEB(nil, uint64(t.index)), offset...))
			}
		}
		if g.passiveElems != nil {
			elem = g.passiveElems.encode(elem, 1, nil)
		}
		out = appendSection(out, 9, elem)
	}

	segments := 1
	if g.passive != nil {
		segments = 2
	}
	out = appendSection(out, 12, appendULEB(nil, uint64(segments)))

	bodies := appendULEB(nil, uint64(len(g.funcs)))
	for _, f := range g.funcs {
		var body []byte
		body = appendULEB(body, uint64(len(f.locals)))
		for _, t := range f.locals {
			body = append(append(body, 1), byte(t))
		}
		body = append(body, f.code.bin...)
		bodies = appendULEB(bodies, uint64(len(body)))
		bodies = append(bodies, body...)
	}
	out = appendSection(out, 10, bodies)

	data := []byte{byte(segments), 0x00}
	data = append(appendSLEB(append(data, 0x41), int64(g.dataAt)), 0x0b)
	data = append(appendULEB(data, uint64(len(g.data))), g.data...)
	if g.passive != nil {
		data = append(appendULEB(append(data, 0x01), uint64(len(g.passive))), g.passive...)
	}
	out = appendSection(out, 11, data)

	// A custom section at the end, which the rewrite keeps last.
	return appendSection(out, 0, append(appendWasmName(nil, "voxhost-diff"), "kept"...))
}

// text writes the module close to WAT, function bodies as instruction
// sequences.
func (g *generator) text() string {
	var b strings.Builder
	b.WriteString("(module\n")
	for i, ft := range g.types {
		fmt.Fprintf(&b, "  (type %d %s)\n", i, ft)
	}
	if g.importFunc {
		b.WriteString("  (import \"env\" \"h\" (func 0 (type 0)))  ;; x*3 + 1\n")
	}
	if g.importGlobal {
		b.WriteString("  (import \"env\" \"g\" (global 0 i32))  ;; 42\n")
	}
	fmt.Fprintf(&b, "  (memory (export %q) %d %d)\n", exportMemory, g.memMin, g.memMax)
	for i, gl := range g.globals {
		t := gl.t.String()
		if gl.mutable {
			t = "(mut " + t + ")"
		}
		export := ""
		if gl.export != "" {
			export = fmt.Sprintf(" (export %q)", gl.export)
		}
		fmt.Fprintf(&b, "  (global %d%s %s (%s))\n", g.steps+uint32(i), export, t, gl.initText)
	}
	for _, t := range g.tables {
		if t.max > 0 {
			fmt.Fprintf(&b, "  (table %d %d %d funcref)\n", t.index, t.min, t.max)
		} else {
			fmt.Fprintf(&b, "  (table %d %d funcref)\n", t.index, t.min)
		}
		fmt.Fprintf(&b, "  (elem %d (table %d) (i32.const %d) %s)\n", t.index, t.index, t.offset, &t.elems)
	}
	if g.passiveElems != nil {
		fmt.Fprintf(&b, "  (elem %d %s)\n", len(g.tables), g.passiveElems)
	}
	fmt.Fprintf(&b, "  (data (i32.const %d) %d pseudo-random bytes)\n", g.dataAt, len(g.data))
	if g.passive != nil {
		fmt.Fprintf(&b, "  (data 1 %d pseudo-random bytes)\n", len(g.passive))
	}
	if g.start >= 0 {
		fmt.Fprintf(&b, "  (start %d)\n", g.funcIndex(g.start))
	}
	for i, f := range g.funcs {
		fmt.Fprintf(&b, "  (func %d (export \"f%d\") (type %d) ;; %s\n", g.funcIndex(i), i, f.typeIdx, f.ft)
		if len(f.locals) > 0 {
			b.WriteString("    (local")
			for _, t := range f.locals {
				b.WriteString(" " + t.String())
			}
			b.WriteString(")\n")
		}
		b.WriteString(f.code.text.String())
		b.WriteString("  )\n")
	}
	b.WriteString(")\n")
	return b.String()
}
