package transport

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// plainWord must say of eight bytes what plainInString says of each: every
// byte value at every position among plain ones, and random words, whose
// bytes mix plain and not.
func TestPlainWordMatchesTable(t *testing.T) {
	check := func(w [8]byte) {
		want := true
		for _, c := range w {
			want = want && plainInString[c]
		}
		if got := plainWord(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("plainWord(%q) = %v, want %v", w, got, want)
		}
	}
	for c := range 256 {
		for at := range 8 {
			for _, fill := range []byte{'A', 0x7f, 0x80, 0xff, ' ', '!', '#', '[', ']'} {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[at] = byte(c)
				check(w)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	special := []byte{0, 0x1f, 0x20, '"', '\\', 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff}
	for range 200000 {
		var w [8]byte
		for i := range w {
			if r.IntN(4) == 0 {
				w[i] = special[r.IntN(len(special))]
			} else {
				w[i] = byte(r.IntN(256))
			}
		}
		check(w)
	}
}
