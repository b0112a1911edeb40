package plugin_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/plugin"
)

// logRecorder is a slog.Handler that keeps every record as "LEVEL plugin=NAME MSG".
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String()
	rec.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line+" "+rec.Message)
	return nil
}

// take returns the lines logged since the last take.
func (r *logRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := r.lines
	r.lines = nil
	return lines
}

func newLoggingRuntime(t *testing.T) (*plugin.Runtime, *logRecorder) {
	t.Helper()
	rec := &logRecorder{}
	rt, err := plugin.NewRuntime(context.Background(), plugin.Options{CacheDir: "-", Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt, rec
}

func TestWASIOutputIsLoggedClockAndRandomAreReal(t *testing.T) {
	rt, logs := newLoggingRuntime(t)
	ctx := context.Background()
	p := load(t, rt, "wasi_hello")
	// Load's trial instance runs _initialize too.
	want := []string{"INFO plugin=wasi_hello.wasm hello", "WARN plugin=wasi_hello.wasm careful"}
	if got := logs.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("load logged %q, want %q", got, want)
	}
	before := time.Now()
	a, err := p.Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if got := logs.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("instantiate logged %q, want %q", got, want)
	}

	// vox_rate read the clocks and random bytes into the buffer.
	wall := time.Unix(0, int64(binary.LittleEndian.Uint64(a.Buffer()[0:])))
	if wall.Before(before.Add(-time.Second)) || wall.After(time.Now().Add(time.Second)) {
		t.Fatalf("walltime %v is not the system's (%v)", wall, before)
	}
	if mono := binary.LittleEndian.Uint64(a.Buffer()[8:]); mono == 0 {
		t.Fatal("monotonic clock reads 0")
	}
	randA := append([]byte(nil), a.Buffer()[16:32]...)
	b, err := p.Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	logs.take()
	if bytes.Equal(randA, b.Buffer()[16:32]) {
		t.Fatalf("two instances drew the same random bytes %x: the source is deterministic", randA)
	}

	// Output is split into lines; a line is cut at abi.MaxLogLen; a blank
	// line is skipped; a last line without a newline is logged at Close.
	long := strings.Repeat("x", abi.MaxLogLen+904)
	out := "one\r\ntwo\n\n" + long + "\nthree\ntail"
	if len(out)%2 != 0 {
		out += "!"
	}
	if err := a.Reserve(len(out)); err != nil {
		t.Fatal(err)
	}
	copy(a.Buffer(), out)
	if n, err := a.Process(len(out) / 2); err != nil || n != len(out)/2 {
		t.Fatalf("process: n=%d err=%v", n, err)
	}
	want = []string{"INFO plugin=wasi_hello.wasm one", "INFO plugin=wasi_hello.wasm two",
		"INFO plugin=wasi_hello.wasm " + long[:abi.MaxLogLen], "INFO plugin=wasi_hello.wasm three"}
	if got := logs.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("process logged %d lines %.200q, want %.200q", len(got), got, want)
	}
	a.Close(ctx)
	if got := logs.take(); len(got) != 1 || !strings.HasPrefix(got[0], "INFO plugin=wasi_hello.wasm tail") {
		t.Fatalf("close logged %q, want the unterminated last line", got)
	}
}

func TestWASIOutputGoesToTheCallsLogger(t *testing.T) {
	rt, rtLogs := newLoggingRuntime(t)
	ctx := context.Background()
	p := load(t, rt, "wasi_hello")
	callLogs := &logRecorder{}
	in, err := p.Instantiate(ctx, plugin.InstanceConfig{Logger: slog.New(callLogs).With("call", "c1")})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	rtLogs.take()
	// What _initialize printed is the call's too.
	if got := callLogs.take(); len(got) != 2 || got[0] != "INFO plugin=wasi_hello.wasm hello" {
		t.Fatalf("call logger got %q from set-up", got)
	}
	copy(in.Buffer(), "hi\n\n")
	if _, err := in.Process(2); err != nil {
		t.Fatal(err)
	}
	if got := callLogs.take(); len(got) != 1 || got[0] != "INFO plugin=wasi_hello.wasm hi" {
		t.Fatalf("call logger got %q", got)
	}
	if got := rtLogs.take(); len(got) != 0 {
		t.Fatalf("runtime logger got %q", got)
	}
}

func TestWASIHasNoFilesystem(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	in, err := load(t, rt, "wasi_fs").Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	if n, err := in.Process(1); err != nil || n != 2 {
		t.Fatalf("process: n=%d err=%v", n, err)
	}
	const ebadf = 8 // WASI errno: no preopened directory has descriptor 3
	prestat := binary.LittleEndian.Uint16(in.Buffer()[0:])
	open := binary.LittleEndian.Uint16(in.Buffer()[2:])
	if prestat != ebadf || open != ebadf {
		t.Fatalf("fd_prestat_get errno %d, path_open errno %d; want %d (EBADF) for both", prestat, open, ebadf)
	}
}

func TestWASIImportsOutsideTheSubsetAreRejected(t *testing.T) {
	rt := newRuntime(t)
	rep := rt.Inspect(context.Background(), "wasi_denied.wasm", testdata(t, "wasi_denied"))
	want := []string{
		"unknown import wasi_snapshot_preview1.sock_accept: the host's WASI offers no network",
		"unknown import wasi_snapshot_preview1.sock_open: the host's WASI offers no network",
		"unknown import wasi_snapshot_preview1.proc_spawn: not a WASI function the host provides",
		"import wasi_snapshot_preview1.fd_write has signature (i32) -> (i32) but the host provides (i32, i32, i32, i32) -> (i32)",
	}
	if rep.Valid || len(rep.Problems) != len(want) {
		t.Fatalf("problems = %q, want %d", rep.Problems, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(rep.Problems[i], w) {
			t.Errorf("problem %d = %q, want it to start with %q", i, rep.Problems[i], w)
		}
	}
}
