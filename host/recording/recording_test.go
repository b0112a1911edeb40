package recording_test

import (
	"bytes"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// devFull opens the file a recorder asks for, but writes its audio to
// /dev/full, where the kernel fails every write with ENOSPC: a full disk.
// Its header, the first write, goes to the real file.
type devFull struct {
	*os.File
	full *os.File
	n    int
}

func (d *devFull) Write(b []byte) (int, error) {
	if d.n++; d.n == 1 {
		return d.File.Write(b)
	}
	return d.full.Write(b)
}

func TestAFullDiskStopsTheRecording(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	spec := &recording.Spec{Dir: t.TempDir(), MinFreeBytes: 1}
	recording.SetCreate(spec, func(path string) (recording.Writer, error) {
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { full.Close() })
		return &devFull{File: f, full: full}, nil
	})
	reg := prometheus.NewRegistry()
	m := recording.NewMetrics(reg)
	logs := &hosttest.LogBuffer{}
	rec, err := recording.Open(spec, "full", time.Now(), recording.Formats{Caller: codec.Telephony, ProcessedRate: 8000}, m,
		slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	frame := bytes.Repeat([]byte{0x55}, 160)
	// Frames keep coming while the writer fails: none may block.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "recording stopped") && time.Now().Before(deadline) {
		rec.Caller(frame, nil)
		rec.Heard(frame)
		runtime.Gosched()
	}
	for i := 0; i < 100; i++ {
		rec.Caller(frame, nil)
	}
	rec.Close()
	if n := strings.Count(logs.String(), "recording stopped"); n != 1 {
		t.Fatalf("%d log lines say the recording stopped, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("the log does not give the reason: %s", logs.String())
	}
	if got := counted(t, reg, "write_failed"); got != 1 {
		t.Fatalf("write_failed counted %v times, want 1", got)
	}
}

// counted is voxhost_recordings_total{outcome} as reg has it.
func counted(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if f.GetName() == "voxhost_recordings_total" && l.GetValue() == outcome {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series for outcome %s", outcome)
	return 0
}

func TestAnUnwritableDirectoryIsRefusedUpFront(t *testing.T) {
	file := t.TempDir() + "/not-a-dir"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := (&recording.Spec{Dir: file + "/sub"}).Check()
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Check of a directory under a file: %v", err)
	}
}

func TestFileStemsCannotNameAnotherPlace(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"..", "../../etc/passwd", ".", "a/b", "a%2Fb", "CA123", "a.b", "a_b", "", strings.Repeat("x", 300), strings.Repeat("x", 299) + "y", "a\x00b", "~"} {
		stem := recording.FileStem(id)
		if strings.ContainsAny(stem, "/.\\\x00*?[") || stem == "" || len(stem) > 160 {
			t.Errorf("FileStem(%q) = %q: not a plain name of letters, digits, - %% and ~", id, stem)
		}
		if other, dup := seen[stem]; dup {
			t.Errorf("FileStem(%q) = FileStem(%q) = %q", id, other, stem)
		}
		seen[stem] = id
	}
	if got := recording.FileStem("CA123-x"); got != "CA123-x" {
		t.Errorf("a plain id is kept as it is: got %q", got)
	}
}

