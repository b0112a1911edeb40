package recording

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/voxhost/voxhost/internal/audiofile"
)

// A recording's files are named ID.STARTED.STREAM.wav: the call's id
// escaped (FileStem), when the call started (UTC, to the millisecond) and
// the stream, as in CA1234.20261202T001234,567Z.caller.wav. The escaping
// keeps letters, digits and '-' and writes every other byte as %XX, so no
// id a caller chooses can name another directory, a hidden file or
// another call's files, and '.' separates the three parts.
const stampLayout = "20060102T150405,000Z"

// maxStem bounds the escaped id in a file name; a longer one is cut and
// made unique by a hash of the whole id.
const maxStem = 160

// FileStem is id as it begins the names of its recording's files.
func FileStem(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteString(strings.ToUpper(hex.EncodeToString([]byte{c})))
	}
	stem := b.String()
	if len(stem) > maxStem || stem == "" {
		sum := sha256.Sum256([]byte(id))
		stem = stem[:min(len(stem), maxStem-33)] + "~" + hex.EncodeToString(sum[:16])
	}
	return stem
}

func fileName(stem string, started time.Time, s Stream) string {
	return stem + "." + started.UTC().Format(stampLayout) + "." + s.String() + ".wav"
}

// Recording is one recorded call's files as Find lists them.
type Recording struct {
	// Started is when the call started.
	Started time.Time `json:"started"`
	// Files are its streams, in stream order.
	Files []File `json:"files"`
}

// File is one stream of a recording.
type File struct {
	// Stream names the stream (caller, caller_processed, heard, reference).
	Stream string `json:"stream"`
	// Name is the file's name in its directory.
	Name string `json:"name"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// Rate is its sample rate, from its header.
	Rate int `json:"rate"`
	// Seconds is the audio it holds on disk (a recording still being
	// written has more than its header says, up to a second more).
	Seconds float64 `json:"seconds"`
	// Path is where it is; not shown.
	Path string `json:"-"`
}

// Find lists the recordings of the call named id in dirs, oldest first.
// Only names made for id are looked at: id is escaped before it meets the
// file system, so it cannot reach outside dirs.
func Find(dirs []string, id string) ([]Recording, error) {
	stem := FileStem(id)
	byStart := map[time.Time]*Recording{}
	for _, dir := range dirs {
		// The stem holds no glob metacharacter: letters, digits, '-',
		// '%' and '~' only.
		paths, err := filepath.Glob(filepath.Join(dir, stem+".*.wav"))
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			f, started, ok := stat(p, stem)
			if !ok {
				continue
			}
			rec := byStart[started]
			if rec == nil {
				rec = &Recording{Started: started}
				byStart[started] = rec
			}
			rec.Files = append(rec.Files, f)
		}
	}
	out := make([]Recording, 0, len(byStart))
	for _, rec := range byStart {
		slices.SortFunc(rec.Files, func(a, b File) int {
			sa, _ := ParseStream(a.Stream)
			sb, _ := ParseStream(b.Stream)
			return int(sa - sb)
		})
		out = append(out, *rec)
	}
	slices.SortFunc(out, func(a, b Recording) int { return a.Started.Compare(b.Started) })
	return out, nil
}

// stat reads what Find lists of the file at path, whose name begins stem;
// false for a name or a file a recorder did not make.
func stat(path, stem string) (File, time.Time, bool) {
	name := filepath.Base(path)
	stamp, rest, ok := strings.Cut(strings.TrimPrefix(name, stem+"."), ".")
	if !ok {
		return File{}, time.Time{}, false
	}
	started, err := time.Parse(stampLayout, stamp)
	stream, serr := ParseStream(strings.TrimSuffix(rest, ".wav"))
	if err != nil || serr != nil {
		return File{}, time.Time{}, false
	}
	// A link is not followed: whoever can write the directory must not be
	// able to have the API serve another file.
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return File{}, time.Time{}, false
	}
	fh, err := os.Open(path)
	if err != nil {
		return File{}, time.Time{}, false
	}
	defer fh.Close()
	var h [audiofile.WAVHeaderSize]byte
	if _, err := io.ReadFull(fh, h[:]); err != nil || string(h[0:4]) != "RIFF" || string(h[8:12]) != "WAVE" {
		return File{}, time.Time{}, false
	}
	rate := int(binary.LittleEndian.Uint32(h[24:]))
	f := File{Stream: stream.String(), Name: name, Bytes: info.Size(), Rate: rate, Path: path}
	if rate > 0 {
		f.Seconds = float64(info.Size()-audiofile.WAVHeaderSize) / 2 / float64(rate)
	}
	return f, started, true
}
