package preempt

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Mode says what the inserted checks do.
type Mode uint8

const (
	// Fuel counts instructions down in a global and calls the host's tick
	// when they run out (see the package documentation).
	Fuel Mode = iota
	// Flag traps when the host has set an exported global to 1.
	Flag
)

// The names an instrumented module uses. The host reserves them: a module
// that already imports from ImportModule or exports ExportStart or
// ExportStop cannot be instrumented.
const (
	// ImportModule.ImportTick is the host function the fuel checks call,
	// of type () -> (i32): it returns the fuel to continue with, or traps.
	ImportModule = "voxhost:budget"
	ImportTick   = "tick"
	// ExportStart is the module's start function, which the host must call
	// after instantiation, before anything else.
	ExportStart = "voxhost:start"
	// ExportStop is the stop flag of Flag mode.
	ExportStop = "voxhost:stop"
)

const (
	// Refill is the fuel a module starts with and the tick returns by
	// default: 15 µs of a tight DSP loop (which runs 17 instructions a
	// nanosecond), a millisecond or so of code that misses the cache.
	Refill = 1 << 18
	// ImportCallCost is what a call to an imported (host) function weighs,
	// in instructions. Host calls cost 0.1 to a few microseconds, but
	// plugins make them in branches taken rarely (an emit when speech
	// starts), which a static weight charges on every pass. Host functions
	// that do work in proportion to their arguments check the budget
	// themselves.
	ImportCallCost = 100
	// LeafLimit: a function that makes no calls and has at most this many
	// instructions outside its loops gets no check at entry; its loops have
	// their own. It can only run a bounded time before it returns.
	LeafLimit = 32
	// BulkChunk is the most bytes one memory.fill or memory.copy of an
	// instrumented module moves between two checks: a larger one is cut
	// into chunks of this size, each charged BulkChunk fuel (a byte costs
	// about what an instruction does), so that a 16 MiB fill is a loop
	// with checks in it, stoppable within its budget, and no longer one
	// instruction that holds the goroutine for milliseconds.
	BulkChunk = 1 << 16
	// maxCharge caps a dynamic charge (a table operation's element count),
	// so that fuel, an i32, cannot wrap however large the count.
	maxCharge = 1 << 24
)

// Config tunes a rewrite; the zero value is the host's defaults.
type Config struct {
	// Mode says what the checks do.
	Mode Mode
	// Refill is the fuel the module starts with, which the host's tick
	// must return too; zero means Refill. No check weighs more than a
	// refill, so any loop makes progress between two ticks. Tests set it
	// small to make ticks happen constantly.
	Refill int32
	// Limits caps what the module may declare; zero fields mean
	// DefaultLimits.
	Limits Limits
}

// ErrReserved is wrapped by the error for a module that uses a name the
// host reserves for instrumentation.
var ErrReserved = errors.New("name reserved by the host")

// Instrument adds Fuel checks to a module with the default Config; see
// InstrumentConfig.
func Instrument(wasm []byte) ([]byte, error) { return InstrumentConfig(wasm, Config{}) }

// InstrumentMode is Instrument with the checks of mode.
func InstrumentMode(wasm []byte, mode Mode) ([]byte, error) {
	return InstrumentConfig(wasm, Config{Mode: mode})
}

// InstrumentConfig returns a copy of the binary module wasm with a check at
// the start of every function that makes calls or is not tiny, at the head
// of every loop, and after every operation whose cost depends on its
// operands (bulk memory and table operations, cut into chunks where they
// can be). It runs in time linear in the module's size.
//
// It reads every section wazero decodes, and fails on bytes that are not a
// well-formed module, on a count larger than the bytes left could hold, on
// a module over any of c.Limits (a *LimitError), and on features wazero's
// WebAssembly 2.0 does not include (exception handling, threads, GC). A
// module it accepts is safe to hand to wazero, which trusts the counts it
// reads (v1.12 allocates 13 GB for a 79-byte module whose export section
// claims 268 million exports). It does not validate types: the host
// validates the original module before it rewrites it, since the rewrite
// could make some invalid modules valid. A module that uses a name the host
// reserves is read to the end before the error, which wraps ErrReserved.
func InstrumentConfig(wasm []byte, c Config) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failure)
			if !ok {
				panic(r)
			}
			out, err = nil, f.err
		}
	}()
	if c.Mode != Fuel && c.Mode != Flag {
		return nil, fmt.Errorf("unknown mode %d", c.Mode)
	}
	if c.Refill < 0 {
		return nil, fmt.Errorf("refill of %d: it must be positive", c.Refill)
	}
	if c.Refill == 0 {
		c.Refill = Refill
	}
	limits := c.Limits.withDefaults()
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" || string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	m := &module{mode: c.Mode, refill: c.Refill, limits: limits}
	(&reader{}).over("module_bytes", uint64(len(wasm)), uint64(limits.ModuleBytes), "bytes of module")
	m.size, m.maxOut = len(wasm), uint64(limits.RewriteFactor)*uint64(len(wasm))+rewriteSlack
	m.split(wasm)
	m.survey()
	out = m.emit(len(wasm))
	m.outgrown(len(out))
	if m.reserved != nil {
		return nil, m.reserved
	}
	return out, nil
}

