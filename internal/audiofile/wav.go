package audiofile

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/voxhost/voxhost/abi"
)

// WAV format tags, from the fmt chunk's first field.
const (
	tagPCM        = 0x0001
	tagFloat      = 0x0003
	tagAlaw       = 0x0006
	tagMulaw      = 0x0007
	tagExtensible = 0xFFFE
)

// guidTail is the part of a WAVE_FORMAT_EXTENSIBLE SubFormat GUID after its
// first two bytes. The standard subformats differ only in those two bytes,
// which hold the plain format tag, so with this tail the GUID can be read
// back as a tag.
const guidTail = "\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71"

// streamingSize is the data size some writers leave when they cannot seek
// back to fill it in, as when writing to a pipe. It means "to the end of the
// file", so it is not reported as truncation.
const streamingSize = 0xFFFFFFFF

// wavHeaderSize is the length of the canonical header writeWAV emits.
const wavHeaderSize = WAVHeaderSize

// WAVHeaderSize is the length of the canonical header WAVHeader makes.
const WAVHeaderSize = 44

// WAVHeader is the canonical 44-byte header of a mono PCM16 WAV file at
// rate Hz whose data chunk holds dataBytes: what writeWAV writes first, and
// what a recorder rewrites as its files grow. The caller checks that rate
// and dataBytes fit a WAV file.
func WAVHeader(rate int, dataBytes uint32) [WAVHeaderSize]byte {
	var h [WAVHeaderSize]byte
	le := binary.LittleEndian
	copy(h[0:], "RIFF")
	le.PutUint32(h[4:], WAVHeaderSize-8+dataBytes)
	copy(h[8:], "WAVEfmt ")
	le.PutUint32(h[16:], 16)
	le.PutUint16(h[20:], tagPCM)
	le.PutUint16(h[22:], 1)
	le.PutUint32(h[24:], uint32(rate))
	le.PutUint32(h[28:], uint32(rate*2))
	le.PutUint16(h[32:], 2)
	le.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	le.PutUint32(h[40:], dataBytes)
	return h
}

// parseWAV returns the samples of the data chunk without copying them. It
// walks the chunk list rather than assuming the canonical layout, because
// editors routinely put LIST, fact or bext chunks before the data.
func parseWAV(path string, data []byte) (pcm []byte, rate int, err error) {
	switch {
	case len(data) == 0:
		return nil, 0, fmt.Errorf("%s: empty file, not a WAV file", path)
	case len(data) < 4 || string(data[:4]) != "RIFF":
		return nil, 0, fmt.Errorf("%s: not a WAV file (starts with %q, not \"RIFF\"); %s",
			path, data[:min(len(data), 4)], conversionHint(path, abi.TelephonyRate))
	case len(data) < 12:
		return nil, 0, fmt.Errorf("%s: truncated WAV file: only %d bytes", path, len(data))
	case string(data[8:12]) != "WAVE":
		return nil, 0, fmt.Errorf("%s: RIFF file of type %q, not a WAV file; %s",
			path, data[8:12], conversionHint(path, abi.TelephonyRate))
	}

	haveFmt := false
	for off := 12; ; {
		if len(data)-off < 8 {
			missing := "fmt"
			if haveFmt {
				missing = "data"
			}
			return nil, 0, fmt.Errorf("%s: truncated WAV file: it ends without a %s chunk", path, missing)
		}
		id := string(data[off : off+4])
		size := uint64(binary.LittleEndian.Uint32(data[off+4:]))
		body := off + 8
		left := uint64(len(data) - body)
		if id == "data" && size == streamingSize {
			size = left
		}
		if size > left {
			return nil, 0, fmt.Errorf("%s: truncated WAV file: %q chunk declares %d bytes but only %d are present",
				path, id, size, left)
		}
		switch id {
		case "fmt ":
			if rate, err = parseFmt(path, data[body:body+int(size)]); err != nil {
				return nil, 0, err
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return nil, 0, fmt.Errorf("%s: malformed WAV file: data chunk comes before the fmt chunk", path)
			}
			// A half sample at the end cannot be played; keep the whole
			// samples rather than reject a file players accept.
			end := body + int(size&^1)
			return data[body:end:end], rate, nil
		}
		// Chunks are padded to an even length and size does not count the
		// pad. A pad missing at the very end is caught at the loop top.
		off = body + int(size) + int(size&1)
	}
}

// parseFmt reads a fmt chunk and returns its sample rate, rejecting anything
// but mono PCM16 with a message that names every way the file differs.
func parseFmt(path string, b []byte) (rate int, err error) {
	if len(b) < 16 {
		return 0, fmt.Errorf("%s: malformed WAV file: fmt chunk is %d bytes, want at least 16", path, len(b))
	}
	tag := binary.LittleEndian.Uint16(b[0:])
	channels := binary.LittleEndian.Uint16(b[2:])
	rate = int(binary.LittleEndian.Uint32(b[4:]))
	bits := binary.LittleEndian.Uint16(b[14:])
	if tag == tagExtensible && len(b) >= 40 && string(b[26:40]) == guidTail {
		tag = binary.LittleEndian.Uint16(b[24:])
	}

	var problems []string
	if channels != 1 {
		problems = append(problems, fmt.Sprintf("%d-channel", channels))
	}
	switch {
	case tag == tagPCM && bits == 16:
	case tag == tagPCM:
		problems = append(problems, fmt.Sprintf("%d-bit PCM", bits))
	case tag == tagFloat:
		problems = append(problems, fmt.Sprintf("%d-bit float", bits))
	case tag == tagAlaw:
		problems = append(problems, "A-law")
	case tag == tagMulaw:
		problems = append(problems, "μ-law")
	default:
		problems = append(problems, fmt.Sprintf("compressed (WAV format tag 0x%04X)", tag))
	}
	if len(problems) == 0 {
		return rate, nil
	}
	// Any rate is fine here (RequireRate judges it), but a file rejected
	// anyway is described in full so the person sees everything sox changes.
	if rate != abi.TelephonyRate {
		problems = slices.Insert(problems, 0, fmt.Sprintf("%d Hz", rate))
	}
	return 0, fmt.Errorf("%s: %s audio; %s",
		path, strings.Join(problems, " "), conversionHint(path, abi.TelephonyRate))
}

// writeWAV writes the plain 44-byte-header layout because it is the one every
// tool reads, and voxhost has nothing to put in extra chunks.
func writeWAV(path string, pcm []byte, rate int) error {
	if rate <= 0 || uint64(rate)*2 > math.MaxUint32 {
		return fmt.Errorf("%s: cannot write a WAV file with sample rate %d Hz", path, rate)
	}
	if uint64(len(pcm)) > math.MaxUint32-(wavHeaderSize-8) {
		return fmt.Errorf("%s: %d bytes of audio is more than a WAV file can hold", path, len(pcm))
	}
	h := WAVHeader(rate, uint32(len(pcm)))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(h[:])
	if err == nil {
		_, err = f.Write(pcm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
