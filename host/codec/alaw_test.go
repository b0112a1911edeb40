package codec

import (
	"encoding/binary"
	"testing"
)

// refAlawDecode is the G.711 A-law expansion written out from the standard
// (the even bits inverted, then sign, three exponent and four mantissa
// bits; a set sign bit is a positive sample) rather than taken from the
// library.
func refAlawDecode(code byte) int16 {
	a := code ^ 0x55
	exponent := int(a>>4) & 7
	mantissa := int(a) & 0x0F
	var magnitude int
	if exponent == 0 {
		magnitude = mantissa<<4 + 8
	} else {
		magnitude = (mantissa<<4 + 0x108) << (exponent - 1)
	}
	if a&0x80 != 0 {
		return int16(magnitude)
	}
	return int16(-magnitude)
}

// refAlawEncode follows alaw_compress from the ITU-T G.191 software tools:
// the one's complement of negative samples, 12 bits of magnitude, segments
// found by shifting.
func refAlawEncode(s int16) byte {
	var ix int
	if s < 0 {
		ix = int(^s) >> 4
	} else {
		ix = int(s) >> 4
	}
	if ix > 15 {
		exp := 1
		for ix > 16+15 {
			ix >>= 1
			exp++
		}
		ix -= 16
		ix += exp << 4
	}
	if s >= 0 {
		ix |= 0x80
	}
	return byte(ix) ^ 0x55
}

func TestAlawDecodeMatchesTheStandardForEveryCode(t *testing.T) {
	dst := make([]byte, 2)
	for c := 0; c < 256; c++ {
		DecodeAlaw(dst, []byte{byte(c)})
		if got, want := int16(binary.LittleEndian.Uint16(dst)), refAlawDecode(byte(c)); got != want {
			t.Fatalf("A-law 0x%02X decodes to %d, the standard says %d", c, got, want)
		}
	}
}

func TestAlawEncodeMatchesTheStandardForEverySample(t *testing.T) {
	pcm := make([]byte, 2)
	dst := make([]byte, 1)
	for s := -32768; s < 32768; s++ {
		binary.LittleEndian.PutUint16(pcm, uint16(int16(s)))
		EncodeAlaw(dst, pcm)
		if want := refAlawEncode(int16(s)); dst[0] != want {
			t.Fatalf("sample %d encodes to 0x%02X, the standard says 0x%02X", s, dst[0], want)
		}
	}
}

func TestAlawRoundTripsEveryCode(t *testing.T) {
	pcm := make([]byte, 2)
	dst := make([]byte, 1)
	for c := 0; c < 256; c++ {
		DecodeAlaw(pcm, []byte{byte(c)})
		EncodeAlaw(dst, pcm)
		if dst[0] != byte(c) {
			t.Fatalf("A-law 0x%02X decodes and encodes back to 0x%02X", c, dst[0])
		}
	}
}

func TestAlawAllocatesNothing(t *testing.T) {
	alaw, pcm := make([]byte, 160), make([]byte, 320)
	if n := testing.AllocsPerRun(100, func() {
		DecodeAlaw(pcm, alaw)
		EncodeAlaw(alaw, pcm)
	}); n != 0 {
		t.Fatalf("%v allocations per frame", n)
	}
}