type section struct {
	id   byte
	body []byte
	off  int // module offset of body
}

func (s *section) reader() *reader { return &reader{b: s.body, base: s.off} }

// Section ids, and their order in a module (custom sections go anywhere).
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

var rank = [...]int{secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secTag: 6,
	secGlobal: 7, secExport: 8, secStart: 9, secElement: 10, secDataCount: 11, secCode: 12, secData: 13}

type module struct {
	mode   Mode
	refill int32
	limits Limits
	// locals counts the locals of the functions read so far, against
	// limits.ModuleLocals.
	locals uint64
	// labels counts the br_table labels of the functions read so far,
	// against moduleLabels.
	labels   uint64
	sections []section
	byID     [14]*section

	types, funcImports, globalImports, globals, funcs uint32
	hasStart                                          bool
	start                                             uint32
	// params is the parameter count of each type, funcType the type of
	// each defined function: a function's fuel local comes after them and
	// its own locals.
	params   []uint32
	funcType []uint32

	// shift is added to the index of every defined function: Fuel mode
	// imports the tick, which comes before them.
	shift uint32
	tick  uint32 // function index of the tick
	flag  uint32 // global index of the fuel or the stop flag
	// reserved is the first use of a reserved name, reported once the
	// whole module has been read.
	reserved error
	// helpers are the bulk operations (memoryFill, memoryCopy) that have a
	// helper function (emitter.bulk), in the order of their indices, which
	// follow the module's own functions. They are known once the code has
	// been rewritten, after the type and function sections were written:
	// emit splices the helpers' entries into those afterwards.
	helpers []uint32
	// size is the input's size in bytes, maxOut the most bytes the
	// rewritten module may have (Limits.RewriteFactor).
	size   int
	maxOut uint64
}

// helper returns the function index of the helper for the bulk operation
// op, which it adds on first use.
func (m *module) helper(op uint32) uint32 {
	i := slices.Index(m.helpers, op)
	if i < 0 {
		i = len(m.helpers)
		m.helpers = append(m.helpers, op)
	}
	return m.funcImports + m.shift + m.funcs + uint32(i)
}

// helperType is the type index of the helpers, (i32 i32 i32 i32) -> (i32),
// which follows the tick's.
func (m *module) helperType() uint32 { return m.types + 1 }

// outgrown stops the rewrite when size bytes of output exceed maxOut. The
// error names no byte: no one instruction is at fault.
func (m *module) outgrown(size int) {
	if uint64(size) > m.maxOut {
		panic(failure{&LimitError{Limit: "rewrite_factor", Value: uint64(size), Max: m.maxOut,
			What: fmt.Sprintf("bytes once instrumented (at most %d× the module's %d bytes, plus %d)", m.limits.RewriteFactor, m.size, rewriteSlack)}})
	}
}

func (m *module) reserve(r *reader, err error) {
	if m.reserved == nil {
		m.reserved = fmt.Errorf("byte %d: %w", r.base+r.pos, err)
	}
}

// split cuts the module into its sections.
func (m *module) split(wasm []byte) {
	r := &reader{b: wasm, pos: 8}
	for !r.done() {
		id := r.byte()
		size := r.u32()
		off := r.pos
		body := r.bytes(size)
		if id > secTag {
			r.pos = off
			r.fail("unknown section id %d", id)
		}
		if id == secTag {
			r.pos = off
			r.fail("exception handling (a tag section) is not supported")
		}
		m.sections = append(m.sections, section{id: id, body: body, off: off})
	}
	for i := range m.sections {
		s := &m.sections[i]
		if s.id == secCustom {
			continue
		}
		if m.byID[s.id] != nil {
			r := s.reader()
			r.fail("a second section with id %d", s.id)
		}
		m.byID[s.id] = s
	}
}

