package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/codec"
)

// The bounds of the taps: how many viewers one call and the whole server
// feed at once, and how much audio a viewer that does not keep up may fall
// behind before its frames are dropped (counted, and told to it).
const (
	MaxTapsPerCall = 4
	MaxTaps        = 64
	tapQueueMs     = 1000
)

// tapHeader is a buffered frame's header: its time on the caller's clock
// (ms), the frames dropped before it, and the bytes of its three streams.
const tapHeader = 8 + 4 + 3*4

// ErrTapLimit says a call, or the server, already feeds as many viewers
// as it may (MaxTapsPerCall, MaxTaps).
var ErrTapLimit = errors.New("too many viewers")

// ErrNoLiveCall says no live call of that id has started its stream.
var ErrNoLiveCall = errors.New("no live call")

// tapMetrics are the taps' series: the viewers fed, and the frames they
// lost.
type tapMetrics struct {
	open prometheus.Gauge
	lost prometheus.Counter
}

func newTapMetrics(reg prometheus.Registerer) *tapMetrics {
	open := prometheus.NewGauge(prometheus.GaugeOpts{Name: "voxhost_taps",
		Help: "Viewers fed a live call's audio (GET /calls/{id}/tap: the console's lanes), at most 4 a call and 64 in all."})
	lost := prometheus.NewCounter(prometheus.CounterOpts{Name: "voxhost_tap_lost_frames_total",
		Help: "Call frames a viewer did not get because it fell a second behind (the call never waits for a viewer)."})
	reg.MustRegister(open, lost)
	return &tapMetrics{open: open, lost: lost}
}

// TapInfo is what a tap's streams are.
type TapInfo struct {
	// CallID is the call's id, as Calls lists it.
	CallID string `json:"call_id"`
	// CallerRate is the rate of Caller and Reference, ProcessedRate that
	// of Processed (where the inbound pipeline ends).
	CallerRate    int `json:"caller_rate"`
	ProcessedRate int `json:"processed_rate"`
	// Reference says the call keeps a far-end timeline (ABI §11: a stage
	// asks for it, or the route records it), so frames carry it.
	Reference bool `json:"reference"`
}

// TapFrame is one caller frame as the call ran it, every stream PCM16
// little-endian.
type TapFrame struct {
	// AtMs is where the frame starts on the caller's clock: the caller
	// audio before it, in ms, as plugin events' t_ms count.
	AtMs int64
	// Lost counts the frames dropped just before this one because the
	// viewer fell tapQueueMs behind.
	Lost int
	// Caller is the frame as the caller sent it, decoded; Reference the
	// far-end reference the inbound pipeline got with it (the slice the
	// recording's reference stream records), empty without one; Processed
	// the inbound pipeline's output (empty when a stage swallowed the
	// frame).
	Caller, Reference, Processed []byte
}

// Tap is one viewer's feed of a live call: every frame the call runs
// from the moment it is opened, copied on the call's goroutine into a
// bounded buffer and read on the viewer's. The call never waits for a
// viewer; one that falls behind loses frames, and one that stops reading
// costs its buffer until it is closed. A call nobody watches pays one
// atomic load a frame.
type Tap struct {
	c    *call
	info TapInfo
	// caller is the caller leg's format: the viewer's goroutine decodes
	// the caller's frames from it.
	caller codec.Format

	mu sync.Mutex
	// front holds the frames buffered for the viewer (tapHeader, then
	// the three streams); lost counts those dropped since.
	front []byte
	lost  int
	// wake has a token when front has frames for the viewer.
	wake chan struct{}

	back, decoded []byte
	closeOnce     sync.Once
}

// Tap opens a feed of the live call id (as Calls lists it) whose stream
// has started. Close it when done.
func (s *Server) Tap(id string) (*Tap, error) {
	c := s.liveCall(id)
	if c == nil {
		return nil, fmt.Errorf("%w %q: it ended, or its stream has not started", ErrNoLiveCall, id)
	}
	if s.taps.Add(1) > MaxTaps {
		s.taps.Add(-1)
		return nil, fmt.Errorf("%w: the server feeds %d taps at once", ErrTapLimit, MaxTaps)
	}
	v := c.view.Load()
	t := &Tap{c: c, caller: c.format, wake: make(chan struct{}, 1),
		info: TapInfo{CallID: id, CallerRate: c.format.Rate, ProcessedRate: v.in.OutputRate(), Reference: c.far != nil}}
	// A ms of each stream, and a header per 10 ms; at least two of the
	// call's longest frames.
	perMs := c.format.BytesPerMs() + (c.format.Rate+t.info.ProcessedRate)/1000*abi.SampleBytes
	size := max(tapQueueMs, 2*c.maxFrameMs) * (perMs + tapHeader/10)
	t.front, t.back = make([]byte, 0, size), make([]byte, 0, size)
	t.decoded = make([]byte, c.maxFrameMs*c.format.Rate/1000*abi.SampleBytes)

	c.tapMu.Lock()
	defer c.tapMu.Unlock()
	var taps []*Tap
	if p := c.taps.Load(); p != nil {
		taps = *p
	}
	if len(taps) >= MaxTapsPerCall {
		s.taps.Add(-1)
		return nil, fmt.Errorf("%w: call %q feeds %d taps at once", ErrTapLimit, id, MaxTapsPerCall)
	}
	taps = append(slices.Clip(taps), t)
	c.taps.Store(&taps)
	s.metrics.taps.open.Inc()
	return t, nil
}

