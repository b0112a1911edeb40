package server

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/voxhost/voxhost/host/codec"
)

func pcmOf(v byte, samples int) []byte { return bytes.Repeat([]byte{v, 0}, samples) }

// testFarEnd is a timeline with series of its own.
func testFarEnd(f codec.Format) (*farEnd, *farEndMetrics) {
	m := newFarEndMetrics(prometheus.NewRegistry())
	return newFarEnd(f, m), m
}

// Audio sent ahead (a buffering carrier's queue) plays in order from the
// caller's clock; a clear empties what had not played; what lies beyond
// the ring's reach is counted and plays as silence.
func TestFarEndTimeline(t *testing.T) {
	f, m := testFarEnd(codec.Format{Encoding: codec.L16, Rate: 8000})
	ref := make([]byte, 320)
	f.wrotePCM(pcmOf(1, 160))
	f.wrotePCM(pcmOf(2, 160)) // sent ahead: plays after the first
	f.wrotePCM(pcmOf(3, 160))
	for _, want := range []byte{1, 2} {
		f.next(ref)
		if !bytes.Equal(ref, pcmOf(want, 160)) {
			t.Fatalf("reference %v…, want frames of %d", ref[:4], want)
		}
	}
	f.clear() // the third frame had not played
	f.next(ref)
	if !bytes.Equal(ref, make([]byte, 320)) {
		t.Fatalf("after a clear the reference is %v…, want silence", ref[:4])
	}
	// Written while the caller's clock stood at 480: plays from 480 on.
	f.wrotePCM(pcmOf(4, 80))
	f.next(ref)
	if !bytes.Equal(ref, append(pcmOf(4, 80), make([]byte, 160)...)) {
		t.Fatalf("a half frame written now: %v, want it then silence", ref)
	}
	// Five seconds sent ahead into a ring of four: one is lost.
	f.wrotePCM(pcmOf(5, 5*8000))
	if got := f.dropped; got != 8000 {
		t.Fatalf("dropped %d samples, want 8000", got)
	}
	for i := 0; i < 4*8000/160; i++ {
		f.next(ref)
		if !bytes.Equal(ref, pcmOf(5, 160)) {
			t.Fatalf("frame %d of the send-ahead: %v…", i, ref[:4])
		}
	}
	f.next(ref)
	if !bytes.Equal(ref, make([]byte, 320)) {
		t.Fatalf("past the ring's reach the reference is %v…, want silence", ref[:4])
	}
	// Of the 205 frames: 200 and a half had audio sent for them (the one
	// past the reach too: it was sent, and lost, which the dropped series
	// says), the rest none.
	if got := f.finish(); got != 8000 {
		t.Fatalf("finish says %d samples dropped, want 8000", got)
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"sent", testutil.ToFloat64(m.sent), (2*160 + 80 + 200*160 + 160) / 8000.0},
		{"none", testutil.ToFloat64(m.none), (160 + 80) / 8000.0},
		{"dropped", testutil.ToFloat64(m.dropped), 1},
	} {
		if d := c.got - c.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: %v s, want %v", c.what, c.got, c.want)
		}
	}
}

// An echo route's timeline: each frame's answer is written as the frame
// is answered, so from the second frame on the reference holds it, and
// the audio queued at a frame is always the one frame answered.
func TestFarEndOfAnEchoCountsEveryFrameButTheFirst(t *testing.T) {
	f, m := testFarEnd(codec.Telephony)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.queue)
	ref := make([]byte, 320)
	for range 150 { // 3 s
		f.next(ref)
		f.wrotePCM(pcmOf(9, 160))
	}
	f.finish()
	if sent, none := testutil.ToFloat64(m.sent), testutil.ToFloat64(m.none); sent < 2.98-1e-9 || sent > 2.98+1e-9 || none < 0.02-1e-9 || none > 0.02+1e-9 {
		t.Fatalf("sent %v s and none %v s, want 2.98 and 0.02", sent, none)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	h := families[0].GetMetric()[0].GetHistogram()
	// Seen once a second of the caller's clock, as it reaches 1, 2 and
	// 3 s: 20 ms queued each time.
	if h.GetSampleCount() != 3 || h.GetSampleSum() < 0.06-1e-9 || h.GetSampleSum() > 0.06+1e-9 {
		t.Fatalf("the queue was seen %d times summing %v s, want 3 times 20 ms", h.GetSampleCount(), h.GetSampleSum())
	}
}

// μ-law written to the caller is decoded into the reference.
func TestFarEndDecodesTheCallersCodec(t *testing.T) {
	f, _ := testFarEnd(codec.Telephony)
	pcm := pcmOf(0, 160)
	for i := range 160 {
		pcm[2*i] = byte(i * 7)
	}
	ulaw := make([]byte, 160)
	codec.EncodeUlaw(ulaw, pcm)
	want := make([]byte, 320)
	codec.DecodeUlaw(want, ulaw)
	f.wrote(ulaw)
	ref := make([]byte, 320)
	f.next(ref)
	if !bytes.Equal(ref, want) {
		t.Fatal("the reference is not the decoded μ-law the caller was sent")
	}
}

func TestFarEndCostsNoAllocation(t *testing.T) {
	f, _ := testFarEnd(codec.Telephony)
	ulaw, ref := make([]byte, 160), make([]byte, 320)
	if n := testing.AllocsPerRun(1000, func() { f.wrote(ulaw); f.next(ref) }); n != 0 {
		t.Fatalf("%.1f allocations a frame", n)
	}
}

// BenchmarkFarEndFrame is a relayed μ-law frame's far-end work: the
// playout's write (decoded into the timeline) and the inbound frame's
// read, the second's report included once in 50 frames.
func BenchmarkFarEndFrame(b *testing.B) {
	f, _ := testFarEnd(codec.Telephony)
	ulaw, ref := make([]byte, 160), make([]byte, 320)
	b.ReportAllocs()
	for b.Loop() {
		f.wrote(ulaw)
		f.next(ref)
	}
}