// survey counts what the new indices depend on.
func (m *module) survey() {
	if s := m.byID[secType]; s != nil {
		r := s.reader()
		m.types = r.u32()
		for i := uint32(0); i < m.types; i++ {
			if form := r.byte(); form != 0x60 {
				r.fail("unsupported type form 0x%02x (GC types are not supported)", form)
			}
			n := r.u32()
			for k := n; k > 0; k-- {
				r.valtype()
			}
			for k := r.u32(); k > 0; k-- {
				r.valtype()
			}
			m.params = append(m.params, n)
		}
	}
	if s := m.byID[secImport]; s != nil {
		r := s.reader()
		for n := r.u32(); n > 0; n-- {
			mod := r.name()
			r.name()
			if string(mod) == ImportModule {
				m.reserve(r, fmt.Errorf("imports from %q: %w", ImportModule, ErrReserved))
			}
			switch kind := r.byte(); kind {
			case 0:
				r.u32()
				m.funcImports++
			case 1:
				r.fail("imports a table: a plugin must define its own tables")
			case 2:
				r.limits()
			case 3:
				r.valtype()
				r.byte()
				m.globalImports++
			default:
				r.fail("unsupported import kind %d", kind)
			}
		}
	}
	if s := m.byID[secGlobal]; s != nil {
		r := s.reader()
		m.globals = r.u32()
		r.over("globals", uint64(m.globalImports)+uint64(m.globals), uint64(m.limits.Globals), "globals")
	}
	if s := m.byID[secFunction]; s != nil {
		r := s.reader()
		m.funcs = r.u32()
		r.over("functions", uint64(m.funcImports)+uint64(m.funcs), uint64(m.limits.Functions), "functions")
		for i := uint32(0); i < m.funcs; i++ {
			t := r.u32()
			if t >= m.types {
				r.fail("function %d declares type %d, which does not exist (%d types)", i, t, m.types)
			}
			m.funcType = append(m.funcType, t)
		}
	}
	if s := m.byID[secStart]; s != nil {
		r := s.reader()
		m.hasStart, m.start = true, r.u32()
	}
	m.flag = m.globalImports + m.globals
	if m.mode == Fuel {
		m.shift, m.tick = 1, m.funcImports
	}
}

// global reads a global index, which must name a global of the input.
func (m *module) global(r *reader) {
	if i := r.u32(); i >= m.flag {
		r.fail("global %d does not exist (%d globals)", i, m.flag)
	}
}

// fn maps a function index of the input to the output.
func (m *module) fn(i uint32) uint32 {
	if i >= m.funcImports {
		return i + m.shift
	}
	return i
}

func (m *module) emit(size int) []byte {
	out := make([]byte, 0, size+size/8+64)
	out = append(out, "\x00asm\x01\x00\x00\x00"...)
	var done [14]bool
	// Where the type and function sections were written, for the helpers.
	var types, funcs [2]int
	// add writes the sections this rewrite needs that the module lacks,
	// before the first section that must follow them.
	add := func(before int) {
		if m.mode == Fuel && !done[secType] && before > rank[secType] {
			done[secType] = true
			types[0] = len(out)
			out = m.section(out, secType, m.typeSection(nil))
			types[1] = len(out)
		}
		if m.mode == Fuel && !done[secImport] && before > rank[secImport] {
			done[secImport] = true
			out = m.section(out, secImport, m.importSection(nil))
		}
		if !done[secGlobal] && before > rank[secGlobal] {
			done[secGlobal] = true
			out = m.section(out, secGlobal, m.globalSection(nil))
		}
		if (m.hasStart || m.mode == Flag) && !done[secExport] && before > rank[secExport] {
			done[secExport] = true
			out = m.section(out, secExport, m.exportSection(nil))
		}
	}
	last := -1 // the last section that is not a custom section
	for i := range m.sections {
		if m.sections[i].id != secCustom {
			last = i
		}
	}
	for i := range m.sections {
		s := &m.sections[i]
		if s.id == secCustom {
			if i > last {
				// New sections go before the custom sections that end
				// the module (the name section, by convention last).
				add(len(rank) + 1)
			}
			out = m.custom(out, s)
			continue
		}
		add(rank[s.id])
		done[s.id] = true
		switch s.id {
		case secType:
			types[0] = len(out)
			out = m.section(out, s.id, m.typeSection(s))
			types[1] = len(out)
		case secFunction:
			funcs[0] = len(out)
			out = m.section(out, s.id, s.body)
			funcs[1] = len(out)
		case secImport:
			out = m.section(out, s.id, m.importSection(s))
		case secGlobal:
			out = m.section(out, s.id, m.globalSection(s))
		case secExport:
			out = m.section(out, s.id, m.exportSection(s))
		case secStart:
			// Dropped: the start function is exported as ExportStart.
		case secElement:
			out = m.section(out, s.id, m.elementSection(s))
		case secTable:
			out = m.section(out, s.id, m.tableSection(s))
		case secMemory:
			m.memorySection(s)
			out = m.section(out, s.id, s.body)
		case secData:
			m.dataSection(s)
			out = m.section(out, s.id, s.body)
		case secDataCount:
			r := s.reader()
			r.u32()
			if !r.done() {
				r.fail("junk after the data count")
			}
			out = m.section(out, s.id, s.body)
		case secCode:
			out = m.section(out, s.id, m.codeSection(s))
		default:
			out = m.section(out, s.id, s.body)
		}
	}
	add(len(rank) + 1)
	if m.byID[secCode] == nil && m.funcs > 0 {
		(&reader{base: len(out)}).fail("%d functions declared but no code section", m.funcs)
	}
	if len(m.helpers) > 0 {
		out = m.declareHelpers(out, types, funcs)
	}
	return out
}

