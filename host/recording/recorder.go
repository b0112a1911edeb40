package recording

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/internal/audiofile"
)

// The outcomes of a recording, as voxhost_recordings_total counts them.
const (
	// OutcomeComplete: recorded to the end of the call.
	OutcomeComplete = "complete"
	// OutcomeMaxDuration: every file reached the spec's MaxDuration.
	OutcomeMaxDuration = "max_duration"
	// OutcomeDiskFloor: the file system's free space fell below the
	// spec's MinFreeBytes.
	OutcomeDiskFloor = "disk_floor"
	// OutcomeWriteFailed: a write failed (a full disk, an I/O error).
	OutcomeWriteFailed = "write_failed"
	// OutcomeOpenFailed: the files could not be created.
	OutcomeOpenFailed = "open_failed"
)

var outcomes = []string{OutcomeComplete, OutcomeMaxDuration, OutcomeDiskFloor, OutcomeWriteFailed, OutcomeOpenFailed}

// The writer's pace: it takes what the call buffered every writeEvery,
// rewrites the headers every headerEvery of those, and the call buffers up
// to queueAudio of each stream before it drops audio. A frame's path is a
// copy under an uncontended lock; the writer's wake-ups are 5 a second
// whatever the frame rate.
const (
	writeEvery  = 200 * time.Millisecond
	headerEvery = 5
	queueAudio  = 2 * time.Second
	// closeWait is how long Close waits for the writer to finish its
	// files; past it the writer finishes on its own and the call's
	// goroutine goes on (a stalled disk must not hold the call's slot).
	closeWait = 5 * time.Second
)

// Metrics are the recorders' Prometheus series.
type Metrics struct {
	recordings *prometheus.CounterVec
	dropped    prometheus.Counter
	written    prometheus.Counter
}

// NewMetrics registers the recorders' series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		recordings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_recordings_total",
			Help: "Call recordings ended, by outcome: complete, max_duration, disk_floor, write_failed, open_failed (the call went on in every case).",
		}, []string{"outcome"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxhost_recording_dropped_seconds_total",
			Help: "Audio that calls buffered faster than the recorders wrote it (a slow disk), written as silence so that the streams stay aligned.",
		}),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxhost_recording_bytes_total", Help: "Bytes of audio written to call recordings.",
		}),
	}
	for _, o := range outcomes {
		m.recordings.WithLabelValues(o)
	}
	reg.MustRegister(m.recordings, m.dropped, m.written)
	return m
}

// Formats are the audio of a call's streams.
type Formats struct {
	// Caller is the caller leg's format: Caller and Heard are in it, and
	// Reference is PCM16 at its rate.
	Caller codec.Format
	// ProcessedRate is the rate the inbound pipeline ends at
	// (CallerProcessed is PCM16 at it).
	ProcessedRate int
}

// Recorder records one call. Its frame methods (Caller, Processed, Heard)
// copy the frame and return; they never wait for the disk and allocate
// nothing, and a nil Recorder records nothing. Caller and Processed are
// called from one goroutine, Heard from one (maybe another).
type Recorder struct {
	spec   *Spec
	log    *slog.Logger
	m      *Metrics
	tracks [numStreams]*track

	// dir is the spec's Dir, open: the new files' entries are synced
	// through it, and the free space asked.
	dir       *os.File
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	// outcome is set by the writer when the recording stops early.
	outcome string
	// zeros is silence to write; pcm is where the writer decodes, a
	// piece at a time.
	zeros, pcm []byte
}

// track is one stream's file and the audio buffered for it.
type track struct {
	stream Stream
	// format is how the buffered audio is encoded; the file holds it as
	// PCM16 at format.Rate.
	format codec.Format
	path   string
	f      file

	mu    sync.Mutex
	front []byte
	// lost counts bytes the call buffered with front full; the writer
	// writes them as silence after front.
	lost int
	// off says the track takes no more audio.
	off atomic.Bool

	back    []byte
	written int64
	limit   int64
}

// Open creates the files of a call named id that started at started, and
// starts its writer. An error (a directory that cannot be written) is
// counted as open_failed; the call goes on without a recording.
func Open(spec *Spec, id string, started time.Time, formats Formats, m *Metrics, log *slog.Logger) (*Recorder, error) {
	r, err := open(spec, id, started, formats, m, log)
	if err != nil {
		return nil, err
	}
	go r.run()
	return r, nil
}

// open is Open without the writer.
func open(spec *Spec, id string, started time.Time, formats Formats, m *Metrics, log *slog.Logger) (*Recorder, error) {
	r := &Recorder{spec: spec, log: log, m: m, stop: make(chan struct{}), done: make(chan struct{}), zeros: make([]byte, 4096), pcm: make([]byte, 8192)}
	if err := r.create(id, started, formats); err != nil {
		m.recordings.WithLabelValues(OutcomeOpenFailed).Inc()
		return nil, err
	}
	return r, nil
}

