package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Recording is a route's call recording (recording: under the route): a
// WAV file per stream of each call, written as the call goes.
type Recording struct {
	// Dir is where the files go; created if missing (owner and group
	// only).
	Dir string
	// What are the streams recorded, of RecordingStreams; none means
	// caller and heard.
	What []string
	// MaxSeconds caps each file's audio; the recording stops there and
	// the call goes on. 0 (left out) means 3600.
	MaxSeconds int
	// MinFreeBytes is the disk-free floor: recording stops when the
	// directory's file system has less free space. 0 (left out) means
	// 512 MiB.
	MinFreeBytes uint64
}

// RecordingStreams are the streams a recording may hold: the caller's
// audio as decoded, after the inbound stages, what the caller was sent,
// and the far-end reference inbound plugins get (ABI §11).
var RecordingStreams = []string{"caller", "caller_processed", "heard", "reference"}

// maxRecordingSeconds keeps a file inside the 4 GiB a WAV header can
// count, at the highest rate a stream has (24 kHz PCM16).
const maxRecordingSeconds = 86400

func recording(dst **Recording) field {
	return func(d *decoder, n ast.Node, path string) error {
		r := &Recording{}
		*dst = r
		return mapping(map[string]field{
			"dir":            str(&r.Dir),
			"what":           streamList(&r.What),
			"max_seconds":    positiveInt(&r.MaxSeconds),
			"min_free_bytes": integer(&r.MinFreeBytes),
		})(d, n, path)
	}
}

// validate checks the recording at key path at.
func (r *Recording) validate(at string) error {
	if r.Dir == "" {
		return invalid(at+".dir", "missing; give the directory the call recordings are written in")
	}
	for i, w := range r.What {
		at := fmt.Sprintf("%s.what[%d]", at, i)
		if !slices.Contains(RecordingStreams, w) {
			return invalid(at, "unknown stream %q (want %s)", w, strings.Join(RecordingStreams, ", "))
		}
		if slices.Index(r.What, w) < i {
			return invalid(at, "%s is listed twice", w)
		}
	}
	if r.MaxSeconds < 0 || r.MaxSeconds > maxRecordingSeconds {
		return invalid(at+".max_seconds", "must be from 1 to %d (a day), got %d", maxRecordingSeconds, r.MaxSeconds)
	}
	return nil
}

// positiveInt decodes an integer that must be positive. Zero is refused
// here, where it can be told from a key left out: it would read as "none"
// but mean the default.
func positiveInt(dst *int) field {
	return func(d *decoder, n ast.Node, path string) error {
		if err := integer(dst)(d, n, path); err != nil {
			return err
		}
		if *dst <= 0 {
			return fmt.Errorf("must be positive, got %d (leave the key out for the default)", *dst)
		}
		return nil
	}
}

// streamList decodes recording.what; an empty list is refused here, where
// it can be told from a key left out.
func streamList(dst *[]string) field {
	return func(d *decoder, n ast.Node, path string) error {
		if err := strs(dst)(d, n, path); err != nil {
			return err
		}
		if len(*dst) == 0 {
			return fmt.Errorf("empty; list what to record, of: %s (or leave it out for caller and heard)", strings.Join(RecordingStreams, ", "))
		}
		return nil
	}
}
