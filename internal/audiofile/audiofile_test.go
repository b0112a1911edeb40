package audiofile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
)

// tone is n samples of a 440 Hz tone at 8000 Hz as PCM16LE, loud enough to
// use most of μ-law's segments.
func tone(n int) []byte {
	pcm := make([]byte, 2*n)
	for i := range n {
		s := int16(20000 * math.Sin(2*math.Pi*440*float64(i)/8000))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(s))
	}
	return pcm
}

type chunk struct {
	id   string
	body []byte
}

// riff assembles a WAV file chunk by chunk, so tests can build layouts that
// WritePCM never produces.
func riff(chunks ...chunk) []byte {
	var b bytes.Buffer
	for _, c := range chunks {
		b.WriteString(c.id)
		b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(c.body))))
		b.Write(c.body)
		if len(c.body)%2 == 1 {
			b.WriteByte(0)
		}
	}
	head := []byte("RIFF\x00\x00\x00\x00WAVE")
	binary.LittleEndian.PutUint32(head[4:], uint32(4+b.Len()))
	return append(head, b.Bytes()...)
}

func fmtChunk(tag, channels uint16, rate uint32, bits uint16) chunk {
	blockAlign := channels * bits / 8
	b := binary.LittleEndian.AppendUint16(nil, tag)
	b = binary.LittleEndian.AppendUint16(b, channels)
	b = binary.LittleEndian.AppendUint32(b, rate)
	b = binary.LittleEndian.AppendUint32(b, rate*uint32(blockAlign))
	b = binary.LittleEndian.AppendUint16(b, blockAlign)
	b = binary.LittleEndian.AppendUint16(b, bits)
	return chunk{"fmt ", b}
}

// extensibleChunk is a WAVE_FORMAT_EXTENSIBLE fmt chunk whose SubFormat GUID
// carries subTag, as written by tools for multichannel or high-depth audio.
func extensibleChunk(subTag, channels uint16, rate uint32, bits uint16) chunk {
	c := fmtChunk(0xFFFE, channels, rate, bits)
	b := binary.LittleEndian.AppendUint16(c.body, 22)
	b = binary.LittleEndian.AppendUint16(b, bits)
	b = binary.LittleEndian.AppendUint32(b, 0x4)
	b = binary.LittleEndian.AppendUint16(b, subTag)
	b = append(b, "\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71"...)
	return chunk{"fmt ", b}
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

func hint(path string) string {
	return fmt.Sprintf("voxhost run needs 8000 Hz mono PCM16 (convert with: sox %s -r 8000 -c 1 -b 16 out.wav)", path)
}

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]Format{
		"in.wav":         FormatWAV,
		"dir/IN.WAV":     FormatWAV,
		"call.ul":        FormatUlaw,
		"call.UL":        FormatUlaw,
		"call.ulaw":      FormatUlaw,
		"call.MuLaw":     FormatUlaw,
		"a.b/c.d.mulaw":  FormatUlaw,
		"archive.wav.ul": FormatUlaw,
	} {
		got, err := FormatOf(path)
		if err != nil || got != want {
			t.Errorf("FormatOf(%q) = %v, %v; want %v", path, got, err, want)
		}
	}
}

func TestFormatOfUnknown(t *testing.T) {
	_, err := FormatOf("song.mp3")
	want := `song.mp3: unsupported audio file extension ".mp3" (supported: .wav, .ul, .ulaw, .mulaw)`
	if err == nil || err.Error() != want {
		t.Errorf("FormatOf(song.mp3) error = %v, want %q", err, want)
	}
	_, err = FormatOf("recording")
	if err == nil || !strings.Contains(err.Error(), "no file extension") || !strings.Contains(err.Error(), ".wav, .ul") {
		t.Errorf("FormatOf(recording) error = %v, want one about the missing extension", err)
	}
	if _, _, err := ReadPCM(writeFile(t, "x.flac", []byte("fLaC"))); err == nil || !strings.Contains(err.Error(), `".flac"`) {
		t.Errorf("ReadPCM(x.flac) error = %v, want one naming .flac", err)
	}
	if err := WritePCM(filepath.Join(t.TempDir(), "x.mp3"), tone(10), 8000); err == nil || !strings.Contains(err.Error(), `".mp3"`) {
		t.Errorf("WritePCM(x.mp3) error = %v, want one naming .mp3", err)
	}
}

