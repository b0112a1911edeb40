package codec

import (
	"fmt"
	"strings"
)

// Encoding is how a leg carries audio on the wire.
type Encoding int

const (
	// Mulaw is G.711 μ-law: one byte per sample.
	Mulaw Encoding = iota
	// L16 is 16-bit linear PCM, little-endian (PCM16LE), the ABI's own
	// sample format: two bytes per sample, so it crosses as a copy.
	L16
	// Alaw is G.711 A-law: one byte per sample.
	Alaw
)

// String names the encoding as configs spell it.
func (e Encoding) String() string {
	switch e {
	case L16:
		return "l16"
	case Alaw:
		return "alaw"
	}
	return "mulaw"
}

// Format is a leg's audio: its encoding and sample rate, mono.
type Format struct {
	Encoding Encoding
	// Rate is the sample rate in Hz.
	Rate int
}

// Telephony is G.711 μ-law at 8 kHz, what every carrier carries.
var Telephony = Format{Encoding: Mulaw, Rate: 8000}

// L16Rates are the rates a leg may carry L16 at.
var L16Rates = []int{8000, 16000, 24000}

// ParseFormat reads a codec name and a rate as configs spell them: "mulaw"
// (also "ulaw", "pcmu", "g711_ulaw") and "alaw" (also "pcma",
// "g711_alaw") only at 8000 Hz, "l16" (also "pcm16", "slin") at 8000,
// 16000 or 24000 Hz. A rate of 0 means the codec's default: 8000 for
// G.711, 16000 for L16.
func ParseFormat(codec string, rate int) (Format, error) {
	var f Format
	switch strings.ToLower(codec) {
	case "", "mulaw", "ulaw", "pcmu", "g711_ulaw":
		f = Format{Encoding: Mulaw, Rate: rate}
		if f.Rate == 0 {
			f.Rate = 8000
		}
	case "alaw", "pcma", "g711_alaw":
		f = Format{Encoding: Alaw, Rate: rate}
		if f.Rate == 0 {
			f.Rate = 8000
		}
	case "l16", "pcm16", "slin":
		f = Format{Encoding: L16, Rate: rate}
		if f.Rate == 0 {
			f.Rate = 16000
		}
	default:
		return Format{}, fmt.Errorf("unknown codec %q (want mulaw, alaw or l16)", codec)
	}
	return f, f.Check()
}

// Check says why the format cannot be carried, or nil.
func (f Format) Check() error {
	switch f.Encoding {
	case Mulaw, Alaw:
		if f.Rate != 8000 {
			return fmt.Errorf("%s is carried at 8000 Hz only, not %d", f.Encoding.human(), f.Rate)
		}
	case L16:
		for _, r := range L16Rates {
			if f.Rate == r {
				return nil
			}
		}
		return fmt.Errorf("L16 is carried at 8000, 16000 or 24000 Hz, not %d", f.Rate)
	default:
		return fmt.Errorf("unknown encoding %d", int(f.Encoding))
	}
	return nil
}

// String describes the format for people, as in "8 kHz μ-law".
func (f Format) String() string {
	return fmt.Sprintf("%g kHz %s", float64(f.Rate)/1000, f.Encoding.human())
}

// human names the encoding in messages.
func (e Encoding) human() string {
	switch e {
	case L16:
		return "L16"
	case Alaw:
		return "A-law"
	}
	return "μ-law"
}

// SampleBytes is the size of one encoded sample.
func (f Format) SampleBytes() int {
	if f.Encoding == L16 {
		return 2
	}
	return 1
}

// BytesPerMs is the size of one millisecond of encoded audio.
func (f Format) BytesPerMs() int { return f.Rate / 1000 * f.SampleBytes() }

// Silence is the byte that encodes a silent sample in the format (both
// bytes of one, for L16): what a frame is padded with.
func (f Format) Silence() byte {
	switch f.Encoding {
	case Mulaw:
		return 0xFF
	case Alaw:
		return 0xD5
	}
	return 0
}

// Decode writes the encoded audio src into dst as PCM16LE and returns the
// bytes written; what does not fit in dst is left out. It does not
// allocate.
func (f Format) Decode(dst, src []byte) int {
	switch f.Encoding {
	case L16:
		return copy(dst, src[:len(src)&^1])
	case Alaw:
		return DecodeAlaw(dst, src)
	}
	return DecodeUlaw(dst, src)
}

// Encode writes the PCM16LE samples pcm into dst in the format and returns
// the bytes written; what does not fit in dst is left out. It does not
// allocate.
func (f Format) Encode(dst, pcm []byte) int {
	switch f.Encoding {
	case L16:
		return copy(dst, pcm[:len(pcm)&^1])
	case Alaw:
		return EncodeAlaw(dst, pcm)
	}
	return EncodeUlaw(dst, pcm)
}

// Source fills a pipeline's first buffer by decoding a frame in a format.
// A leg keeps one and points Frame at each frame it receives, so handing
// it to the pipeline allocates nothing.
type Source struct {
	// Format is the encoding of Frame.
	Format Format
	// Frame is the encoded frame.
	Frame []byte
}

// Fill decodes the frame into dst and returns the number of bytes written.
func (s *Source) Fill(dst []byte) int { return s.Format.Decode(dst, s.Frame) }