func TestParseStream(t *testing.T) {
	for s := recording.Caller; s <= recording.Reference; s++ {
		if got, err := recording.ParseStream(s.String()); err != nil || got != s {
			t.Errorf("ParseStream(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := recording.ParseStream("bot"); err == nil || !strings.Contains(err.Error(), "caller, caller_processed, heard, reference") {
		t.Errorf("an unknown stream's error lists the known ones: %v", err)
	}
}

// stalled is a file whose writes of audio wait until release is closed,
// as on a disk that stopped answering.
type stalled struct {
	*os.File
	blocked chan<- struct{}
	release <-chan struct{}
	n       int
}

func (s *stalled) Write(b []byte) (int, error) {
	if s.n++; s.n == 2 {
		close(s.blocked)
		<-s.release
	}
	return s.File.Write(b)
}

// TestAStalledDiskNeverHoldsUpTheFrames stalls the disk for ten seconds of
// a call's audio: every frame still returns at once (the call's frame loop
// never waits for the disk), what did not fit the call's buffer is counted
// dropped, and once the disk answers again the file goes on, with silence
// where the dropped audio was, so it stays as long as the call.
func TestAStalledDiskNeverHoldsUpTheFrames(t *testing.T) {
	blocked, release := make(chan struct{}), make(chan struct{})
	spec := &recording.Spec{Dir: t.TempDir(), Streams: []recording.Stream{recording.Caller}, MinFreeBytes: 1}
	var path string
	recording.SetCreate(spec, func(p string) (recording.Writer, error) {
		f, err := os.Create(p)
		path = p
		return &stalled{File: f, blocked: blocked, release: release}, err
	})
	reg := prometheus.NewRegistry()
	rec, err := recording.Open(spec, "stalled", time.Now(), recording.Formats{Caller: codec.Telephony, ProcessedRate: 8000},
		recording.NewMetrics(reg), slog.New(slog.NewTextHandler(&hosttest.LogBuffer{}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	frame := func(k int) []byte { return bytes.Repeat([]byte{byte(k)}, 160) }
	const frames = 500 // 10 s
	// Ten frames, then the writer takes them and its write stalls: the
	// other frames come while it waits.
	for k := 0; k < 10; k++ {
		rec.Caller(frame(k), nil)
	}
	<-blocked
	var slowest time.Duration
	for k := 10; k < frames; k++ {
		t0 := time.Now()
		rec.Caller(frame(k), nil)
		slowest = max(slowest, time.Since(t0))
	}
	close(release)
	rec.Close()
	t.Logf("the slowest of the %d frames that came while the disk stalled took %v to record", frames-10, slowest)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pcm := b[44:]
	if len(pcm) != frames*160*2 {
		t.Fatalf("the file holds %d samples, want %d: one per sample of the call, dropped ones as silence", len(pcm)/2, frames*160)
	}
	// The ten frames the writer took, then the 2 s (100 frames) the
	// buffer held while it waited, each decoded; then silence for the
	// frames that found the buffer full.
	want := make([]byte, 320)
	for k := 0; k < frames; k++ {
		got := pcm[k*320 : (k+1)*320]
		if codec.Telephony.Decode(want, frame(k)); k >= 110 {
			clear(want)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d of the file is not the call's frame %d (frames 0-109) or silence (from 110)", k, k)
		}
	}
	var dropped float64
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "voxhost_recording_dropped_seconds_total" {
			dropped = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if dropped != 7.8 {
		t.Fatalf("voxhost_recording_dropped_seconds_total = %v, want the 7.8 s (390 frames) that found the buffer full", dropped)
	}
}

// TestAFileIsPlayableBeforeTheCallEnds reads a recording's file while its
// call goes on, as after a crash: within a second of the audio being
// written its header counts it, and the file reads as a WAV file holding
// the call's audio so far.
func TestAFileIsPlayableBeforeTheCallEnds(t *testing.T) {
	spec := &recording.Spec{Dir: t.TempDir(), Streams: []recording.Stream{recording.Caller}, MinFreeBytes: 1}
	rec, err := recording.Open(spec, "alive", time.Now(), recording.Formats{Caller: codec.Telephony, ProcessedRate: 8000},
		recording.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(&hosttest.LogBuffer{}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ulaw := make([]byte, 8000) // a second
	for i := range ulaw {
		ulaw[i] = byte(i * 7)
	}
	for off := 0; off < len(ulaw); off += 160 {
		rec.Caller(ulaw[off:off+160], nil)
	}
	path := rec.Files()[0]
	deadline := time.Now().Add(10 * time.Second)
	for {
		pcm, rate, err := audiofile.ReadPCM(path)
		if err == nil && len(pcm) == 2*len(ulaw) {
			want := make([]byte, 2*len(ulaw))
			codec.DecodeUlaw(want, ulaw)
			if rate != 8000 || !bytes.Equal(pcm, want) {
				t.Fatalf("the live file reads as %d samples at %d Hz that are not the audio written", len(pcm)/2, rate)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after a second of audio, the live file's header does not count it: %d bytes, %v", len(pcm), err)
		}
		time.Sleep(10 * time.Millisecond) // a poll of the condition, as waitFor's
	}
}

// TestTheReferenceIsRecordedAsGiven records a μ-law caller with the
// far-end reference the call handed with each frame: the reference file
// holds those PCM16 samples as they were given, frame for frame beside the
// caller's, not a decode of anything.
func TestTheReferenceIsRecordedAsGiven(t *testing.T) {
	spec := &recording.Spec{Dir: t.TempDir(), Streams: []recording.Stream{recording.Caller, recording.Reference}, MinFreeBytes: 1}
	rec, err := recording.OpenIdle(spec, "ref", time.Now(), recording.Formats{Caller: codec.Telephony, ProcessedRate: 8000},
		recording.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(&hosttest.LogBuffer{}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var wantCaller, wantRef []byte
	for k := 0; k < 25; k++ {
		frame := bytes.Repeat([]byte{byte(k * 9)}, 160)
		ref := make([]byte, 320)
		for i := range 160 {
			v := int16(k*1000 - i*7) // any PCM16, odd values included
			ref[2*i], ref[2*i+1] = byte(v), byte(uint16(v)>>8)
		}
		rec.Caller(frame, ref)
		pcm := make([]byte, 320)
		codec.DecodeUlaw(pcm, frame)
		wantCaller, wantRef = append(wantCaller, pcm...), append(wantRef, ref...)
	}
	rec.Finish()
	files := rec.Files()
	for i, want := range [][]byte{wantCaller, wantRef} {
		pcm, rate, err := audiofile.ReadPCM(files[i])
		if err != nil || rate != 8000 || !bytes.Equal(pcm, want) {
			t.Fatalf("%s: %d samples at %d Hz (%v), not the %d given", files[i], len(pcm)/2, rate, err, len(want)/2)
		}
	}
}
