package server

import (
	"bytes"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
)

func pcmOf(v byte, samples int) []byte { return bytes.Repeat([]byte{v, 0}, samples) }

// Audio sent ahead (a buffering carrier's queue) plays in order from the
// caller's clock; a clear empties what had not played; what lies beyond
// the ring's reach is counted and plays as silence.
func TestFarEndTimeline(t *testing.T) {
	f := newFarEnd(codec.Format{Encoding: codec.L16, Rate: 8000})
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
	if got := f.droppedSamples(); got != 8000 {
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
}

// μ-law written to the caller is decoded into the reference.
func TestFarEndDecodesTheCallersCodec(t *testing.T) {
	f := newFarEnd(codec.Telephony)
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
	f := newFarEnd(codec.Telephony)
	ulaw, ref := make([]byte, 160), make([]byte, 320)
	if n := testing.AllocsPerRun(1000, func() { f.wrote(ulaw); f.next(ref) }); n != 0 {
		t.Fatalf("%.1f allocations a frame", n)
	}
}
