// Package recording writes a call's audio to WAV files as the call goes:
// one mono PCM16 file per stream (the caller as decoded, the caller after
// the inbound pipeline, what the caller heard, and the far-end reference),
// each at its own rate, bounded in length and by a disk-free floor. The
// call's frame loop only copies a frame into a preallocated buffer; a
// writer goroutine per call decodes and writes, so a slow or full disk
// costs the recording, never the call.
package recording

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Stream is one signal of a call that can be recorded.
type Stream int

// The streams, in the order a recording lists them.
const (
	// Caller is the caller's audio as decoded from its leg, before any
	// plugin.
	Caller Stream = iota
	// CallerProcessed is the caller's audio after the inbound pipeline:
	// what went to the bot, or on to the outbound pipeline in an echo.
	CallerProcessed
	// Heard is what the caller was sent, as decoded from its leg.
	Heard
	// Reference is the far-end reference of the caller's frames (ABI
	// §11): for each caller frame, exactly the samples an inbound plugin
	// that asks for the reference gets with it, PCM16 at the caller's
	// rate, so that sample i of Reference is what the caller was playing
	// when it sent sample i of Caller, as the host's timeline places it
	// (silence where nothing was). Caller and Reference are what an echo
	// canceller saw, sample for sample.
	Reference
	numStreams
)

var streamNames = [numStreams]string{"caller", "caller_processed", "heard", "reference"}

// String names the stream as configs and file names spell it.
func (s Stream) String() string {
	if s < 0 || s >= numStreams {
		return fmt.Sprintf("stream(%d)", int(s))
	}
	return streamNames[s]
}

// ParseStream reads a stream's name.
func ParseStream(name string) (Stream, error) {
	if i := slices.Index(streamNames[:], name); i >= 0 {
		return Stream(i), nil
	}
	return 0, fmt.Errorf("unknown stream %q (want %s)", name, strings.Join(streamNames[:], ", "))
}

// Defaults of a Spec's zero fields.
const (
	// DefaultMaxDuration bounds a recording's files when the route gives
	// no max_seconds.
	DefaultMaxDuration = time.Hour
	// DefaultMinFreeBytes is the disk-free floor when the route gives
	// none: recording stops when the directory's file system has less.
	DefaultMinFreeBytes = 512 << 20
)

// Spec is what a route records, where, and its bounds.
type Spec struct {
	// Dir is the directory the files are written in.
	Dir string
	// Streams are recorded, one file each; none means Caller and Heard.
	Streams []Stream
	// MaxDuration caps each file's audio; the recording stops there and
	// the call goes on. 0 means DefaultMaxDuration.
	MaxDuration time.Duration
	// MinFreeBytes is the disk-free floor: the recording stops once the
	// file system of Dir has less free space for an unprivileged writer.
	// 0 means DefaultMinFreeBytes.
	MinFreeBytes uint64
	// FreeBytes reports the free space of dir; nil means the file
	// system's (statfs). A volume whose quota the file system does not
	// report can supply its own.
	FreeBytes func(dir string) (uint64, error)

	// create opens a new file; nil means os.OpenFile. Tests inject files
	// that fail.
	create func(path string) (file, error)
}

// file is what a recorder writes through: an *os.File.
type file interface {
	Write([]byte) (int, error)
	WriteAt([]byte, int64) (int, error)
	Sync() error
	Close() error
}

// Check prepares the spec's directory (creating it, owner and group only)
// and says why its files could not be written there, or nil: what a route
// is checked with before it takes calls.
func (s *Spec) Check() error {
	if s.Dir == "" {
		return errors.New("recording: no directory")
	}
	if err := os.MkdirAll(s.Dir, 0o750); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	probe, err := os.CreateTemp(s.Dir, ".voxhost-probe-*")
	if err != nil {
		return fmt.Errorf("recording: the directory %s cannot be written: %w", s.Dir, err)
	}
	name := probe.Name()
	_ = probe.Close()
	_ = os.Remove(name)
	return nil
}

// Records says whether the spec records stream s; a nil spec records
// nothing.
func (s *Spec) Records(stream Stream) bool {
	return s != nil && slices.Contains(s.streams(), stream)
}

// Recorded are the streams the spec records, in order, the default
// applied.
func (s *Spec) Recorded() []Stream { return slices.Clone(s.streams()) }

// streams are the recorded streams, defaults applied.
func (s *Spec) streams() []Stream {
	if len(s.Streams) == 0 {
		return []Stream{Caller, Heard}
	}
	return s.Streams
}

func (s *Spec) maxDuration() time.Duration {
	if s.MaxDuration <= 0 {
		return DefaultMaxDuration
	}
	return s.MaxDuration
}

func (s *Spec) minFree() uint64 {
	if s.MinFreeBytes == 0 {
		return DefaultMinFreeBytes
	}
	return s.MinFreeBytes
}

// freeBytes is the free space of dir, the spec's Dir opened.
func (s *Spec) freeBytes(dir *os.File) (uint64, error) {
	if s.FreeBytes != nil {
		return s.FreeBytes(s.Dir)
	}
	return freeBytes(dir)
}

func (s *Spec) open(path string) (file, error) {
	if s.create != nil {
		return s.create(path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, err
	}
	return f, nil
}
