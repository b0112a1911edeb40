package server_test

import (
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/server"
)

var allStreams = []recording.Stream{recording.Caller, recording.CallerProcessed, recording.Heard, recording.Reference}

// recordMain records the route "main" of a host's options by spec.
func recordMain(spec *recording.Spec) func(*server.Options) {
	return func(o *server.Options) { o.Routes["main"].Recording = spec }
}

// ulawLinear decodes one G.711 μ-law byte as the standard's formula does,
// independently of host/codec's tables.
func ulawLinear(u byte) int16 {
	u = ^u
	t := (int(u&0x0F)<<3 + 0x84) << ((u >> 4) & 7)
	if u&0x80 != 0 {
		return int16(0x84 - t)
	}
	return int16(t - 0x84)
}

func ulawLinears(ulaw []byte) []int16 {
	out := make([]int16, len(ulaw))
	for i, u := range ulaw {
		out[i] = ulawLinear(u)
	}
	return out
}

// readRecorded reads the one recording of id in dir: each stream's
// samples, after checking that its header is the canonical one and counts
// exactly the bytes the file holds.
func readRecorded(t *testing.T, dir, id string) map[string][]int16 {
	t.Helper()
	recs, err := recording.Find([]string{dir}, id)
	if err != nil || len(recs) != 1 {
		t.Fatalf("recordings of %s in %s: %v, %v", id, dir, recs, err)
	}
	out := map[string][]int16{}
	for _, f := range recs[0].Files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		le := binary.LittleEndian
		if len(b) < 44 || string(b[0:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " || string(b[36:40]) != "data" ||
			le.Uint32(b[4:]) != uint32(len(b)-8) || le.Uint32(b[40:]) != uint32(len(b)-44) ||
			le.Uint16(b[20:]) != 1 || le.Uint16(b[22:]) != 1 || le.Uint16(b[34:]) != 16 || le.Uint32(b[24:]) != 8000 {
			t.Fatalf("%s: not a whole 8 kHz mono PCM16 WAV file whose header counts its %d bytes: % x", f.Name, len(b), b[:min(len(b), 44)])
		}
		pcm := make([]int16, (len(b)-44)/2)
		for i := range pcm {
			pcm[i] = int16(le.Uint16(b[44+2*i:]))
		}
		out[f.Stream] = pcm
	}
	return out
}

func sameSamples(t *testing.T, what string, got, want []int16) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d samples, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: sample %d is %d, want %d", what, i, got[i], want[i])
		}
	}
}

// echoFrames sends frames over c (raw, binary μ-law) and returns what
// came back, one message per frame.
func echoFrames(t *testing.T, c *websocket.Conn, ulaw []byte, frame int) []byte {
	t.Helper()
	ctx := context.Background()
	var got []byte
	for off := 0; off < len(ulaw); off += frame {
		if err := c.Write(ctx, websocket.MessageBinary, ulaw[off:off+frame]); err != nil {
			t.Fatal(err)
		}
		_, msg := readMessage(t, c)
		got = append(got, msg...)
	}
	return got
}

// TestRecordingOfAnEchoCall records every stream of an echo call over a
// real WebSocket and compares each file, sample for sample, with the
// μ-law the client sent and received, decoded here.
func TestRecordingOfAnEchoCall(t *testing.T) {
	dir := t.TempDir()
	h := newHost(t, map[string]string{"main": "passthrough"}, recordMain(&recording.Spec{Dir: dir, Streams: allStreams, MinFreeBytes: 1}))
	sent := ulawSpeech(1.5)
	c := dial(t, h.url+"/ws?call_id=rec-echo")
	received := echoFrames(t, c, sent, 160)
	// The live call says what it records, and under which id.
	if calls := h.Calls(); len(calls) != 1 || !slices.Equal(calls[0].Recorded, []string{"caller", "caller_processed", "heard", "reference"}) || calls[0].RecordingID != "rec-echo" {
		t.Errorf("the live call: %+v; want it recording every stream as rec-echo", calls)
	}
	c.Close(websocket.StatusNormalClosure, "")
	assertMetric(t, h, `voxhost_recordings_total{outcome="complete"} 1`)

	got := readRecorded(t, dir, "rec-echo")
	caller := ulawLinears(sent)
	sameSamples(t, "caller", got["caller"], caller)
	sameSamples(t, "caller_processed", got["caller_processed"], caller) // passthrough at 8 kHz
	heard := ulawLinears(received)
	sameSamples(t, "heard", got["heard"], heard)
	// The far-end timeline of an echo (ABI §11): the route's output for
	// frame k-1 (PCM16, before it is μ-law coded for the caller) is what
	// the caller plays during frame k; silence during the first.
	sameSamples(t, "reference", got["reference"], append(make([]int16, 160), caller[:len(caller)-160]...))
	// Every frame but the first had the answer before it as its reference.
	waitFor(t, func() bool {
		return math.Abs(counter(t, h, `voxhost_far_end_seconds_total{reference="sent"}`)-1.48) < 1e-9
	})
	assertMetric(t, h, `voxhost_far_end_seconds_total{reference="none"} 0.02`)
}

