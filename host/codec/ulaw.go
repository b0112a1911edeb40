package codec

import (
	"encoding/binary"

	"github.com/zaf/g711"
)

// decodeTable holds each code's sample already as the uint16 bit pattern that
// is stored little-endian, so decoding is one load and one store per sample.
var decodeTable = func() (t [256]uint16) {
	for c := range t {
		t[c] = uint16(g711.DecodeUlawFrame(uint8(c)))
	}
	return t
}()

// encodeTable is indexed by the top 14 bits of the sample. G.711 μ-law only
// looks at 14 bits, so this is exact while being a quarter of a full 64 KiB
// table: it fits in L1 cache and costs little to build at start-up. It is
// built from g711.EncodeUlawFrame so the two can never disagree.
var encodeTable = func() (t [1 << 14]uint8) {
	for i := range t {
		t[i] = g711.EncodeUlawFrame(int16(uint16(i) << 2))
	}
	return t
}()

// DecodeUlaw decodes μ-law codes from ulaw into dst as PCM16LE, two bytes per
// code, and returns the number of bytes written. If dst holds fewer than
// 2*len(ulaw) bytes, only the codes that fit are decoded. It does not allocate.
func DecodeUlaw(dst, ulaw []byte) int {
	n := min(len(ulaw), len(dst)/2)
	for i, c := range ulaw[:n] {
		binary.LittleEndian.PutUint16(dst[2*i:], decodeTable[c])
	}
	return 2 * n
}

// EncodeUlaw encodes the PCM16LE samples in pcm into dst as μ-law, one byte
// per sample, and returns the number of bytes written. A trailing odd byte in
// pcm is ignored; if dst is shorter than len(pcm)/2, only the samples that fit
// are encoded. It does not allocate.
func EncodeUlaw(dst, pcm []byte) int {
	n := min(len(pcm)/2, len(dst))
	for i := range dst[:n] {
		dst[i] = encodeTable[binary.LittleEndian.Uint16(pcm[2*i:])>>2]
	}
	return n
}
