package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/internal/signal"
)

// tapFrame is a server.TapFrame with its own copies of the streams.
type tapFrame struct {
	atMs                         int64
	lost                         int
	caller, reference, processed []byte
}

// readTap reads what the tap has buffered (waiting for it, up to 10 s).
func readTap(t *testing.T, tap *server.Tap) ([]tapFrame, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []tapFrame
	err := tap.Read(ctx, func(f server.TapFrame) {
		out = append(out, tapFrame{f.AtMs, f.Lost, bytes.Clone(f.Caller), bytes.Clone(f.Reference), bytes.Clone(f.Processed)})
	})
	return out, err
}

// openTap opens a tap of the call id, once its stream has started.
func openTap(t *testing.T, h *testHost, id string) *server.Tap {
	t.Helper()
	var tap *server.Tap
	waitFor(t, func() bool {
		var err error
		tap, err = h.Tap(id)
		return err == nil
	})
	t.Cleanup(tap.Close)
	return tap
}

// TestTapFeedsWhatTheCallRan taps an echo call through aec over a real
// WebSocket: each frame the viewer gets is the caller's frame as sent
// (μ-law decoded here by the standard's formula), aec's output (which,
// μ-law coded, is what came back to the client) and the far-end reference
// aec got with it, which in an echo is the route's output one frame late
// (ABI §11), silence first; on the caller's clock, 20 ms apart, none lost.
// When the call ends the tap says so.
func TestTapFeedsWhatTheCallRan(t *testing.T) {
	h := newHost(t, map[string]string{"main": "aec budget_ms=100"}, nil)
	c := dial(t, h.url+"/ws?call_id=tap-aec")
	defer c.CloseNow()
	tap := openTap(t, h, "tap-aec")
	if info := tap.Info(); info != (server.TapInfo{CallID: "tap-aec", CallerRate: 8000, ProcessedRate: 8000, Reference: true}) {
		t.Fatalf("the tap says %+v", info)
	}
	sent := ulawSpeech(1.5)
	var frames []tapFrame
	var received []byte
	for off := 0; off < len(sent); off += 160 {
		received = append(received, echoFrames(t, c, sent[off:off+160], 160)...)
		// The frame is buffered for the viewer before it is answered.
		got, err := readTap(t, tap)
		if err != nil || len(got) != 1 {
			t.Fatalf("frame %d: the tap gave %d frames, %v; want the one just answered", off/160, len(got), err)
		}
		frames = append(frames, got...)
	}
	silence := make([]byte, 320)
	for k, f := range frames {
		if f.atMs != int64(20*k) || f.lost != 0 {
			t.Fatalf("frame %d is at %d ms, %d lost before it; want at %d ms, none lost", k, f.atMs, f.lost, 20*k)
		}
		sameSamples(t, fmt.Sprintf("frame %d's caller stream", k), signal.Samples(f.caller), ulawLinears(sent[160*k:160*(k+1)]))
		coded := make([]byte, 160)
		if codec.EncodeUlaw(coded, f.processed) != 160 || !bytes.Equal(coded, received[160*k:160*(k+1)]) {
			t.Fatalf("frame %d: aec's output on the tap, μ-law coded, is not what came back to the caller", k)
		}
		want := silence
		if k > 0 {
			want = frames[k-1].processed
		}
		if !bytes.Equal(f.reference, want) {
			t.Fatalf("frame %d: the reference on the tap is not the route's output of frame %d", k, k-1)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	for {
		got, err := readTap(t, tap)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || len(got) > 0 {
			t.Fatalf("after the call's last frame the tap gave %d frames, %v; want io.EOF", len(got), err)
		}
	}
}

// TestTapBounds: a call without a far-end timeline is tapped without a
// reference; a call feeds MaxTapsPerCall viewers and the server MaxTaps,
// and the next is refused until one closes; a viewer that does not read
// neither slows the call nor grows: past its buffer the frames are
// dropped, and the next frame it gets says how many; an id that is not
// live is refused.
func TestTapBounds(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	if _, err := h.Tap("nobody"); !errors.Is(err, server.ErrNoLiveCall) {
		t.Fatalf("tapping a call that does not exist: %v", err)
	}
	c := dial(t, h.url+"/ws?call_id=tap-0")
	defer c.CloseNow()
	idle := openTap(t, h, "tap-0")
	if idle.Info().Reference {
		t.Fatal("a passthrough echo has no far-end timeline, and its tap says it has")
	}
	for i := 1; i < server.MaxTapsPerCall; i++ {
		openTap(t, h, "tap-0")
	}
	if _, err := h.Tap("tap-0"); !errors.Is(err, server.ErrTapLimit) {
		t.Fatalf("tap %d of one call: %v, want ErrTapLimit", server.MaxTapsPerCall+1, err)
	}
	// The idle viewer never reads while 3 s of frames go by: every one
	// is still answered.
	sent := ulawSpeech(3)
	sameSamples(t, "with a viewer that does not read, the echo", ulawLinears(echoFrames(t, c, sent, 160)), ulawLinears(sent))
	kept, err := readTap(t, idle)
	if err != nil || len(kept) < 40 || len(kept) >= 150 {
		t.Fatalf("the idle viewer's buffer held %d of 150 frames (%v); want about a second of them", len(kept), err)
	}
	for k, f := range kept {
		if f.atMs != int64(20*k) || len(f.reference) != 0 || !bytes.Equal(f.processed, f.caller) {
			t.Fatalf("kept frame %d: at %d ms, %d reference bytes; want at %d ms, none, the caller's audio passed through", k, f.atMs, len(f.reference), 20*k)
		}
	}
	echoFrames(t, c, sent[:160], 160)
	next, err := readTap(t, idle)
	if err != nil || len(next) != 1 || next[0].atMs != 3000 || next[0].lost != 150-len(kept) {
		t.Fatalf("after the gap the tap gave %+v, %v; want the frame at 3000 ms with %d lost before it", next, err, 150-len(kept))
	}
	assertMetric(t, h, fmt.Sprintf("voxhost_tap_lost_frames_total %d", 150-len(kept)))
	assertMetric(t, h, fmt.Sprintf("voxhost_taps %d", server.MaxTapsPerCall))
	idle.Close()
	idle.Close()
	assertMetric(t, h, fmt.Sprintf("voxhost_taps %d", server.MaxTapsPerCall-1))
	openTap(t, h, "tap-0") // the closed one's place

	// The server's bound, over further calls.
	for n := server.MaxTapsPerCall; n < server.MaxTaps; n += server.MaxTapsPerCall {
		id := fmt.Sprintf("tap-%d", n)
		cn := dial(t, h.url+"/ws?call_id="+id)
		defer cn.CloseNow()
		for i := 0; i < server.MaxTapsPerCall; i++ {
			openTap(t, h, id)
		}
	}
	last := dial(t, h.url+"/ws?call_id=tap-last")
	defer last.CloseNow()
	echoFrames(t, last, sent[:160], 160) // its stream started
	if _, err := h.Tap("tap-last"); !errors.Is(err, server.ErrTapLimit) {
		t.Fatalf("tap %d of the server: %v, want ErrTapLimit", server.MaxTaps+1, err)
	}
}

// TestTappedCallAllocatesNothingPerFrame counts the process's allocations
// per frame of an echo call with a far-end reference (refsub) while a
// viewer reads its tap, and again after the viewer closed it.
func TestTappedCallAllocatesNothingPerFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over thousands of frames")
	}
	h := newHost(t, map[string]string{"main": pluginFixture("refsub")}, nil)
	c := dial(t, h.url+"/ws?call_id=tap-alloc")
	defer c.CloseNow()
	tap := openTap(t, h, "tap-alloc")
	ctx, cancel := context.WithCancel(context.Background())
	read := make(chan int)
	go func() {
		n := 0
		count := func(server.TapFrame) { n++ }
		for tap.Read(ctx, count) == nil {
		}
		read <- n
	}()
	noAllocsPerFrame(t, c, websocket.MessageBinary, ulawSpeech(0.02))
	cancel()
	if n := <-read; n < 3000 {
		t.Errorf("the viewer read %d frames of 3,200", n)
	}
	tap.Close()
	noAllocsPerFrame(t, c, websocket.MessageBinary, ulawSpeech(0.02))
}