func TestWAVRoundTrip(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		path := filepath.Join(t.TempDir(), "out.wav")
		pcm := tone(800)
		if err := WritePCM(path, pcm, rate); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Every tool reads the canonical layout, so pin it down exactly.
		want := riff(fmtChunk(1, 1, uint32(rate), 16), chunk{"data", pcm})
		if !bytes.Equal(raw, want) {
			t.Errorf("%d Hz file header = % X, want % X", rate, raw[:44], want[:44])
		}
		got, gotRate, err := ReadPCM(path)
		if err != nil {
			t.Fatal(err)
		}
		if gotRate != rate || !bytes.Equal(got, pcm) {
			t.Errorf("read back %d bytes at %d Hz, want the %d bytes written at %d Hz", len(got), gotRate, len(pcm), rate)
		}
	}
}

func TestWAVEmptyData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "silence.wav")
	if err := WritePCM(path, nil, 8000); err != nil {
		t.Fatal(err)
	}
	pcm, rate, err := ReadPCM(path)
	if err != nil || len(pcm) != 0 || rate != 8000 {
		t.Errorf("ReadPCM = %d bytes, %d Hz, %v; want 0 bytes, 8000 Hz", len(pcm), rate, err)
	}
}

func TestWAVExtraChunks(t *testing.T) {
	pcm := tone(100)
	for name, data := range map[string][]byte{
		// Odd-sized chunks exercise the pad byte that size does not count.
		"list before data": riff(fmtChunk(1, 1, 8000, 16), chunk{"LIST", []byte("INFOISFT\x05\x00\x00\x00sox!\x00")}, chunk{"data", pcm}),
		"odd junk first":   riff(chunk{"JUNK", []byte("abc")}, fmtChunk(1, 1, 8000, 16), chunk{"LIST", []byte("x")}, chunk{"data", pcm}),
		"chunk after data": riff(fmtChunk(1, 1, 8000, 16), chunk{"data", pcm}, chunk{"LIST", []byte("INFO")}),
		"extensible pcm":   riff(extensibleChunk(1, 1, 8000, 16), chunk{"fact", []byte{100, 0, 0, 0}}, chunk{"data", pcm}),
	} {
		got, rate, err := ReadPCM(writeFile(t, "in.wav", data))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if rate != 8000 || !bytes.Equal(got, pcm) {
			t.Errorf("%s: read %d bytes at %d Hz, want %d bytes at 8000 Hz", name, len(got), rate, len(pcm))
		}
	}
}

func TestWAVStreamingSize(t *testing.T) {
	pcm := tone(100)
	data := riff(fmtChunk(1, 1, 8000, 16), chunk{"data", pcm})
	binary.LittleEndian.PutUint32(data[40:], 0xFFFFFFFF)
	got, _, err := ReadPCM(writeFile(t, "piped.wav", data))
	if err != nil || !bytes.Equal(got, pcm) {
		t.Errorf("ReadPCM = %d bytes, %v; want the %d bytes up to the end of the file", len(got), err, len(pcm))
	}
}

func TestWAVOddDataKeepsWholeSamples(t *testing.T) {
	pcm := tone(10)
	got, _, err := ReadPCM(writeFile(t, "odd.wav", riff(fmtChunk(1, 1, 8000, 16), chunk{"data", append(pcm, 0x7F)})))
	if err != nil || !bytes.Equal(got, pcm) {
		t.Errorf("ReadPCM = % X, %v; want % X", got, err, pcm)
	}
}

func TestWAVUnusableFormats(t *testing.T) {
	data := chunk{"data", tone(10)}
	for _, tc := range []struct {
		name string
		fmt  chunk
		want string
	}{
		{"stereo", fmtChunk(1, 2, 8000, 16), "2-channel audio"},
		{"cd", fmtChunk(1, 2, 44100, 16), "44100 Hz 2-channel audio"},
		{"8-bit", fmtChunk(1, 1, 8000, 8), "8-bit PCM audio"},
		{"24-bit", fmtChunk(1, 1, 8000, 24), "24-bit PCM audio"},
		{"float", fmtChunk(3, 1, 16000, 32), "16000 Hz 32-bit float audio"},
		{"extensible float", extensibleChunk(3, 1, 8000, 32), "32-bit float audio"},
		{"extensible 24-bit", extensibleChunk(1, 1, 8000, 24), "24-bit PCM audio"},
		{"mulaw", fmtChunk(7, 1, 8000, 8), "μ-law audio"},
		{"adpcm", fmtChunk(0x11, 1, 8000, 4), "compressed (WAV format tag 0x0011) audio"},
	} {
		path := writeFile(t, "in.wav", riff(tc.fmt, data))
		_, _, err := ReadPCM(path)
		want := path + ": " + tc.want + "; " + hint(path)
		if err == nil || err.Error() != want {
			t.Errorf("%s: error = %v\nwant %s", tc.name, err, want)
		}
	}
}

