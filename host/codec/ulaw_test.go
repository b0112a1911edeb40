package codec

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/zaf/g711"
)

// refDecode is the G.711 μ-law expansion written out from the standard rather
// than taken from the library, so a wrong table in either would show up.
func refDecode(code byte) int16 {
	u := ^code
	exponent := int(u>>4) & 7
	mantissa := int(u) & 0x0F
	magnitude := ((mantissa<<3)+0x84)<<exponent - 0x84
	if u&0x80 != 0 {
		return int16(-magnitude)
	}
	return int16(magnitude)
}

// refEncode follows ulaw_compress from the ITU-T G.191 software tools,
// including its use of ^s rather than -s for negative samples; that choice is
// why -1 encodes as 0x7F rather than 0xFF.
func refEncode(s int16) byte {
	var abs int
	if s < 0 {
		abs = int(^s>>2) + 33
	} else {
		abs = int(s>>2) + 33
	}
	abs = min(abs, 0x1FFF)
	seg := 1
	for i := abs >> 6; i != 0; i >>= 1 {
		seg++
	}
	code := byte((8-seg)<<4 | (0x0F - (abs>>seg)&0x0F))
	if s >= 0 {
		code |= 0x80
	}
	return code
}

func decodeOne(t *testing.T, code byte) int16 {
	t.Helper()
	dst := make([]byte, 2)
	if n := DecodeUlaw(dst, []byte{code}); n != 2 {
		t.Fatalf("DecodeUlaw(0x%02X) wrote %d bytes, want 2", code, n)
	}
	return int16(binary.LittleEndian.Uint16(dst))
}

func encodeOne(t *testing.T, s int16) byte {
	t.Helper()
	var pcm [2]byte
	binary.LittleEndian.PutUint16(pcm[:], uint16(s))
	dst := make([]byte, 1)
	if n := EncodeUlaw(dst, pcm[:]); n != 1 {
		t.Fatalf("EncodeUlaw(%d) wrote %d bytes, want 1", s, n)
	}
	return dst[0]
}

func TestDecodeUlawMatchesG711(t *testing.T) {
	ulaw := make([]byte, 256)
	for c := range ulaw {
		ulaw[c] = byte(c)
	}
	pcm := make([]byte, 512)
	if n := DecodeUlaw(pcm, ulaw); n != 512 {
		t.Fatalf("DecodeUlaw wrote %d bytes, want 512", n)
	}
	for c := range 256 {
		got := int16(binary.LittleEndian.Uint16(pcm[2*c:]))
		if want := refDecode(byte(c)); got != want {
			t.Errorf("code 0x%02X decodes to %d, want %d", c, got, want)
		}
	}
}

func TestDecodeUlawKnownValues(t *testing.T) {
	for _, tc := range []struct {
		code byte
		want int16
	}{
		{0xFF, 0},
		{0x7F, 0},
		{0x00, -32124},
		{0x80, 32124},
		{0xFE, 8},
		{0x7E, -8},
		{0xF0, 120},
		{0x8F, 16764},
	} {
		if got := decodeOne(t, tc.code); got != tc.want {
			t.Errorf("code 0x%02X decodes to %d, want %d", tc.code, got, tc.want)
		}
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for c := range 256 {
		want := byte(c)
		if want == 0x7F {
			// 0x7F is "negative zero"; zero has one canonical code.
			want = 0xFF
		}
		if got := encodeOne(t, decodeOne(t, byte(c))); got != want {
			t.Errorf("encode(decode(0x%02X)) = 0x%02X, want 0x%02X", c, got, want)
		}
	}
}

func TestEncodeUlawKnownValues(t *testing.T) {
	for _, tc := range []struct {
		pcm  int16
		want byte
	}{
		{0, 0xFF},
		{-1, 0x7F},
		{32767, 0x80},
		{-32768, 0x00},
		{32124, 0x80},
		{-32124, 0x00},
		{8, 0xFE},
		{-9, 0x7E},
	} {
		if got := encodeOne(t, tc.pcm); got != tc.want {
			t.Errorf("%d encodes to 0x%02X, want 0x%02X", tc.pcm, got, tc.want)
		}
	}
}

// TestEncodeUlawEverySample checks all 65536 inputs, because the encoder's
// 14-bit table relies on G.711 ignoring the two low bits; a sample where that
// did not hold would only show up here.
func TestEncodeUlawEverySample(t *testing.T) {
	pcm := make([]byte, 2<<16)
	for i := range 1 << 16 {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(i))
	}
	ulaw := make([]byte, 1<<16)
	if n := EncodeUlaw(ulaw, pcm); n != 1<<16 {
		t.Fatalf("EncodeUlaw wrote %d bytes, want %d", n, 1<<16)
	}
	for i, got := range ulaw {
		s := int16(uint16(i))
		if want := refEncode(s); got != want {
			t.Fatalf("%d encodes to 0x%02X, want 0x%02X (G.191)", s, got, want)
		}
		if want := g711.EncodeUlawFrame(s); got != want {
			t.Fatalf("%d encodes to 0x%02X, want 0x%02X (g711)", s, got, want)
		}
	}
}

