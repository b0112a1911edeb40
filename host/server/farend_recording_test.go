package server_test

import (
	"bytes"
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/internal/audiofile"
)

// TestRecordedReferenceIsWhatThePluginGot relays a call, over real
// sockets, to a bot that talks (known audio, sent ahead a second at a
// time as a TTS streams), through refecho, a plugin that answers each
// frame with its far-end reference. The recording's reference stream must
// be what the plugin got, frame for frame: the plugin's output (the
// caller_processed stream, and what the bot heard, μ-law coded), and in
// order the bot's own audio, with silence only where nothing played.
func TestRecordedReferenceIsWhatThePluginGot(t *testing.T) {
	const frameLen, frames = 160, 150 // 3 s
	dir := t.TempDir()
	relay := refechoRelay(t, 5, "ref-relay", &recording.Spec{Dir: dir, Streams: []recording.Stream{recording.Caller, recording.CallerProcessed, recording.Reference}, MinFreeBytes: 1})
	h, botUlaw, botHeard := relay.h, relay.botUlaw, relay.botHeard
	sent := ulawSpeech(float64(frames*frameLen) / 8000)
	relay.talk(t, sent)
	assertMetric(t, h, `voxhost_recordings_total{outcome="complete"} 1`)
	got := readRecorded(t, dir, "ref-relay")
	sameSamples(t, "caller", got["caller"], ulawLinears(sent))
	ref, out := got["reference"], got["caller_processed"]
	if len(ref) != len(sent) || len(out) != len(sent) {
		t.Fatalf("reference %d and caller_processed %d samples, want one per caller sample (%d)", len(ref), len(out), len(sent))
	}
	heard := botHeard()[:len(sent)]
	pcm := make([]byte, 2*frameLen)
	want := make([]byte, frameLen)
	for k := 0; k < frames; k++ {
		fr := ref[k*frameLen : (k+1)*frameLen]
		if !slices.Equal(fr, out[k*frameLen:(k+1)*frameLen]) {
			t.Fatalf("frame %d: the recorded reference is not what the plugin got (its output)", k)
		}
		for i, v := range fr {
			pcm[2*i], pcm[2*i+1] = byte(v), byte(uint16(v)>>8)
		}
		codec.EncodeUlaw(want, pcm)
		if !bytes.Equal(heard[k*frameLen:(k+1)*frameLen], want) {
			t.Fatalf("frame %d: the bot heard other than the recorded reference, μ-law coded", k)
		}
	}
	// The reference is the bot's audio as the caller played it: in order,
	// with silence where nothing played (before the bot's first frame,
	// and where the playout fell behind the caller's clock).
	nonzero := func(s []int16) []int16 {
		return slices.DeleteFunc(slices.Clone(s), func(v int16) bool { return v == 0 })
	}
	r, b := nonzero(ref), nonzero(ulawLinears(botUlaw))
	if len(r) < 8000 || !slices.Equal(r, b[:len(r)]) {
		t.Fatalf("the reference's %d non-silent samples are not the first of the bot's audio, in order (want at least a second of it)", len(r))
	}
	first := slices.IndexFunc(ref, func(v int16) bool { return v != 0 })
	waitFor(t, func() bool {
		return counter(t, h, `voxhost_far_end_seconds_total{reference="sent"}`)+counter(t, h, `voxhost_far_end_seconds_total{reference="none"}`) >= 3-1e-9
	})
	sentSec, none := counter(t, h, `voxhost_far_end_seconds_total{reference="sent"}`), counter(t, h, `voxhost_far_end_seconds_total{reference="none"}`)
	if math.Abs(sentSec+none-3) > 1e-9 || sentSec < float64(len(r))/8000-1e-9 {
		t.Fatalf("voxhost_far_end_seconds_total: sent %v s, none %v s; want 3 s in all, at least the %v s the reference held", sentSec, none, float64(len(r))/8000)
	}
	t.Logf("the recorded reference is what the plugin got, all %d frames; the bot's audio plays from %d ms of the caller's clock; sent %.2f s, none %.2f s",
		frames, first/8, sentSec, none)
}

// talkingRelay is a call relayed to a bot that talks, through refecho.
type talkingRelay struct {
	h *testHost
	c *websocket.Conn
	// botUlaw is what the bot says; botHeard what it has heard so far.
	botUlaw  []byte
	botHeard func() []byte
}

// refechoRelay places the call id, recorded by spec, on a route through
// refecho (which answers each frame with its far-end reference) to a bot
// that says the first seconds of bot_8k.wav (known audio, sent ahead a
// second at a time as a TTS streams; not the caller's voice, so that a
// reference fed from the wrong direction shows); the caller's side reads
// what it is sent.
func refechoRelay(t *testing.T, seconds int, id string, spec *recording.Spec) *talkingRelay {
	t.Helper()
	botPCM, rate, err := audiofile.ReadPCM("../../plugins/aec/testdata/bot_8k.wav")
	if err != nil || rate != 8000 || len(botPCM) < 2*seconds*8000 {
		t.Fatalf("fixture: %d samples at %d Hz, %v", len(botPCM)/2, rate, err)
	}
	botUlaw := make([]byte, seconds*8000)
	codec.EncodeUlaw(botUlaw, botPCM[:2*len(botUlaw)])
	bot, botHeard := speakingBot(t, botUlaw)
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: testdataPlugin("refecho"), upstream: upstream(t, bot.url, "raw")}},
		recordMain(spec))
	c := dial(t, h.url+"/ws?call_id="+id)
	t.Cleanup(func() { c.CloseNow() })
	go func() {
		for {
			if _, _, err := c.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	return &talkingRelay{h: h, c: c, botUlaw: botUlaw, botHeard: botHeard}
}

// talk sends sent a 20 ms frame at a time in real time, so that the
// caller's clock and the playout's run together as on a phone, waits until
// the bot heard all of it, and hangs up.
func (r *talkingRelay) talk(t *testing.T, sent []byte) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for off := 0; off < len(sent); off += 160 {
		<-tick.C
		if err := r.c.Write(context.Background(), websocket.MessageBinary, sent[off:off+160]); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return len(r.botHeard()) >= len(sent) })
	r.c.Close(websocket.StatusNormalClosure, "")
}