// declareHelpers rewrites the type and function sections of out, at the
// spans given, to declare the helpers the code section calls: their type
// after the tick's, their functions after the module's own. Only a module
// with bulk operations pays for them, and it pays once.
func (m *module) declareHelpers(out []byte, types, funcs [2]int) []byte {
	sig := []byte{0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f}
	// The type section ends with the tick's type; its count goes up by one.
	typeBody := appendU32(nil, m.types+2)
	r := &reader{b: out[types[0]:types[1]]}
	r.byte()
	r.u32()
	r.u32()
	typeBody = append(append(typeBody, r.b[r.pos:]...), sig...)
	funcBody := appendU32(nil, m.funcs+uint32(len(m.helpers)))
	r = &reader{b: out[funcs[0]:funcs[1]]}
	r.byte()
	r.u32()
	r.u32()
	funcBody = append(funcBody, r.b[r.pos:]...)
	for range m.helpers {
		funcBody = appendU32(funcBody, m.helperType())
	}
	b := make([]byte, 0, len(out)+len(sig)+8)
	b = append(b, out[:types[0]]...)
	b = m.section(b, secType, typeBody)
	b = append(b, out[types[1]:funcs[0]]...)
	b = m.section(b, secFunction, funcBody)
	return append(b, out[funcs[1]:]...)
}

func (m *module) section(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(body)))
	return append(out, body...)
}

// typeSection appends the tick's type, () -> (i32), in Fuel mode.
func (m *module) typeSection(s *section) []byte {
	if m.mode != Fuel {
		return s.body
	}
	var b []byte
	rest := []byte(nil)
	if s != nil {
		r := s.reader()
		r.u32()
		rest = r.b[r.pos:]
	}
	b = appendU32(b, m.types+1)
	b = append(b, rest...)
	return append(b, 0x60, 0x00, 0x01, 0x7f)
}

// importSection appends the tick in Fuel mode; it becomes the function
// after the module's own imported functions.
func (m *module) importSection(s *section) []byte {
	if m.mode != Fuel {
		return s.body
	}
	var b []byte
	count, rest := uint32(0), []byte(nil)
	if s != nil {
		r := s.reader()
		count = r.u32()
		rest = r.b[r.pos:]
	}
	b = appendU32(b, count+1)
	b = append(b, rest...)
	b = appendName(b, ImportModule)
	b = appendName(b, ImportTick)
	b = append(b, 0x00)
	return appendU32(b, m.types)
}

// globalSection rewrites the initialisers' function references and
// appends the fuel or the stop flag.
func (m *module) globalSection(s *section) []byte {
	var b []byte
	b = appendU32(b, m.globals+1)
	if s != nil {
		r := s.reader()
		r.u32()
		for i := uint32(0); i < m.globals; i++ {
			start := r.pos
			r.valtype()
			r.byte()
			b = append(b, r.b[start:r.pos]...)
			b = m.constExpr(r, b)
		}
		if !r.done() {
			r.fail("junk after the global section")
		}
	}
	init := int32(0)
	if m.mode == Fuel {
		init = m.refill
	}
	b = append(b, 0x7f, 0x01, 0x41)
	b = appendS32(b, init)
	return append(b, 0x0b)
}