// create opens a file per stream, under the first name none of whose
// files exists yet: two calls of one id (a caller's id can repeat) in the
// same millisecond take the next.
func (r *Recorder) create(id string, started time.Time, formats Formats) error {
	stem := FileStem(id)
	for attempt := 0; ; attempt++ {
		err := r.createAt(stem, started.Add(time.Duration(attempt)*time.Millisecond), formats)
		if err == nil {
			break
		}
		r.closeFiles(true)
		if !errors.Is(err, os.ErrExist) || attempt == 100 {
			return err
		}
	}
	dir, err := os.Open(r.spec.Dir)
	if err != nil {
		r.closeFiles(true)
		return err
	}
	r.dir = dir
	_ = dir.Sync()
	return nil
}

func (r *Recorder) createAt(stem string, started time.Time, formats Formats) error {
	for _, s := range r.spec.streams() {
		f := formats.Caller
		switch s {
		case CallerProcessed:
			f = codec.Format{Encoding: codec.L16, Rate: formats.ProcessedRate}
		case Reference:
			f = codec.Format{Encoding: codec.L16, Rate: formats.Caller.Rate}
		}
		path := filepath.Join(r.spec.Dir, fileName(stem, started, s))
		fh, err := r.spec.open(path)
		if err != nil {
			return err
		}
		queue := bytesOf(f, queueAudio)
		t := &track{stream: s, format: f, path: path, f: fh, front: make([]byte, 0, queue), back: make([]byte, 0, queue),
			limit: min(int64(r.spec.maxDuration()/time.Millisecond)*int64(f.Rate/1000)*2, math.MaxUint32-audiofile.WAVHeaderSize)}
		r.tracks[s] = t
		h := audiofile.WAVHeader(f.Rate, 0)
		if _, err := fh.Write(h[:]); err != nil {
			return err
		}
	}
	return nil
}

func bytesOf(f codec.Format, d time.Duration) int {
	return int(d/time.Millisecond) * f.BytesPerMs()
}

// Caller records a frame of the caller's audio as it came in, and ref,
// the far-end reference the inbound pipeline got with it (PCM16 at the
// caller's rate, as many samples as the frame; nil when the call keeps no
// far-end timeline, which it does whenever Records(Reference)).
func (r *Recorder) Caller(frame, ref []byte) {
	if r == nil {
		return
	}
	r.tracks[Caller].add(frame)
	r.tracks[Reference].add(ref)
}

// Processed records the inbound pipeline's output for a frame (PCM16).
func (r *Recorder) Processed(pcm []byte) {
	if r == nil {
		return
	}
	r.tracks[CallerProcessed].add(pcm)
}

// Heard records a frame sent to the caller, in the caller's format.
func (r *Recorder) Heard(frame []byte) {
	if r == nil {
		return
	}
	r.tracks[Heard].add(frame)
}

// add buffers b for the writer, or counts it lost when the buffer is full:
// once a byte is lost, every later one is too until the writer has taken
// the buffer, so that the silence written for them falls where they were.
func (t *track) add(b []byte) {
	if t == nil || t.off.Load() {
		return
	}
	t.mu.Lock()
	if t.lost > 0 || len(t.front)+len(b) > cap(t.front) {
		t.lost += len(b)
	} else {
		t.front = append(t.front, b...)
	}
	t.mu.Unlock()
}

// Close ends the recording: what is buffered is written, the headers are
// rewritten, and the files are fsynced and closed. It waits for that up to
// closeWait.
func (r *Recorder) Close() {
	if r == nil {
		return
	}
	r.closeOnce.Do(func() { close(r.stop) })
	select {
	case <-r.done:
	case <-time.After(closeWait):
		r.log.Warn("the recording's files are still being written; the writer finishes them on its own", "dir", r.spec.Dir)
	}
}

// Outcome is how the recording ended once Close has returned: one of the
// Outcome constants, or "" while its writer is still finishing the files
// (a disk that stalled past closeWait).
func (r *Recorder) Outcome() string {
	if r == nil {
		return ""
	}
	select {
	case <-r.done:
		return r.outcome
	default:
		return ""
	}
}

// Files are the paths of the recording's files, in stream order.
func (r *Recorder) Files() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, t := range r.tracks {
		if t != nil {
			out = append(out, t.path)
		}
	}
	return out
}

// run is the writer goroutine.
func (r *Recorder) run() {
	defer close(r.done)
	tick := time.NewTicker(writeEvery)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-tick.C:
			r.write(n%headerEvery == 0)
		case <-r.stop:
			r.write(false)
			r.finish()
			return
		}
	}
}