// echoBot serves a raw bot that sends back each binary message as it
// came, and returns its ws:// URL. Its reads allocate nothing.
func echoBot(t *testing.T) string {
	bot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		buf := make([]byte, 4096)
		for {
			typ, n, err := readInto(conn, buf)
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary && conn.Write(context.Background(), typ, buf[:n]) != nil {
				return
			}
		}
	}))
	t.Cleanup(bot.Close)
	return "ws" + strings.TrimPrefix(bot.URL, "http")
}

// TestRecordingOfARelayedCall records a call relayed to a bot that sends
// back what it hears: the caller's streams are what it sent, what it
// heard is what it received, and the reference is that heard audio in
// order, on the caller's clock (farend_recording_test.go checks it is what
// a plugin gets).
func TestRecordingOfARelayedCall(t *testing.T) {
	dir := t.TempDir()
	up := upstream(t, echoBot(t), "raw")
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: up}},
		recordMain(&recording.Spec{Dir: dir, Streams: allStreams, MinFreeBytes: 1}))
	sent := ulawSpeech(1)
	c := dial(t, h.url+"/ws?call_id=rec-relay")
	// The playout paces the bot's answer at real time: a frame is sent
	// when the answer to the one before came back, so the reference has
	// something to take, and the call goes on until all of it came.
	received := echoFrames(t, c, sent, 160)
	for len(received) < len(sent) {
		_, msg := readMessage(t, c)
		received = append(received, msg...)
	}
	c.Close(websocket.StatusNormalClosure, "")
	assertMetric(t, h, `voxhost_recordings_total{outcome="complete"} 1`)

	got := readRecorded(t, dir, "rec-relay")
	caller := ulawLinears(sent)
	sameSamples(t, "caller", got["caller"], caller)
	sameSamples(t, "caller_processed", got["caller_processed"], caller)
	heard := ulawLinears(received)
	if len(got["heard"]) < len(heard) {
		t.Fatalf("heard: %d samples, but the caller received %d", len(got["heard"]), len(heard))
	}
	// What went out after the client stopped reading is recorded too.
	sameSamples(t, "heard (what the client read of it)", got["heard"][:len(heard)], heard)
	ref := got["reference"]
	if len(ref) != len(caller) {
		t.Fatalf("reference: %d samples, want one per caller sample (%d)", len(ref), len(caller))
	}
	nonzero := func(s []int16) []int16 {
		return slices.DeleteFunc(slices.Clone(s), func(v int16) bool { return v == 0 })
	}
	r, hd := nonzero(ref), nonzero(got["heard"])
	if len(r) == 0 || len(r) > len(hd) || !slices.Equal(r, hd[:len(r)]) {
		t.Fatalf("reference: its %d non-silent samples are not the first of heard's %d, in order", len(r), len(hd))
	}
}

// TestRecordingStopsAtMaxDuration cuts each file at max_seconds; the
// call goes on to its end.
func TestRecordingStopsAtMaxDuration(t *testing.T) {
	dir := t.TempDir()
	h := newHost(t, map[string]string{"main": "passthrough"},
		recordMain(&recording.Spec{Dir: dir, Streams: []recording.Stream{recording.Caller, recording.Heard}, MaxDuration: time.Second, MinFreeBytes: 1}))
	sent := ulawSpeech(2.5)
	c := dial(t, h.url+"/ws?call_id=rec-cut")
	received := echoFrames(t, c, sent, 160)
	sameSamples(t, "the call's echo", ulawLinears(received), ulawLinears(sent))
	c.Close(websocket.StatusNormalClosure, "")
	assertMetric(t, h, `voxhost_recordings_total{outcome="max_duration"} 1`)
	got := readRecorded(t, dir, "rec-cut")
	sameSamples(t, "caller", got["caller"], ulawLinears(sent[:8000]))
	sameSamples(t, "heard", got["heard"], ulawLinears(sent[:8000]))
}