// exportSection renumbers exported functions and exports the moved start
// function and, in Flag mode, the stop flag.
func (m *module) exportSection(s *section) []byte {
	var b []byte
	count := uint32(0)
	var entries []byte
	if s != nil {
		r := s.reader()
		count = r.u32()
		for i := uint32(0); i < count; i++ {
			name := r.name()
			if n := string(name); n == ExportStart || n == ExportStop {
				m.reserve(r, fmt.Errorf("exports %q: %w", n, ErrReserved))
			}
			entries = appendName(entries, string(name))
			kind := r.byte()
			idx := r.u32()
			if kind == 0 {
				idx = m.fn(idx)
			}
			if kind == 3 && idx >= m.flag {
				r.fail("global %d does not exist", idx)
			}
			entries = appendU32(append(entries, kind), idx)
		}
		if !r.done() {
			r.fail("junk after the export section")
		}
	}
	if m.hasStart {
		count++
		entries = appendName(entries, ExportStart)
		entries = appendU32(append(entries, 0x00), m.fn(m.start))
	}
	if m.mode == Flag {
		count++
		entries = appendName(entries, ExportStop)
		entries = appendU32(append(entries, 0x03), m.flag)
	}
	b = appendU32(b, count)
	return append(b, entries...)
}

// tableSection checks the tables against the limits and gives each a
// maximum within them: what the tables' minimums leave of
// limits.TableElements is the room they may grow into together.
func (m *module) tableSection(s *section) []byte {
	r := s.reader()
	n := r.u32()
	r.over("tables", uint64(n), uint64(m.limits.Tables), "tables")
	type table struct {
		ref      []byte
		min, max uint64
		bounded  bool
	}
	tables := make([]table, 0, n)
	total := uint64(0)
	for ; n > 0; n-- {
		if r.peek() == 0x40 {
			r.fail("tables with an initialiser are not supported")
		}
		start := r.pos
		r.valtype()
		t := table{ref: r.b[start:r.pos]}
		flags := r.byte()
		if flags > 1 {
			r.fail("unsupported table limits flags 0x%02x (64-bit and shared tables are not supported)", flags)
		}
		t.min = r.u64()
		if flags == 1 {
			t.max, t.bounded = r.u64(), true
			if t.max < t.min {
				r.fail("a table's maximum %d is below its minimum %d", t.max, t.min)
			}
		}
		total += t.min
		r.over("table_elements", total, m.limits.TableElements, "table elements")
		tables = append(tables, t)
	}
	if !r.done() {
		r.fail("junk after the table section")
	}
	// The tables share the room fairly: each gets an equal part of what
	// is left, or what its own maximum lets it grow if that is less, the
	// tables that need least served first, so a table with a small
	// maximum keeps it and one without any cannot take the others' room.
	room := m.limits.TableElements - total
	need := func(t table) uint64 {
		if t.bounded {
			return t.max - t.min
		}
		return math.MaxUint64
	}
	order := make([]int, len(tables))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return need(tables[order[a]]) < need(tables[order[b]]) })
	grow := make([]uint64, len(tables))
	for k, i := range order {
		grow[i] = min(need(tables[i]), room/uint64(len(order)-k))
		room -= grow[i]
	}
	b := appendU32(nil, uint32(len(tables)))
	for i, t := range tables {
		b = append(b, t.ref...)
		b = append(b, 0x01)
		b = appendU64(b, t.min)
		b = appendU64(b, t.min+grow[i])
	}
	return b
}

// memorySection checks the memories.
func (m *module) memorySection(s *section) {
	r := s.reader()
	for n := r.u32(); n > 0; n-- {
		r.limits()
	}
	if !r.done() {
		r.fail("junk after the memory section")
	}
}

// dataSection checks the data segments.
func (m *module) dataSection(s *section) {
	r := s.reader()
	n := r.u32()
	r.over("data_segments", uint64(n), uint64(m.limits.DataSegments), "data segments")
	total := uint64(0)
	for ; n > 0; n-- {
		switch flags := r.u32(); flags {
		case 0:
			m.constExpr(r, nil)
		case 1:
		case 2:
			r.u32()
			m.constExpr(r, nil)
		default:
			r.fail("unknown data segment flags %d", flags)
		}
		total += uint64(len(r.name())) // the bytes
		r.over("data_bytes", total, m.limits.DataBytes, "bytes of data segments")
	}
	if !r.done() {
		r.fail("junk after the data section")
	}
}

