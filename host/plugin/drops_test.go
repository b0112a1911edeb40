package plugin_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/plugin"
)

// TestInvalidEmitsAreDroppedCountedAndLoggedOnce: bad_emits.wasm makes, in
// every frame, one good emit and six the ABI forbids. Only the good one
// reaches the sink, each bad one is counted under its reason, and each
// reason is logged once over the whole call, not once per frame.
func TestInvalidEmitsAreDroppedCountedAndLoggedOnce(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "bad_emits")
	ctx := context.Background()
	rec := &recorder{}
	logs := &logRecorder{}
	in, err := p.Instantiate(ctx, plugin.InstanceConfig{Sink: rec, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	const frames = 50
	for i := 0; i < frames; i++ {
		if _, err := in.Process(160); err != nil {
			t.Fatal(err)
		}
	}
	in.Close(ctx)
	if len(rec.events) != frames || rec.events[0] != `bad_emits.wasm level {"db":-3}` {
		t.Fatalf("%d events reached the sink, first %q; want %d of the valid one", len(rec.events), rec.events[0], frames)
	}
	var want plugin.EmitDrops
	want[plugin.DropInvalidData] = 2 * frames
	want[plugin.DropBadName] = 2 * frames
	want[plugin.DropOutOfBounds] = frames
	want[plugin.DropOversizeData] = frames
	got := in.DroppedEmits() // still readable after Close
	if got != want {
		t.Fatalf("dropped %v, want %v", got, want)
	}
	if s := got.String(); s != "100 bad name, 100 invalid data, 50 oversize data, 50 out of bounds" {
		t.Fatalf("String() = %q", s)
	}
	if in.DroppedHostCalls() != got.Total() {
		t.Fatalf("DroppedHostCalls = %d, want the %d dropped emits", in.DroppedHostCalls(), got.Total())
	}
	lines := logs.take()
	if len(lines) != 4 {
		t.Fatalf("%d log lines, want one per reason:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, want := range []string{
		`WARN plugin=bad_emits.wasm reason=bad_name frame=1 emit dropped (bad name): a name of 65 bytes; names are 1-64 bytes of [a-z0-9_.-]`,
		`WARN plugin=bad_emits.wasm reason=oversize_data frame=1 emit dropped (oversize data): 4097 bytes of data; the most is 4096`,
		`WARN plugin=bad_emits.wasm reason=out_of_bounds frame=1 emit dropped (out of bounds): the data of "level" at 65530+8 lies outside memory of 65536 bytes`,
		`WARN plugin=bad_emits.wasm reason=invalid_data frame=1 emit dropped (invalid data): "level" with 8 bytes of data "{\"db\":-3": not one JSON value (unexpected end of JSON input)`,
	} {
		if !containsPrefix(lines, want) {
			t.Errorf("no log line starts %q in:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	first := in.FirstDroppedEmits()
	if !strings.Contains(first[plugin.DropInvalidData], "unexpected end of JSON input") || first[plugin.DropRateLimited] != "" {
		t.Fatalf("first drops: %q", first)
	}
	b, _ := json.Marshal(got)
	if string(b) != `{"rate_limited":0,"bad_name":100,"oversize_data":50,"out_of_bounds":50,"invalid_data":100}` {
		t.Fatalf("JSON %s", b)
	}
}

// TestEmitsOverTheCapAreRateLimitedDrops: emit_flood.wasm emits 10,000 times
// per frame; what the cap refuses counts as rate_limited.
func TestEmitsOverTheCapAreRateLimitedDrops(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "emit_flood")
	logs := &logRecorder{}
	// 10,000 host calls a frame take most of the default 5 ms budget under
	// the race detector on a busy machine; the budget is not what this
	// tests.
	in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Logger: slog.New(logs), Budget: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	for i := 0; i < 2; i++ {
		if _, err := in.Process(160); err != nil {
			t.Fatal(err)
		}
	}
	d := in.DroppedEmits()
	if d[plugin.DropRateLimited] != 2*(10000-plugin.MaxHostCallsPerCall) || d.Total() != d[plugin.DropRateLimited] {
		t.Fatalf("dropped %v", d)
	}
	if in.DroppedHostCalls() != d.Total() {
		t.Fatalf("DroppedHostCalls = %d, want %d (each drop counted once)", in.DroppedHostCalls(), d.Total())
	}
	if lines := logs.take(); len(lines) != 1 || !strings.Contains(lines[0], "more than 32 log and emit calls in one call into the plugin") {
		t.Fatalf("log: %q", lines)
	}
}

// TestStartSectionLogsGoToTheCallsLogger: what a plugin prints in
// _initialize reaches the instance's Logger, not only the runtime's, so
// `plugin test` can show it beside the check that failed.
func TestStartSectionLogsGoToTheCallsLogger(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "wasi_hello")
	logs := &logRecorder{}
	in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	if got := strings.Join(logs.take(), "\n"); !strings.Contains(got, "INFO plugin=wasi_hello.wasm hello") {
		t.Fatalf("logged %q", got)
	}
}

func containsPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
