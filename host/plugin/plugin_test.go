package plugin_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/plugins"
)

func newRuntime(t testing.TB) *plugin.Runtime {
	t.Helper()
	rt, err := plugin.NewRuntime(context.Background(), plugin.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func testdata(t testing.TB, name string) []byte {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// loadStock loads the stock plugin called name.
func loadStock(t testing.TB, rt *plugin.Runtime, name string) *plugin.Plugin {
	t.Helper()
	wasm, ok := plugins.Get(name)
	if !ok {
		t.Fatalf("no stock plugin %s", name)
	}
	p, err := rt.Load(context.Background(), name, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t testing.TB, rt *plugin.Runtime, name string) *plugin.Plugin {
	t.Helper()
	p, err := rt.Load(context.Background(), name+".wasm", testdata(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadRejectsBrokenModulesWithReasons(t *testing.T) {
	rt := newRuntime(t)
	cases := []struct {
		name string
		wasm []byte
		want string
	}{
		{"text", []byte("hello, I am not a module"), `not a WebAssembly module (the file does not start with "\0asm")`},
		{"component", []byte("\x00asm\x0d\x00\x01\x00"), "a WebAssembly component, not a core module"},
		{"truncated", []byte("\x00asm\x01\x00\x00\x00\x01\x05"), "invalid WebAssembly: "},
		// wazero v1.12 panics reading this one: a call to a function
		// whose declared type (5) does not exist.
		{"bad_type_index", []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x03\x02\x00\x05" +
			"\x0a\x09\x02\x04\x00\x10\x01\x0b\x02\x00\x0b"), "invalid WebAssembly: byte 19: function 1 declares type 5, which does not exist (1 types)"},
		// Bytes that would make wazero allocate gigabytes: 268 million
		// exports, 4 billion locals, a table of 4 billion elements.
		{"export_bomb", []byte("\x00asm\x01\x00\x00\x00\x07\x06\xff\xff\xff\x7f\x01f"), "invalid WebAssembly: byte "},
		{"locals_bomb", []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00" +
			"\x0a\x0a\x01\x08\x01\xff\xff\xff\xff\x0f\x7f\x0b"), "over a host limit: byte 28: 4294967295 locals in function 0, over the host's limit of 50000 (plugin_limits.function_locals)"},
		{"table_bomb", []byte("\x00asm\x01\x00\x00\x00\x04\x08\x01\x70\x00\xff\xff\xff\xff\x0f"), "over a host limit: byte 18: 4294967295 table elements, over the host's limit of 65536 (plugin_limits.table_elements)"},
		{"missing_process", nil, "missing export vox_process"},
		{"bad_signature", nil, "export vox_process has signature (i64) -> (i32) but the ABI needs (i32) -> (i32)"},
		{"abi_v2", nil, "ABI v2 plugin on a v1 host"},
		{"no_marker", nil, "no ABI version marker (export a function named voxhost_abi_v1)"},
		{"unknown_import", nil, "unknown import env.get_time: a plugin may import only voxhost.log, voxhost.emit and the host's WASI (wasi_snapshot_preview1)"},
		{"imports_memory", nil, "unknown import env.memory (memory): a plugin must define its own memory"},
		{"small_buffer", nil, "vox_buffer: cannot provide a frame buffer of 1600 bytes (vox_buffer returned 0): buffer too small"},
		{"outside_buffer", nil, "buffer at 65000+1600 lies outside memory of 65536 bytes"},
		{"big_memory", nil, "memory minimum of 1000 pages exceeds the host limit of 256 pages"},
		{"command", nil, "exports _start: a plugin must be a reactor"},
		{"start_trap", nil, "instantiation failed: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wasm := tc.wasm
			if wasm == nil {
				wasm = testdata(t, tc.name)
			}
			_, err := rt.Load(context.Background(), tc.name+".wasm", wasm)
			var verr *plugin.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Load error = %v, want a *ValidationError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %q\nwant it to contain %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "plugin "+tc.name+".wasm: ") {
				t.Fatalf("error %q does not name the plugin", err)
			}
		})
	}
}

func TestInspectListsEveryProblem(t *testing.T) {
	rt := newRuntime(t)
	// no_marker lacks the marker; unknown_import is fine but for its import:
	// a module with both problems must report both.
	rep := rt.Inspect(context.Background(), "bad_signature.wasm", testdata(t, "bad_signature"))
	if rep.Valid || len(rep.Problems) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	rep = rt.Inspect(context.Background(), "grow.wasm", testdata(t, "grow"))
	if !rep.Valid || rep.ABIVersion != 1 || rep.MemoryMinPages != 1 || rep.MemoryMaxPages != 8 {
		t.Fatalf("report = %+v", rep)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "declare min = max") {
		t.Fatalf("warnings = %q, want the growth warning", rep.Warnings)
	}
	gain, _ := plugins.Get("gain")
	rep = rt.Inspect(context.Background(), "gain", gain)
	if !rep.Valid || len(rep.Warnings) != 0 {
		t.Fatalf("gain report = %+v", rep)
	}
	var names []string
	for _, e := range rep.Exports {
		names = append(names, e.Name)
	}
	// _initialize: the C SDK runs static constructors there.
	if got := strings.Join(names, ","); got != "_initialize,memory,vox_buffer,vox_init,vox_process,voxhost_abi_v1" {
		t.Fatalf("gain exports = %s", got)
	}
	if len(rep.Imports) != 1 || rep.Imports[0].Module != "voxhost" || rep.Imports[0].Name != "log" {
		t.Fatalf("gain imports = %+v", rep.Imports)
	}
}

func TestTrapIsAnErrorNamingPluginExportAndFrame(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "trap")
	ctx := context.Background()
	a, err := p.Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := p.Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	for frame := 1; frame <= 2; frame++ {
		if _, err := a.Process(160); err != nil {
			t.Fatalf("frame %d: %v", frame, err)
		}
	}
	_, err = a.Process(160)
	var perr *plugin.Error
	if !errors.As(err, &perr) || perr.Kind != plugin.KindTrap || perr.Frame != 3 || perr.Export != abi.ExportProcess {
		t.Fatalf("third frame error = %#v", err)
	}
	if want := "plugin trap.wasm: trap in vox_process at frame 3: unreachable"; err.Error() != want {
		t.Fatalf("error = %q, want %q", err, want)
	}
	// The other instance of the same plugin has its own state and goes on.
	fill(b.Buffer(), 160, 7)
	for frame := 1; frame <= 2; frame++ {
		n, err := b.Process(160)
		if err != nil || n != 160 {
			t.Fatalf("instance b frame %d: n=%d err=%v", frame, n, err)
		}
	}
}

func fill(buf []byte, samples int, seed int16) {
	for i := 0; i < samples; i++ {
		binary.LittleEndian.PutUint16(buf[2*i:], uint16(seed*int16(i)-1000))
	}
}

func TestStatusCodesAreErrors(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "status")
	ctx := context.Background()
	_, err := p.Instantiate(ctx, plugin.InstanceConfig{Config: []byte(`{"mode":"x"}`)})
	if err == nil || err.Error() != "plugin status.wasm: vox_init returned -2 (configuration rejected)" {
		t.Fatalf("init error = %v", err)
	}
	in, err := p.Instantiate(ctx, plugin.InstanceConfig{Config: []byte(`{"mode":"y"}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	if n, err := in.Process(160); n != 160 || err != nil {
		t.Fatalf("160 samples: n=%d err=%v", n, err)
	}
	_, err = in.Process(320)
	if err == nil || err.Error() != "plugin status.wasm: vox_process at frame 2 returned -4 (frame length not supported)" {
		t.Fatalf("320 samples: err=%v", err)
	}
}

func TestViewIsReacquiredWhenMemoryGrows(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "grow")
	ctx := context.Background()
	in, err := p.Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	for frame := 0; frame < 6; frame++ {
		fill(in.Buffer(), 160, int16(frame+1))
		n, err := in.Process(160)
		if err != nil || n != 160 {
			t.Fatalf("frame %d: n=%d err=%v", frame, n, err)
		}
		out := in.Buffer()
		for i := 0; i < 160; i++ {
			want := int16(int16(frame+1)*int16(i)-1000) * 2
			if got := int16(binary.LittleEndian.Uint16(out[2*i:])); got != want {
				t.Fatalf("frame %d sample %d = %d, want %d", frame, i, got, want)
			}
		}
	}
}

func TestRateChangeSizesTheBuffer(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "upsample")
	ctx := context.Background()
	in, err := p.Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	if in.InputRate() != 8000 || in.OutputRate() != 16000 {
		t.Fatalf("rates %d -> %d", in.InputRate(), in.OutputRate())
	}
	if len(in.Buffer()) < 3200 {
		t.Fatalf("buffer of %d bytes cannot hold 100 ms at 16 kHz", len(in.Buffer()))
	}
	_, err = p.Instantiate(ctx, plugin.InstanceConfig{InputRate: 16000})
	if err == nil || !strings.Contains(err.Error(), "vox_rate returned -3 (sample rate not supported): input of 16000 Hz") {
		t.Fatalf("16 kHz input: err = %v", err)
	}
}

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Emit(plugin, name string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, plugin+" "+name+" "+string(data))
}

func TestEventsEmitAndLog(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "events")
	ctx := context.Background()
	rec := &recorder{}
	in, err := p.Instantiate(ctx, plugin.InstanceConfig{Sink: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	if _, err := in.Event(abi.EventCallStart, 0, []byte(`{"call_id":"c1"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Event(abi.EventDTMF, '#', nil); err != nil {
		t.Fatal(err)
	}
	want := []string{`events.wasm meta {"call_id":"c1"}`, `events.wasm digit "#"`}
	if strings.Join(rec.events, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events = %q, want %q", rec.events, want)
	}
	if got := in.DroppedHostCalls(); got != 2 {
		t.Fatalf("dropped host calls = %d, want 2 (a bad name and an out-of-bounds payload)", got)
	}
	n, err := in.Event(abi.EventFlush, 0, nil)
	if err != nil || n != 4 {
		t.Fatalf("flush: n=%d err=%v", n, err)
	}
	for i := 0; i < 4; i++ {
		if got := binary.LittleEndian.Uint16(in.Buffer()[2*i:]); got != uint16(i+1) {
			t.Fatalf("tail sample %d = %d", i, got)
		}
	}
}

func TestProcessAllocatesNothing(t *testing.T) {
	p := loadStock(t, newRuntime(t), "gain")
	in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Config: []byte(`{"db":-6}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := in.Process(160); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Process allocates %.1f times per frame", allocs)
	}
}

func TestInstancesAreCountedAndClosed(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "grow")
	ctx := context.Background()
	var live []*plugin.Instance
	for i := 0; i < 10; i++ {
		in, err := p.Instantiate(ctx, plugin.InstanceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, in)
	}
	if got := rt.LiveInstances(); got != 10 {
		t.Fatalf("live = %d, want 10", got)
	}
	for _, in := range live {
		in.Close(ctx)
		in.Close(ctx)
	}
	if got := rt.LiveInstances(); got != 0 {
		t.Fatalf("live after close = %d, want 0", got)
	}
}

func TestMemoryLimitStopsGrowth(t *testing.T) {
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-", MemoryLimitPages: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	// grow.wasm declares 1..8 pages and asks for one more page every frame;
	// its memory.grow must start failing at the host's limit of 3 pages, and
	// the plugin keep working in the memory it has.
	p := load(t, rt, "grow")
	in, err := p.Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	for frame := 0; frame < 6; frame++ {
		if _, err := in.Process(160); err != nil {
			t.Fatalf("frame %d: %v", frame, err)
		}
	}
	if got := in.MemoryPages(); got != 3 {
		t.Fatalf("memory = %d pages, want the limit of 3", got)
	}
}
