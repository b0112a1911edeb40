package preempt

// The decoder's tables: what follows each opcode, and the readers of the
// immediates that walk passes over.

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
