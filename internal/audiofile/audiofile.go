package audiofile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/codec"
)

// Format is how an audio file is stored on disk.
type Format int

// The zero Format is deliberately not a format, so a forgotten FormatOf
// check cannot silently pick one.
const (
	// FormatWAV is a RIFF WAVE file with mono PCM16 samples.
	FormatWAV Format = iota + 1
	// FormatUlaw is raw G.711 μ-law, one byte per sample. It has no header,
	// so its rate is always abi.TelephonyRate.
	FormatUlaw
)

// extensions is ordered so error messages list the usual spelling first.
var extensions = []struct {
	ext    string
	format Format
}{
	{".wav", FormatWAV},
	{".ul", FormatUlaw},
	{".ulaw", FormatUlaw},
	{".mulaw", FormatUlaw},
}

// FormatOf returns the format of path, judged by its extension in any case.
// An unknown or missing extension is an error that lists the supported ones.
func FormatOf(path string) (Format, error) {
	ext := filepath.Ext(path)
	for _, e := range extensions {
		if strings.EqualFold(ext, e.ext) {
			return e.format, nil
		}
	}
	supported := make([]string, len(extensions))
	for i, e := range extensions {
		supported[i] = e.ext
	}
	if ext == "" {
		return 0, fmt.Errorf("%s: no file extension to tell the audio format by (supported: %s)",
			path, strings.Join(supported, ", "))
	}
	return 0, fmt.Errorf("%s: unsupported audio file extension %q (supported: %s)",
		path, ext, strings.Join(supported, ", "))
}

// ReadPCM reads the audio file at path and returns its samples as PCM16LE
// together with their sample rate. WAV files must be mono PCM16 but may have
// any rate; use RequireRate where only one rate will do. μ-law files are
// decoded and always have rate abi.TelephonyRate.
func ReadPCM(path string) (pcm []byte, rate int, err error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, 0, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	if format == FormatUlaw {
		pcm = make([]byte, 2*len(data))
		codec.DecodeUlaw(pcm, data)
		return pcm, abi.TelephonyRate, nil
	}
	return parseWAV(path, data)
}

// RequireRate returns an error unless rate is want. The error names the file
// and gives the sox command that resamples it, so callers can show it as is.
func RequireRate(path string, rate, want int) error {
	if rate == want {
		return nil
	}
	return fmt.Errorf("%s: %d Hz audio; %s", path, rate, conversionHint(path, want))
}

// WritePCM writes PCM16LE samples to path in the format its extension names:
// a WAV file with a canonical 44-byte header, or raw μ-law. Raw μ-law has no
// header to record a rate in, so it is refused unless rate is
// abi.TelephonyRate.
func WritePCM(path string, pcm []byte, rate int) error {
	format, err := FormatOf(path)
	if err != nil {
		return err
	}
	if len(pcm)%2 != 0 {
		return fmt.Errorf("%s: %d bytes is not a whole number of PCM16 samples", path, len(pcm))
	}
	if format == FormatUlaw {
		if rate != abi.TelephonyRate {
			return fmt.Errorf("%s: audio is %d Hz, but raw μ-law files are always %d Hz; write a .wav file instead",
				path, rate, abi.TelephonyRate)
		}
		ulaw := make([]byte, len(pcm)/2)
		codec.EncodeUlaw(ulaw, pcm)
		return os.WriteFile(path, ulaw, 0o666)
	}
	return writeWAV(path, pcm, rate)
}

// conversionHint is the remedy appended to every "wrong kind of audio" error.
// It always asks for every property voxhost run needs, so one sox run fixes
// the file even when the error only mentions one problem.
func conversionHint(path string, rate int) string {
	return fmt.Sprintf("voxhost run needs %d Hz mono PCM16 (convert with: sox %s -r %d -c 1 -b 16 out.wav)",
		rate, shellQuote(path), rate)
}

// shellQuote quotes path for a POSIX shell when it needs it, so the suggested
// command still works when pasted for a file named like "My Recording.wav".
func shellQuote(path string) string {
	plain := path != "" && strings.IndexFunc(path, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("-_./+,:@%", r))
	}) < 0
	if plain {
		return path
	}
	return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
}
