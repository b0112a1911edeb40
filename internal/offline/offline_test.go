package offline_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/offline"
	"github.com/voxhost/voxhost/internal/signal"
)

// A plugin that fails at or near the end of a call must not cost the audio
// before the failure: Run writes it, and returns a *FaultError naming the
// plugin, the export and the reason.
func TestFaultKeepsTheOutputBeforeIt(t *testing.T) {
	in := signal.Speech(8000, 0.5) // 25 frames of 320 bytes
	frame := 160 * abi.SampleBytes
	tail := []byte{1, 0, 2, 0, 3, 0, 4, 0} // end_trap.wasm's flush
	trap := filepath.Join("..", "..", "host", "plugin", "testdata", "trap.wasm")
	for _, tc := range []struct {
		name, spec string
		at         string
		plugin     string
		export     string
		want       []byte
		// endEvent: the fault is logged by Run itself, not through the
		// pipeline's OnFault, so its action is "call ended".
		endEvent bool
	}{
		{"call_end under bypass", "testdata/end_trap.wasm", "call_end", "end_trap.wasm", abi.ExportEvent, append(bytes.Clone(in), tail...), true},
		{"flush under end_call", "testdata/flush_trap.wasm on_error=end_call", "flush", "flush_trap.wasm", abi.ExportEvent, in, false},
		{"third frame under end_call", trap + " on_error=end_call", "the frame at 40 ms", "trap.wasm", abi.ExportProcess, in[:2*frame], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, events, got, err := run(t, tc.spec, in)
			var fault *offline.FaultError
			if !errors.As(err, &fault) || fault.At != tc.at {
				t.Fatalf("err = %v, want a *FaultError at %s", err, tc.at)
			}
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Plugin != tc.plugin || pe.Export != tc.export || pe.Kind != plugin.KindTrap || pe.Reason != "unreachable" {
				t.Fatalf("err = %v, want a trap of %s in %s", err, tc.plugin, tc.export)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("wrote %d bytes, want the %d processed before the fault", len(got), len(tc.want))
			}
			if sum.Faults != 1 || len(events) != 1 || events[0].Plugin != tc.plugin || events[0].Name != "plugin_error" {
				t.Fatalf("%d faults, events %+v: want the one fault of %s", sum.Faults, events, tc.plugin)
			}
			if tc.endEvent && events[0].Action != "call ended" {
				t.Fatalf("call_end fault event %+v", events[0])
			}
		})
	}
}

// A flush fault under the default policy is bypassed, as in a live call: the
// run succeeds and reports the fault as an event.
func TestBypassedFlushFaultIsNotAnError(t *testing.T) {
	in := signal.Speech(8000, 0.2)
	sum, events, got, err := run(t, "testdata/flush_trap.wasm", in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, in) || sum.Faults != 1 || len(events) != 1 || events[0].Action != "bypassed for the rest of the call" {
		t.Fatalf("wrote %d of %d bytes, %d faults, events %+v", len(got), len(in), sum.Faults, events)
	}
}

// options builds spec and writes in as a WAV: the options of a run over it
// into an output file of its own, events left to the caller.
func options(t *testing.T, spec string, in []byte) offline.Options {
	t.Helper()
	specs, err := pipeline.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	def, err := hosttest.Catalog(t).Definition(context.Background(), "test", specs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := offline.Options{Definition: def, In: filepath.Join(dir, "in.wav"), Out: filepath.Join(dir, "out.wav")}
	if err := audiofile.WritePCM(opts.In, in, 8000); err != nil {
		t.Fatal(err)
	}
	return opts
}

// run runs spec over in and returns the summary, the events, the output
// audio and Run's error.
func run(t *testing.T, spec string, in []byte) (offline.Summary, []offline.Event, []byte, error) {
	t.Helper()
	opts := options(t, spec, in)
	var log bytes.Buffer
	opts.Events = &log
	sum, runErr := offline.Run(context.Background(), opts)
	out, _, err := audiofile.ReadPCM(opts.Out)
	if err != nil {
		t.Fatalf("no output (run: %v): %v", runErr, err)
	}
	var events []offline.Event
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var e offline.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	return sum, events, out, runErr
}

// cancelOn cancels a run's context when an event of the given name is
// written, so a test can stop a run at a known point of its input.
type cancelOn struct {
	name   string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	var e offline.Event
	if json.Unmarshal(p, &e) == nil && e.Name == c.name {
		c.cancel()
	}
	return len(p), nil
}

// A cancelled run (SIGINT or SIGTERM in voxhost run) stops before its next
// frame, with the context's error and no output.
func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := options(t, filepath.Join("..", "..", "host", "plugin", "testdata", "events.wasm"), signal.Speech(8000, 3))
	// events.wasm emits "digit" for the key pressed at 500 ms, which the
	// frame at 500 ms carries: the next frame, at 520 ms, is not run.
	opts.Events = cancelOn{name: "digit", cancel: cancel}
	opts.DTMF = []offline.DTMF{{AtMs: 500, Digit: '5'}}
	sum, err := offline.Run(ctx, opts)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted at 520 ms") {
		t.Fatalf("err = %v, want the run interrupted at 520 ms", err)
	}
	if sum.Frames != 26 {
		t.Errorf("%d frames processed, want the 26 up to the key press", sum.Frames)
	}
	if _, err := os.Stat(opts.Out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted run wrote %s (%v)", opts.Out, err)
	}
}

// Events are stamped as ABI.md §4 defines t_ms: an emit during a frame with
// the end of that frame, a key press with the audio before it. Emits the
// host refused are not written but counted in the summary, by reason.
func TestEventTimesAndDroppedEmits(t *testing.T) {
	in := signal.Speech(8000, 0.2) // 10 frames
	badEmits := filepath.Join("..", "..", "host", "plugin", "testdata", "bad_emits.wasm")
	eventsWasm := filepath.Join("..", "..", "host", "plugin", "testdata", "events.wasm")
	opts := options(t, badEmits+" | "+eventsWasm, in)
	opts.DTMF = []offline.DTMF{{AtMs: 100, Digit: '3'}}
	var log bytes.Buffer
	opts.Events = &log
	sum, err := offline.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var times []string
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var e offline.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Name != "meta" {
			times = append(times, fmt.Sprintf("%s@%d", e.Name, e.TimeMs))
		}
	}
	want := "level@20 level@40 level@60 level@80 level@100 digit@100 level@120 level@140 level@160 level@180 level@200"
	if got := strings.Join(times, " "); got != want {
		t.Fatalf("events %s\nwant   %s", got, want)
	}
	// bad_emits.wasm: 2 invalid data, 2 bad names, 1 out of bounds and 1
	// oversize per frame; events.wasm: a bad name and an out-of-bounds
	// payload on the key press.
	if got := sum.DroppedEmits.String(); got != "21 bad name, 20 invalid data, 11 out of bounds, 10 oversize data" {
		t.Fatalf("dropped: %s", got)
	}
}