func TestWAVBrokenFiles(t *testing.T) {
	good := riff(fmtChunk(1, 1, 8000, 16), chunk{"data", tone(100)})
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"cut in data", good[:100], `truncated WAV file: "data" chunk declares 200 bytes but only 56 are present`},
		{"cut in fmt", good[:30], `truncated WAV file: "fmt " chunk declares 16 bytes but only 10 are present`},
		{"cut before data", good[:36], "truncated WAV file: it ends without a data chunk"},
		{"header only", good[:12], "truncated WAV file: it ends without a fmt chunk"},
		{"short riff", good[:8], "truncated WAV file: only 8 bytes"},
		{"empty", nil, "empty file, not a WAV file"},
		{"mp3", []byte("ID3\x04\x00\x00\x00\x00\x00\x00"), `not a WAV file (starts with "ID3\x04", not "RIFF")`},
		{"avi", append([]byte("RIFF\x04\x00\x00\x00AVI "), good[12:]...), `RIFF file of type "AVI ", not a WAV file`},
		{"data first", riff(chunk{"data", tone(10)}, fmtChunk(1, 1, 8000, 16)), "malformed WAV file: data chunk comes before the fmt chunk"},
		{"tiny fmt", riff(chunk{"fmt ", []byte{1, 0, 1, 0}}, chunk{"data", tone(10)}), "malformed WAV file: fmt chunk is 4 bytes, want at least 16"},
	} {
		path := writeFile(t, "in.wav", tc.data)
		_, _, err := ReadPCM(path)
		if err == nil || !strings.HasPrefix(err.Error(), path+": "+tc.want) {
			t.Errorf("%s: error = %v\nwant it to start with %s: %s", tc.name, err, path, tc.want)
		}
	}
}

func TestReadPCMMissingFile(t *testing.T) {
	_, _, err := ReadPCM(filepath.Join(t.TempDir(), "nope.wav"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error = %v, want fs.ErrNotExist", err)
	}
}

func TestRequireRate(t *testing.T) {
	if err := RequireRate("in.wav", 8000, 8000); err != nil {
		t.Errorf("RequireRate(8000, 8000) = %v", err)
	}
	want := "in.wav: 44100 Hz audio; voxhost run needs 8000 Hz mono PCM16 (convert with: sox in.wav -r 8000 -c 1 -b 16 out.wav)"
	if err := RequireRate("in.wav", 44100, 8000); err == nil || err.Error() != want {
		t.Errorf("RequireRate(44100, 8000) = %v\nwant %s", err, want)
	}
	// The command must survive being pasted into a shell.
	want = `My Call's.wav: 16000 Hz audio; voxhost run needs 8000 Hz mono PCM16 (convert with: sox 'My Call'\''s.wav' -r 8000 -c 1 -b 16 out.wav)`
	if err := RequireRate("My Call's.wav", 16000, 8000); err == nil || err.Error() != want {
		t.Errorf("RequireRate with spaces = %v\nwant %s", err, want)
	}
}

func TestUlawRoundTrip(t *testing.T) {
	pcm := tone(800)
	for _, name := range []string{"call.ul", "call.ULAW", "call.mulaw"} {
		path := filepath.Join(t.TempDir(), name)
		if err := WritePCM(path, pcm, 8000); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		wantRaw := make([]byte, len(pcm)/2)
		codec.EncodeUlaw(wantRaw, pcm)
		if !bytes.Equal(raw, wantRaw) {
			t.Errorf("%s holds bytes that are not codec.EncodeUlaw of the input", name)
		}
		got, rate, err := ReadPCM(path)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, len(pcm))
		codec.DecodeUlaw(want, wantRaw)
		if rate != 8000 || !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes at %d Hz, want codec.DecodeUlaw's %d bytes at 8000 Hz", name, len(got), rate, len(want))
		}
	}
}

func TestWritePCMErrors(t *testing.T) {
	dir := t.TempDir()
	err := WritePCM(filepath.Join(dir, "out.ul"), tone(10), 16000)
	if err == nil || !strings.Contains(err.Error(), "audio is 16000 Hz, but raw μ-law files are always 8000 Hz") {
		t.Errorf("WritePCM(.ul, 16000 Hz) = %v, want an error about the rate", err)
	}
	err = WritePCM(filepath.Join(dir, "out.wav"), []byte{1, 2, 3}, 8000)
	if err == nil || !strings.Contains(err.Error(), "3 bytes is not a whole number of PCM16 samples") {
		t.Errorf("WritePCM(3 bytes) = %v, want an error about the odd length", err)
	}
	err = WritePCM(filepath.Join(dir, "out.wav"), tone(10), 0)
	if err == nil || !strings.Contains(err.Error(), "sample rate 0 Hz") {
		t.Errorf("WritePCM(0 Hz) = %v, want an error about the rate", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.wav")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused WritePCM left a file behind: %v", err)
	}
}