// write takes what each track buffered and writes it, after checking the
// disk-free floor; headers rewrites the headers too.
func (r *Recorder) write(headers bool) {
	if r.outcome != "" {
		return
	}
	if free, err := r.spec.freeBytes(r.dir); err == nil && free < r.spec.minFree() {
		r.halt(OutcomeDiskFloor, fmt.Errorf("the file system of %s has %d bytes free, below recording.min_free_bytes (%d)", r.spec.Dir, free, r.spec.minFree()))
		return
	}
	full := 0
	for _, t := range r.tracks {
		if t == nil {
			continue
		}
		if err := r.writeTrack(t); err != nil {
			r.halt(OutcomeWriteFailed, fmt.Errorf("writing %s: %w", t.path, err))
			return
		}
		if headers {
			if err := t.header(); err != nil {
				r.halt(OutcomeWriteFailed, fmt.Errorf("writing %s: %w", t.path, err))
				return
			}
		}
		if t.off.Load() {
			full++
		}
	}
	if full == len(r.spec.streams()) {
		r.outcome = OutcomeMaxDuration
		r.log.Info("recording stopped: every file reached recording.max_seconds; the call goes on", "max_seconds", r.spec.maxDuration().Seconds())
	}
}

// writeTrack writes what t buffered, then silence for what it lost, up to
// its limit; at the limit the track takes no more.
func (r *Recorder) writeTrack(t *track) error {
	t.mu.Lock()
	t.front, t.back = t.back[:0], t.front
	lost := t.lost
	t.lost = 0
	t.mu.Unlock()
	if err := r.decode(t); err != nil {
		return err
	}
	if lost > 0 {
		silent := int64(lost / t.format.SampleBytes() * 2)
		r.m.dropped.Add(float64(silent/2) / float64(t.format.Rate))
		for silent > 0 && !t.off.Load() {
			n := min(silent, int64(len(r.zeros)))
			if err := t.append(r.zeros[:n], r.m); err != nil {
				return err
			}
			silent -= n
		}
	}
	return nil
}

// decode writes what t's writer took as PCM16: as it is (L16), or decoded
// a piece at a time into the recorder's pcm.
func (r *Recorder) decode(t *track) error {
	if t.format.Encoding == codec.L16 {
		return t.append(t.back, r.m)
	}
	for in := t.back; len(in) > 0; {
		n := min(len(in), len(r.pcm)/2)
		if err := t.append(r.pcm[:t.format.Decode(r.pcm, in[:n])], r.m); err != nil {
			return err
		}
		in = in[n:]
	}
	return nil
}

// append writes PCM16 to t's file, cut at its limit.
func (t *track) append(pcm []byte, m *Metrics) error {
	if room := t.limit - t.written; int64(len(pcm)) >= room {
		pcm = pcm[:room&^1]
		t.off.Store(true)
	}
	if len(pcm) == 0 {
		return nil
	}
	n, err := t.f.Write(pcm)
	t.written += int64(n &^ 1)
	m.written.Add(float64(n))
	return err
}

// header rewrites t's header with the audio written so far, so that a
// process that dies mid-call leaves files that play up to the last
// rewrite.
func (t *track) header() error {
	h := audiofile.WAVHeader(t.format.Rate, uint32(t.written))
	_, err := t.f.WriteAt(h[:], 0)
	return err
}

// halt stops the recording early for why, logged once; the files keep
// what was written.
func (r *Recorder) halt(outcome string, why error) {
	r.outcome = outcome
	for _, t := range r.tracks {
		if t != nil {
			t.off.Store(true)
		}
	}
	r.log.Warn("recording stopped; the call goes on", "outcome", outcome, "err", why)
}

// finish rewrites the headers, fsyncs and closes the files, and counts
// the outcome.
func (r *Recorder) finish() {
	if r.outcome == "" {
		r.outcome = OutcomeComplete
	}
	for _, t := range r.tracks {
		if t == nil {
			continue
		}
		t.off.Store(true)
		err := t.header()
		if serr := t.f.Sync(); err == nil {
			err = serr
		}
		if err != nil && r.outcome == OutcomeComplete {
			r.outcome = OutcomeWriteFailed
			r.log.Warn("recording could not be finished", "file", t.path, "err", err)
		}
	}
	r.closeFiles(false)
	_ = r.dir.Sync()
	_ = r.dir.Close()
	r.m.recordings.WithLabelValues(r.outcome).Inc()
}

// closeFiles closes the tracks' files, and removes them when the
// recording could not be opened whole.
func (r *Recorder) closeFiles(remove bool) {
	for i, t := range r.tracks {
		if t == nil {
			continue
		}
		_ = t.f.Close()
		if remove {
			_ = os.Remove(t.path)
			r.tracks[i] = nil
		}
	}
}
