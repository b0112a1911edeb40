package server

import (
	"context"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
)

// BenchmarkTapFrame is what a μ-law frame's tap costs the call's
// goroutine: with nobody watching, and with one viewer (its copy of the
// three streams, and the viewer's read of them a batch of 10 frames at a
// time, as a viewer woken once per write of the network may find them).
func BenchmarkTapFrame(b *testing.B) {
	raw, ref, pcm := make([]byte, 160), make([]byte, 320), make([]byte, 320)
	newCall := func() *call {
		c := &call{format: codec.Telephony, maxFrameMs: 20, done: make(chan struct{})}
		c.view.Store(&callView{})
		return c
	}
	b.Run("nobody", func(b *testing.B) {
		c := newCall()
		b.ReportAllocs()
		for b.Loop() {
			c.audioMs += 20
			c.tap(raw, ref, pcm)
		}
	})
	b.Run("one-viewer", func(b *testing.B) {
		c := newCall()
		t := &Tap{c: c, caller: c.format, wake: make(chan struct{}, 1), front: make([]byte, 0, 1<<16), back: make([]byte, 0, 1<<16), decoded: make([]byte, 320)}
		c.taps.Store(&[]*Tap{t})
		drop := func(TapFrame) {}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			c.audioMs += 20
			c.tap(raw, ref, pcm)
			if n++; n%10 == 0 {
				_ = t.Read(context.Background(), drop)
			}
		}
	})
}