// elementSection renumbers the functions of element segments.
func (m *module) elementSection(s *section) []byte {
	r := s.reader()
	n := r.u32()
	b := appendU32(nil, n)
	entries := uint64(0)
	for ; n > 0; n-- {
		flags := r.u32()
		b = appendU32(b, flags)
		if flags > 7 {
			r.fail("unknown element segment flags %d", flags)
		}
		if flags&3 == 2 { // explicit table index
			b = appendU32(b, r.u32())
		}
		if flags&1 == 0 { // active: an offset
			b = m.constExpr(r, b)
		}
		if flags&3 != 0 { // an element kind or a reference type
			start := r.pos
			if flags&4 == 0 {
				if k := r.byte(); k != 0 {
					r.fail("unknown element kind %d", k)
				}
			} else {
				r.valtype()
			}
			b = append(b, r.b[start:r.pos]...)
		}
		count := r.u32()
		entries += uint64(count)
		r.over("element_entries", entries, m.limits.ElementEntries, "element segment entries")
		b = appendU32(b, count)
		for ; count > 0; count-- {
			if flags&4 == 0 {
				b = appendU32(b, m.fn(r.u32()))
			} else {
				b = m.constExpr(r, b)
			}
		}
	}
	if !r.done() {
		r.fail("junk after the element section")
	}
	return b
}

// constExpr copies a constant expression, renumbering ref.func.
func (m *module) constExpr(r *reader, b []byte) []byte {
	for {
		start := r.pos
		switch op := r.byte(); op {
		case 0x0b:
			return append(b, op)
		case 0x41:
			r.skipLEB(5)
		case 0x23:
			m.global(r)
		case 0x42:
			r.skipLEB(10)
		case 0x43:
			r.bytes(4)
		case 0x44:
			r.bytes(8)
		case 0xd0:
			r.skipLEB(5)
		case 0xd2:
			b = append(b, op)
			b = appendU32(b, m.fn(r.u32()))
			continue
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended-const arithmetic
		case 0xfd:
			if sub := r.u32(); sub != 12 {
				r.fail("SIMD instruction %d in a constant expression", sub)
			}
			r.bytes(16)
		default:
			r.pos = start
			r.fail("instruction 0x%02x in a constant expression", op)
		}
		b = append(b, r.b[start:r.pos]...)
	}
}

// custom keeps a custom section, renumbers the functions of the name
// section, and drops sections whose code offsets the checks made stale.
func (m *module) custom(out []byte, s *section) []byte {
	r := s.reader()
	name := string(r.name())
	switch {
	case strings.HasPrefix(name, ".debug_"), name == "sourceMappingURL", name == "external_debug_info",
		strings.HasPrefix(name, "metadata.code."):
		return out
	case name == "name":
		body, ok := m.nameSection(r)
		if !ok {
			return out // malformed names are better lost than wrong
		}
		return m.section(out, secCustom, body)
	}
	return m.section(out, secCustom, s.body)
}

// nameSection renumbers the function names, local names and label names.
// It reports false when it cannot parse the section.
func (m *module) nameSection(r *reader) (body []byte, ok bool) {
	defer func() {
		if rec := recover(); rec != nil {
			if _, isFailure := rec.(failure); !isFailure {
				panic(rec)
			}
			body, ok = nil, false
		}
	}()
	b := appendName(nil, "name")
	for !r.done() {
		id := r.byte()
		sub := &reader{b: r.bytes(r.u32())}
		var nb []byte
		switch id {
		case 1: // function names: vec(funcidx name)
			n := sub.u32()
			nb = appendU32(nb, n)
			for ; n > 0; n-- {
				nb = appendU32(nb, m.fn(sub.u32()))
				nb = appendName(nb, string(sub.name()))
			}
		case 2, 3: // local and label names: vec(funcidx vec(idx name))
			n := sub.u32()
			nb = appendU32(nb, n)
			for ; n > 0; n-- {
				nb = appendU32(nb, m.fn(sub.u32()))
				start := sub.pos
				for k := sub.u32(); k > 0; k-- {
					sub.u32()
					sub.name()
				}
				nb = append(nb, sub.b[start:sub.pos]...)
			}
		default:
			nb = sub.b
			sub.pos = len(sub.b)
		}
		if !sub.done() {
			return nil, false
		}
		b = append(b, id)
		b = appendU32(b, uint32(len(nb)))
		b = append(b, nb...)
	}
	return b, true
}
