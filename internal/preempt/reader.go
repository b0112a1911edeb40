package preempt

import "fmt"

// failure carries a parse error up to Instrument, which recovers it. Only
// this type is recovered: any other panic is a bug and must surface.
type failure struct{ err error }

// reader decodes one stretch of the module. base is the module offset of
// b[0], so errors point at the byte a person would look at in a hex dump.
type reader struct {
	b    []byte
	pos  int
	base int
}

func (r *reader) fail(format string, args ...any) {
	panic(failure{fmt.Errorf("byte %d: %s", r.base+r.pos, fmt.Sprintf(format, args...))})
}

// failWith stops the rewrite with err, which errors.Is can find.
func (r *reader) failWith(err error) {
	panic(failure{fmt.Errorf("byte %d: %w", r.base+r.pos, err)})
}

func (r *reader) done() bool { return r.pos >= len(r.b) }

func (r *reader) byte() byte {
	if r.pos >= len(r.b) {
		r.fail("unexpected end")
	}
	b := r.b[r.pos]
	r.pos++
	return b
}

func (r *reader) peek() byte {
	if r.pos >= len(r.b) {
		r.fail("unexpected end")
	}
	return r.b[r.pos]
}

// bytes returns the next n bytes, not a copy.
func (r *reader) bytes(n uint32) []byte {
	if uint64(n) > uint64(len(r.b)-r.pos) {
		r.fail("%d bytes announced, %d left", n, len(r.b)-r.pos)
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b
}

// u32 reads an unsigned LEB128 number of at most 32 bits.
func (r *reader) u32() uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		b := r.byte()
		if i == 4 && b&0xf0 != 0 {
			r.fail("integer overflows 32 bits")
		}
		v |= uint32(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			return v
		}
	}
	r.fail("integer overflows 32 bits")
	return 0
}

// s33 reads a signed LEB128 number of at most 33 bits (a block type).
func (r *reader) s33() int64 {
	var v int64
	shift := 0
	for i := 0; i < 5; i++ {
		b := r.byte()
		v |= int64(b&0x7f) << shift
		shift += 7
		if b&0x80 == 0 {
			if b&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
	r.fail("integer overflows 33 bits")
	return 0
}

// skipLEB passes over a LEB128 number of at most max bytes.
func (r *reader) skipLEB(max int) {
	for i := 0; i < max; i++ {
		if r.byte()&0x80 == 0 {
			return
		}
	}
	r.fail("integer longer than %d bytes", max)
}

// name passes over a name (a length-prefixed byte string) and returns it.
func (r *reader) name() []byte { return r.bytes(r.u32()) }

// valtype passes over a value type.
func (r *reader) valtype() {
	switch b := r.byte(); b {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
	case 0x63, 0x64: // (ref null? ht) of the function-references proposal
		r.skipLEB(5)
	default:
		r.fail("unknown value type 0x%02x", b)
	}
}

// limits passes over the limits of a memory or table and returns the
// minimum.
func (r *reader) limits() uint64 {
	flags := r.byte()
	if flags > 7 {
		r.fail("unknown limits flags 0x%02x", flags)
	}
	min := r.u64()
	if flags&1 != 0 {
		r.u64()
	}
	return min
}

// u64 reads an unsigned LEB128 number of at most 64 bits.
func (r *reader) u64() uint64 {
	var v uint64
	for i := 0; i < 10; i++ {
		b := r.byte()
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			return v
		}
	}
	r.fail("integer overflows 64 bits")
	return 0
}

// memarg passes over the alignment, memory index and offset of a load or
// store.
func (r *reader) memarg() {
	if r.u32()&0x40 != 0 { // multi-memory: an explicit memory index follows
		r.u32()
	}
	r.skipLEB(10)
}

func appendU32(b []byte, v uint32) []byte { return appendU64(b, uint64(v)) }

func appendU64(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS32(b []byte, v int32) []byte { return appendS64(b, int64(v)) }

func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	return append(appendU32(b, uint32(len(s))), s...)
}

// putWeight writes w, at most max, as the five-byte signed LEB128 an
// i32.const check reserved for it (padding with continuation bits is valid
// LEB128). A check that weighed more than a refill would find the fuel
// negative again right after the tick refilled it, and its loop would never
// get past its head.
func putWeight(b []byte, w, max int) {
	w = min(w, max)
	b[0] = byte(w)&0x7f | 0x80
	b[1] = byte(w>>7)&0x7f | 0x80
	b[2] = byte(w>>14)&0x7f | 0x80
	b[3] = byte(w>>21)&0x7f | 0x80
	b[4] = byte(w>>28) & 0x07
}