// TestFullDiskStopsTheRecordingNotTheCall lets the disk-free floor be
// crossed in the middle of a call: the recording stops, once, with what
// it wrote in a valid file; the call goes on to its end, every frame
// echoed.
func TestFullDiskStopsTheRecordingNotTheCall(t *testing.T) {
	dir := t.TempDir()
	var full atomic.Bool
	spec := &recording.Spec{Dir: dir, MinFreeBytes: 1 << 20, FreeBytes: func(string) (uint64, error) {
		if full.Load() {
			return 1 << 10, nil
		}
		return 1 << 40, nil
	}}
	logs := &lockedBuffer{}
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) {
		recordMain(spec)(o)
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	sent := ulawSpeech(3)
	c := dial(t, h.url+"/ws?call_id=rec-full")
	first := echoFrames(t, c, sent[:8000], 160)
	callerFile := func() int64 {
		recs, _ := recording.Find([]string{dir}, "rec-full")
		if len(recs) != 1 || len(recs[0].Files) == 0 {
			return 0
		}
		return recs[0].Files[0].Bytes
	}
	waitFor(t, func() bool { return callerFile() > 44 }) // the writer has written some
	full.Store(true)
	waitFor(t, func() bool { return strings.Count(logs.String(), "recording stopped") > 0 })
	rest := echoFrames(t, c, sent[8000:], 160)
	sameSamples(t, "the call's echo", ulawLinears(append(first, rest...)), ulawLinears(sent))
	c.Close(websocket.StatusNormalClosure, "")
	assertMetric(t, h, `voxhost_recordings_total{outcome="disk_floor"} 1`)
	waitFor(t, func() bool { return strings.Count(logs.String(), "call ended") == 1 })
	if n := strings.Count(logs.String(), "recording stopped"); n != 1 {
		t.Fatalf("%d log lines say the recording stopped, want 1", n)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "call ended") && !strings.Contains(line, "recording=disk_floor") {
			t.Errorf("the call's last line does not say how its recording ended: %s", line)
		}
	}
	got := readRecorded(t, dir, "rec-full")
	caller := ulawLinears(sent)
	n := len(got["caller"])
	if n == 0 || n >= len(caller) {
		t.Fatalf("caller: %d samples recorded of %d; want a part", n, len(caller))
	}
	sameSamples(t, "caller (what was recorded before the floor)", got["caller"], caller[:n])
}

// TestRecordingBelowTheRealFloorRecordsNothing sets the floor above the
// file system's real free space: no audio is written, the call goes on.
func TestRecordingBelowTheRealFloorRecordsNothing(t *testing.T) {
	dir := t.TempDir()
	h := newHost(t, map[string]string{"main": "passthrough"}, recordMain(&recording.Spec{Dir: dir, MinFreeBytes: 1 << 62}))
	sent := ulawSpeech(0.6)
	c := dial(t, h.url+"/ws?call_id=rec-floor")
	sameSamples(t, "the call's echo", ulawLinears(echoFrames(t, c, sent, 160)), ulawLinears(sent))
	c.Close(websocket.StatusNormalClosure, "")
	assertMetric(t, h, `voxhost_recordings_total{outcome="disk_floor"} 1`)
	for s, pcm := range readRecorded(t, dir, "rec-floor") {
		if len(pcm) != 0 {
			t.Errorf("%s: %d samples written below the floor", s, len(pcm))
		}
	}
}