func TestDecodeUlawShortDst(t *testing.T) {
	ulaw := []byte{0x80, 0x00, 0xFF, 0x80}
	dst := bytes.Repeat([]byte{0xAA}, 5)
	if n := DecodeUlaw(dst, ulaw); n != 4 {
		t.Fatalf("DecodeUlaw into 5 bytes wrote %d, want 4", n)
	}
	want := []byte{0x7C, 0x7D, 0x84, 0x82, 0xAA}
	if !bytes.Equal(dst, want) {
		t.Errorf("dst = % X, want % X", dst, want)
	}
	if n := DecodeUlaw(nil, ulaw); n != 0 {
		t.Errorf("DecodeUlaw into nil wrote %d, want 0", n)
	}
	if n := DecodeUlaw(dst, nil); n != 0 {
		t.Errorf("DecodeUlaw of nothing wrote %d, want 0", n)
	}
}

func TestEncodeUlawShortDst(t *testing.T) {
	pcm := []byte{0, 0, 0xFF, 0x7F, 0x00, 0x80}
	dst := []byte{0xAA, 0xAA}
	if n := EncodeUlaw(dst, pcm); n != 2 {
		t.Fatalf("EncodeUlaw into 2 bytes wrote %d, want 2", n)
	}
	if want := []byte{0xFF, 0x80}; !bytes.Equal(dst, want) {
		t.Errorf("dst = % X, want % X", dst, want)
	}
	if n := EncodeUlaw(nil, pcm); n != 0 {
		t.Errorf("EncodeUlaw into nil wrote %d, want 0", n)
	}
}

func TestEncodeUlawOddPCM(t *testing.T) {
	dst := []byte{0xAA, 0xAA, 0xAA}
	if n := EncodeUlaw(dst, []byte{0, 0, 0xFF, 0x7F, 0x12}); n != 2 {
		t.Fatalf("EncodeUlaw of 5 bytes wrote %d, want 2", n)
	}
	if want := []byte{0xFF, 0x80, 0xAA}; !bytes.Equal(dst, want) {
		t.Errorf("dst = % X, want % X", dst, want)
	}
}

func TestZeroAllocs(t *testing.T) {
	pcm := frame160()
	ulaw := make([]byte, 160)
	out := make([]byte, 320)
	if a := testing.AllocsPerRun(100, func() { EncodeUlaw(ulaw, pcm) }); a != 0 {
		t.Errorf("EncodeUlaw allocates %v times per call, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { DecodeUlaw(out, ulaw) }); a != 0 {
		t.Errorf("DecodeUlaw allocates %v times per call, want 0", a)
	}
}

// frame160 is one 20 ms frame at 8000 Hz: a 440 Hz tone, so the benchmarks
// touch the spread of table entries real speech would rather than one entry.
func frame160() []byte {
	pcm := make([]byte, 320)
	for i := range 160 {
		s := int16(12000 * math.Sin(2*math.Pi*440*float64(i)/8000))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(s))
	}
	return pcm
}

func BenchmarkDecodeUlaw160(b *testing.B) {
	ulaw := make([]byte, 160)
	EncodeUlaw(ulaw, frame160())
	dst := make([]byte, 320)
	b.SetBytes(int64(len(ulaw)))
	for b.Loop() {
		DecodeUlaw(dst, ulaw)
	}
}

func BenchmarkEncodeUlaw160(b *testing.B) {
	pcm := frame160()
	dst := make([]byte, 160)
	b.SetBytes(int64(len(pcm)))
	for b.Loop() {
		EncodeUlaw(dst, pcm)
	}
}