// TestTapOfARelayIsTheRecordedTimeline relays a call to a bot that talks,
// through refecho (which answers each frame with its reference), recording
// the reference, with a viewer reading the tap from the start: frame for
// frame the tap's reference is the recording's (one timeline, not a
// second alignment), and the inbound output is that reference (what
// refecho got), while the bot talks in it.
func TestTapOfARelayIsTheRecordedTimeline(t *testing.T) {
	const frameLen, frames = 160, 100 // 2 s
	dir := t.TempDir()
	r := refechoRelay(t, 4, "tap-relay", &recording.Spec{Dir: dir, Streams: []recording.Stream{recording.Reference}, MinFreeBytes: 1})
	h := r.h
	tap := openTap(t, h, "tap-relay")
	if !tap.Info().Reference {
		t.Fatal("a route whose plugin asks for the reference is tapped without it")
	}
	viewed := make(chan []tapFrame, 1)
	go func() {
		var got []tapFrame
		for {
			err := tap.Read(context.Background(), func(f server.TapFrame) {
				got = append(got, tapFrame{f.AtMs, f.Lost, nil, bytes.Clone(f.Reference), bytes.Clone(f.Processed)})
			})
			if err != nil {
				viewed <- got
				return
			}
		}
	}()
	sent := ulawSpeech(float64(frames*frameLen) / 8000)
	r.talk(t, sent)
	got := <-viewed
	assertMetric(t, h, `voxhost_recordings_total{outcome="complete"} 1`)
	recorded := readRecorded(t, dir, "tap-relay")["reference"]
	if len(got) != frames || len(recorded) != len(sent) {
		t.Fatalf("the tap gave %d frames and the recording holds %d reference samples; want %d frames, %d samples", len(got), len(recorded), frames, len(sent))
	}
	playing := 0
	for k, f := range got {
		want := recorded[k*frameLen : (k+1)*frameLen]
		if f.atMs != int64(20*k) || f.lost != 0 {
			t.Fatalf("frame %d at %d ms, %d lost", k, f.atMs, f.lost)
		}
		sameSamples(t, fmt.Sprintf("frame %d's reference on the tap, against the recording's", k), signal.Samples(f.reference), want)
		if !bytes.Equal(f.processed, f.reference) {
			t.Fatalf("frame %d: refecho's output on the tap is not its reference", k)
		}
		if slices.ContainsFunc(want, func(v int16) bool { return v != 0 }) {
			playing++
		}
	}
	if playing < frames/2 {
		t.Fatalf("the bot plays in %d of %d frames of the reference; want it talking through most of the call", playing, frames)
	}
	t.Logf("the tap's reference is the recording's in all %d frames; the bot plays in %d", frames, playing)
}