// liveCall is the live call of id whose stream started, or nil.
func (s *Server) liveCall(id string) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.calls {
		if c.summaryID == id && c.view.Load() != nil {
			return c
		}
	}
	return nil
}

// Info says what the tap's streams are.
func (t *Tap) Info() TapInfo { return t.info }

// Close stops the feed; the call no longer copies frames for it.
func (t *Tap) Close() {
	t.closeOnce.Do(func() {
		c := t.c
		c.tapMu.Lock()
		defer c.tapMu.Unlock()
		var taps []*Tap
		if p := c.taps.Load(); p != nil {
			taps = slices.DeleteFunc(slices.Clone(*p), func(x *Tap) bool { return x == t })
		}
		if len(taps) == 0 {
			c.taps.Store(nil)
		} else {
			c.taps.Store(&taps)
		}
		c.s.taps.Add(-1)
		c.s.metrics.taps.open.Dec()
	})
}

// Read waits for frames (until ctx ends or the call does) and calls each
// with every frame buffered, in order; the frame's slices are valid during
// the call only. It returns io.EOF once the call ended and its last
// frames were read.
func (t *Tap) Read(ctx context.Context, each func(TapFrame)) error {
	select {
	case <-t.wake:
	case <-t.c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	t.mu.Lock()
	t.front, t.back = t.back[:0], t.front
	t.mu.Unlock()
	if len(t.back) == 0 {
		select {
		case <-t.c.done:
			// Frames lost after the last one read are counted now.
			t.mu.Lock()
			pending := t.lost
			t.lost = 0
			t.mu.Unlock()
			t.countLost(pending)
			return io.EOF
		default:
			return nil
		}
	}
	le := binary.LittleEndian
	lost := 0
	for b := t.back; len(b) >= tapHeader; {
		f := TapFrame{AtMs: int64(le.Uint64(b)), Lost: int(le.Uint32(b[8:]))}
		n := [3]int{int(le.Uint32(b[12:])), int(le.Uint32(b[16:])), int(le.Uint32(b[20:]))}
		b = b[tapHeader:]
		raw := b[:n[0]]
		f.Caller = t.decoded[:t.caller.Decode(t.decoded, raw)]
		f.Reference, f.Processed = b[n[0]:n[0]+n[1]], b[n[0]+n[1]:n[0]+n[1]+n[2]]
		b = b[n[0]+n[1]+n[2]:]
		lost += f.Lost
		each(f)
	}
	t.countLost(lost)
	return nil
}

func (t *Tap) countLost(n int) {
	if n > 0 {
		t.c.s.metrics.taps.lost.Add(float64(n))
	}
}

// add buffers a frame for the viewer, or counts it lost when the buffer
// is full.
func (t *Tap) add(atMs int64, raw, ref, pcm []byte) {
	t.mu.Lock()
	if len(t.front)+tapHeader+len(raw)+len(ref)+len(pcm) > cap(t.front) {
		t.lost++
		t.mu.Unlock()
		return
	}
	le := binary.LittleEndian
	var h [tapHeader]byte
	le.PutUint64(h[:], uint64(atMs))
	le.PutUint32(h[8:], uint32(t.lost))
	le.PutUint32(h[12:], uint32(len(raw)))
	le.PutUint32(h[16:], uint32(len(ref)))
	le.PutUint32(h[20:], uint32(len(pcm)))
	t.front = append(append(append(append(t.front, h[:]...), raw...), ref...), pcm...)
	t.lost = 0
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// tap copies a frame the call ran (raw as the caller sent it, ref its
// far-end reference, pcm the inbound pipeline's output) to its viewers.
func (c *call) tap(raw, ref, pcm []byte) {
	p := c.taps.Load()
	if p == nil {
		return
	}
	at := c.audioMs - int64(len(raw)/c.format.BytesPerMs())
	for _, t := range *p {
		t.add(at, raw, ref, pcm)
	}
}