// TestRecordingNamesCannotEscapeTheDirectory gives calls ids that would
// name other places: every file lands in the directory, under its
// escaped name, and is found by the id.
func TestRecordingNamesCannotEscapeTheDirectory(t *testing.T) {
	dir := t.TempDir()
	h := newHost(t, map[string]string{"main": "passthrough"}, recordMain(&recording.Spec{Dir: filepath.Join(dir, "rec"), MinFreeBytes: 1}))
	sent := ulawSpeech(0.1)
	for i, id := range []string{"..", ".hidden", "a:b.c_d"} {
		c := dial(t, h.url+"/ws?call_id="+id)
		echoFrames(t, c, sent, 160)
		c.Close(websocket.StatusNormalClosure, "")
		assertMetric(t, h, `voxhost_recordings_total{outcome="complete"} `+string(rune('1'+i)))
		if recs, err := recording.Find([]string{filepath.Join(dir, "rec")}, id); err != nil || len(recs) != 1 {
			t.Fatalf("id %q: %v, %v", id, recs, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "rec" {
		t.Fatalf("files outside the recording directory: %v", entries)
	}
	files, _ := os.ReadDir(filepath.Join(dir, "rec"))
	for _, f := range files {
		if strings.HasPrefix(f.Name(), ".") || strings.Count(f.Name(), ".") != 3 {
			t.Errorf("file %q: want ID.STARTED.STREAM.wav with the id escaped", f.Name())
		}
	}
	if len(files) != 6 {
		t.Fatalf("%d files, want 2 for each of 3 calls", len(files))
	}
}

// TestRecordingAllocatesNothingPerFrame counts the process's heap
// allocations over thousands of frames of an echo call recording every
// stream. The client sends as fast as loopback carries, some thirty times
// real time, so the call's buffers also fill and drop (written as
// silence) between the writer's turns: neither path may allocate, and the
// call's echo stays whole.
func TestRecordingAllocatesNothingPerFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over thousands of frames")
	}
	h := newHost(t, map[string]string{"main": "gain db=-6 | passthrough"},
		recordMain(&recording.Spec{Dir: t.TempDir(), Streams: allStreams, MinFreeBytes: 1}))
	c := dial(t, h.url+"/ws?call_id=rec-alloc")
	defer c.CloseNow()
	noAllocsPerFrame(t, c, websocket.MessageBinary, ulawSpeech(0.02))
	c.Close(websocket.StatusNormalClosure, "")
	assertMetric(t, h, `voxhost_recordings_total{outcome="complete"} 1`)
	if strings.Contains(metrics(t, h), "voxhost_recording_dropped_seconds_total 0\n") {
		t.Error("no audio dropped at thirty times real time: the test did not reach the full-buffer path")
	}
}

// TestRecordedRelayAllocatesNothingPerFrame is the same count for a
// relayed call recording every stream: a Twilio caller (sent ahead of
// real time, so the test takes no minute) through a raw bot that echoes,
// the heard stream taken from the playout.
func TestRecordedRelayAllocatesNothingPerFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over thousands of frames")
	}
	up := upstream(t, echoBot(t), "raw")
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: up}}, func(o *server.Options) {
		recordMain(&recording.Spec{Dir: t.TempDir(), Streams: allStreams, MinFreeBytes: 1})(o)
		o.SendAhead = time.Hour
	})
	c := dial(t, h.url+"/twilio")
	defer c.CloseNow()
	twilioCallerStart(t, c, `{}`)
	noAllocsPerFrame(t, c, websocket.MessageText, twilioMedia("MZ00000000000000000000000000000001", ulawSpeech(0.02)))
	c.Close(websocket.StatusNormalClosure, "")
	assertMetric(t, h, `voxhost_recordings_total{outcome="complete"} 1`)
}

// noAllocsPerFrame sends msg and reads the answer over c 3,000 times
// after a warm-up, and fails if the process allocated once per frame.
// AllocsPerRun counts the whole process's allocations and rounds the mean
// down: 0 means fewer than one per frame, and one on the frame path would
// count at least one per frame.
func noAllocsPerFrame(t *testing.T, c *websocket.Conn, typ websocket.MessageType, msg []byte) {
	t.Helper()
	buf := make([]byte, 4096)
	roundTrip := func() {
		if err := c.Write(context.Background(), typ, msg); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readInto(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ {
		roundTrip()
	}
	if perFrame := testing.AllocsPerRun(3000, roundTrip); perFrame > 0 {
		t.Fatalf("%.0f allocations per frame with recording on; a call must allocate nothing per frame in either direction", perFrame)
	}
}
