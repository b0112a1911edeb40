package codec

import (
	"encoding/binary"

	"github.com/zaf/g711"
)

// alawDecodeTable holds each A-law code's sample as the uint16 bit pattern
// stored little-endian, as decodeTable does for μ-law.
var alawDecodeTable = func() (t [256]uint16) {
	for c := range t {
		t[c] = uint16(g711.DecodeAlawFrame(uint8(c)))
	}
	return t
}()

// alawEncodeTable is indexed by the top 12 bits of the sample: G.711 A-law
// looks at no more, so a 4 KiB table is exact. It is built from
// g711.EncodeAlawFrame so the two can never disagree.
var alawEncodeTable = func() (t [1 << 12]uint8) {
	for i := range t {
		t[i] = g711.EncodeAlawFrame(int16(uint16(i) << 4))
	}
	return t
}()

// DecodeAlaw decodes A-law codes from alaw into dst as PCM16LE, two bytes
// per code, and returns the number of bytes written; as DecodeUlaw, it
// decodes what fits and does not allocate.
func DecodeAlaw(dst, alaw []byte) int {
	n := min(len(alaw), len(dst)/2)
	for i, c := range alaw[:n] {
		binary.LittleEndian.PutUint16(dst[2*i:], alawDecodeTable[c])
	}
	return 2 * n
}

// EncodeAlaw encodes the PCM16LE samples in pcm into dst as A-law, one byte
// per sample, and returns the number of bytes written; as EncodeUlaw, it
// encodes what fits and does not allocate.
func EncodeAlaw(dst, pcm []byte) int {
	n := min(len(pcm)/2, len(dst))
	for i := range dst[:n] {
		dst[i] = alawEncodeTable[binary.LittleEndian.Uint16(pcm[2*i:])>>4]
	}
	return n
}
