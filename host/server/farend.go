package server

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/codec"
)

// farEndSeconds is how far ahead of the caller's clock the far-end
// timeline holds what the host wrote: a carrier's send-ahead queue deeper
// than this plays audio the reference has lost (silence, and counted).
const farEndSeconds = 4

// farEnd is a call's far-end reference (ABI §11) on the caller's clock:
// what the host wrote to the caller, placed where the caller plays it. The
// clock is the count of samples the caller has sent; audio written when it
// stands at t starts to play at t, or where the audio written before ends
// if that is later (a carrier that buffers ahead plays its queue in order);
// a clear empties what is queued. The inbound goroutine reads it frame by
// frame; the playout (a relay) or the inbound goroutine itself (an echo)
// writes it; the bot reader clears it.
type farEnd struct {
	format codec.Format
	mu     sync.Mutex
	// ring holds PCM16 samples [heard, heard+len(ring)/2) of the timeline,
	// at index (sample % capacity); what has been read is zeroed.
	ring []byte
	// heard is the caller's clock, end where the audio written so far ends.
	heard, end int64
	// dropped counts samples written beyond the ring's reach.
	dropped int64
	// decoded is a scratch buffer for written audio in the caller's codec,
	// decoded a second at a time.
	decoded []byte

	// m are the series the timeline reports to, a second of the caller's
	// audio at a time (reportAt on its clock) and at the call's end:
	// sent and none count the caller's samples since the last report
	// whose reference held audio sent to the caller or silence because
	// none was, reportedDrops the dropped samples reported.
	m             *farEndMetrics
	reportAt      int64
	sent, none    int64
	reportedDrops int64
}

// The values of voxhost_far_end_seconds_total's reference label.
const (
	// referenceSent: the caller's audio whose reference held audio the
	// host had sent the caller.
	referenceSent = "sent"
	// referenceNone: silence, because nothing sent was playing.
	referenceNone = "none"
)

// farEndMetrics are the far-end timelines' series: whether the reference
// plugins get holds what the caller was playing, and how far ahead the
// host writes.
type farEndMetrics struct {
	sent, none prometheus.Counter
	dropped    prometheus.Counter
	queue      prometheus.Histogram
}

func newFarEndMetrics(reg prometheus.Registerer) *farEndMetrics {
	seconds := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voxhost_far_end_seconds_total",
		Help: "Caller audio of calls that keep a far-end reference (ABI §11: a plugin asks for it, or a recording of it), by what its reference held: sent (audio the host had sent the caller, playing then) or none (silence: nothing was).",
	}, []string{"reference"})
	m := &farEndMetrics{
		sent: seconds.WithLabelValues(referenceSent),
		none: seconds.WithLabelValues(referenceNone),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxhost_far_end_dropped_seconds_total",
			Help: "Audio sent to callers further ahead of their clock than the far-end timeline holds (4 s): it plays, and its reference is silence.",
		}),
		queue: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "voxhost_far_end_queue_seconds",
			Help:    "How far the audio sent to a caller reaches past the caller's clock, the lead the far-end alignment absorbs (a carrier's send-ahead, the playout's), seen at a caller frame while audio is queued, once a second per call.",
			Buckets: []float64{0.005, 0.01, 0.02, 0.04, 0.1, 0.2, 0.5, 1, 2, 4},
		}),
	}
	reg.MustRegister(seconds, m.dropped, m.queue)
	return m
}

func newFarEnd(f codec.Format, m *farEndMetrics) *farEnd {
	ring := make([]byte, farEndSeconds*f.Rate*abi.SampleBytes)
	return &farEnd{format: f, ring: ring, decoded: make([]byte, len(ring)/farEndSeconds), m: m, reportAt: int64(f.Rate)}
}

// next fills ref with the reference of the caller's next len(ref)/2
// samples and advances the clock past them.
func (f *farEnd) next(ref []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := int64(len(ref) / abi.SampleBytes)
	queued := f.end - f.heard
	sent := min(queued, n)
	f.sent += sent
	f.none += n - sent
	f.span(f.heard, len(ref), func(seg []byte, done int) {
		copy(ref[done:], seg)
		clear(seg)
	})
	f.heard += n
	f.end = max(f.end, f.heard)
	if f.heard >= f.reportAt {
		f.reportAt = f.heard + int64(f.format.Rate)
		if queued > 0 {
			f.m.queue.Observe(float64(queued) / float64(f.format.Rate))
		}
		f.report()
	}
}

// report adds what the timeline counted since the last report to its
// series.
func (f *farEnd) report() {
	rate := float64(f.format.Rate)
	f.m.sent.Add(float64(f.sent) / rate)
	f.m.none.Add(float64(f.none) / rate)
	f.m.dropped.Add(float64(f.dropped-f.reportedDrops) / rate)
	f.sent, f.none, f.reportedDrops = 0, 0, f.dropped
}

// span calls fn with the ring's bytes of n bytes of the timeline from
// sample at, in order (two pieces where they wrap), and the bytes before
// each.
func (f *farEnd) span(at int64, n int, fn func(seg []byte, done int)) {
	off := int(at*abi.SampleBytes) % len(f.ring)
	for done := 0; done < n; {
		seg := f.ring[off:min(off+n-done, len(f.ring))]
		fn(seg, done)
		done += len(seg)
		off = 0
	}
}

// wrotePCM places PCM16 the host wrote to the caller, at the caller's rate.
func (f *farEnd) wrotePCM(pcm []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.place(pcm)
}

// wrote places audio in the caller's codec the host wrote to the caller.
func (f *farEnd) wrote(payload []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	step := len(f.decoded) / abi.SampleBytes * f.format.SampleBytes()
	for len(payload) > 0 {
		chunk := payload[:min(len(payload), step)]
		n := f.format.Decode(f.decoded, chunk)
		f.place(f.decoded[:n])
		payload = payload[len(chunk):]
	}
}

// place writes pcm at the end of what is queued, as much as the ring
// reaches.
func (f *farEnd) place(pcm []byte) {
	start := max(f.end, f.heard)
	room := int(f.heard+int64(len(f.ring)/abi.SampleBytes)-start) * abi.SampleBytes
	keep := min(len(pcm), max(room, 0))
	f.dropped += int64((len(pcm) - keep) / abi.SampleBytes)
	f.span(start, keep, func(seg []byte, done int) { copy(seg, pcm[done:]) })
	f.end = start + int64(len(pcm)/abi.SampleBytes)
}

// clear empties what is queued for the caller: a barge-in's clear.
func (f *farEnd) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	queued := int(min(f.end-f.heard, int64(len(f.ring)/abi.SampleBytes))) * abi.SampleBytes
	f.span(f.heard, max(queued, 0), func(seg []byte, _ int) { clear(seg) })
	f.end = f.heard
}

// finish reports what the timeline counted since its last report, at the
// call's end, and says how many written samples lay beyond the ring's
// reach.
func (f *farEnd) finish() (dropped int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.report()
	return f.dropped
}
