package server_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/internal/signal"
)

// An echo route's far end is its own output: refsub (the reference
// subtracted from the frame) in the inbound pipeline makes out[k] = in[k] -
// out[k-1], since the output of frame k-1 is what the caller plays during
// frame k (ABI §11): checked over a real WebSocket against that recurrence,
// computed here.
func TestEchoRouteReferenceIsItsOutput(t *testing.T) {
	h := newHost(t, map[string]string{"main": pluginFixture("refsub")}, nil)
	ulaw := ulawSpeech(1)
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	ctx := context.Background()
	prev := make([]int16, 160)
	for off := 0; off < len(ulaw); off += 160 {
		if err := c.Write(ctx, websocket.MessageBinary, ulaw[off:off+160]); err != nil {
			t.Fatal(err)
		}
		_, msg := readMessage(t, c)
		in := make([]byte, 320)
		codec.DecodeUlaw(in, ulaw[off:off+160])
		out := make([]byte, 320)
		for i, s := range signal.Samples(in) {
			v := max(-32768, min(32767, int(s)-int(prev[i])))
			out[2*i], out[2*i+1] = byte(v), byte(v>>8)
		}
		want := make([]byte, 160)
		codec.EncodeUlaw(want, out)
		if !bytes.Equal(msg, want) {
			t.Fatalf("frame %d is not the frame less the output before it", off/160)
		}
		prev = signal.Samples(out)
	}
	c.Close(websocket.StatusNormalClosure, "done")
}
