package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/audiofile"
	"github.com/voxhost/voxhost/host/signal"
)

// voxhost runs the CLI in-process, as a shell would, with a private cache.
func voxhost(t *testing.T, args ...string) error {
	t.Helper()
	app := newApp()
	app.Writer = io.Discard
	return app.Run(append([]string{"voxhost", "--cache-dir", "-", "--log-level", "warn"}, args...))
}

func TestRunAppliesGainEndToEnd(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.wav"), filepath.Join(dir, "out.wav")
	speech := signal.Speech(8000, 3)
	if err := audiofile.WritePCM(in, speech, 8000); err != nil {
		t.Fatal(err)
	}
	if err := voxhost(t, "run", "-q", "--pipeline", "gain db=-6 | passthrough", in, out); err != nil {
		t.Fatal(err)
	}
	pcm, rate, err := audiofile.ReadPCM(out)
	if err != nil || rate != 8000 {
		t.Fatalf("output: rate %d, err %v", rate, err)
	}
	got, src := signal.Samples(pcm), signal.Samples(speech)
	if len(got) != len(src) {
		t.Fatalf("%d samples out, %d in", len(got), len(src))
	}
	g := math.Pow(10, -6.0/20)
	for i, x := range src {
		want := math.Round(float64(x) * g)
		if d := math.Abs(float64(got[i]) - want); d > 1 {
			t.Fatalf("sample %d = %d, want %.0f ±1", i, got[i], want)
		}
	}
}

func TestRunWritesEventsAsJSONLines(t *testing.T) {
	dir := t.TempDir()
	in, out, events := filepath.Join(dir, "in.ul"), filepath.Join(dir, "out.ul"), filepath.Join(dir, "events.jsonl")
	if err := audiofile.WritePCM(in, signal.Speech(8000, 1), 8000); err != nil {
		t.Fatal(err)
	}
	eventsWasm := filepath.Join("..", "..", "host", "plugin", "testdata", "events.wasm")
	trap := filepath.Join("..", "..", "host", "plugin", "testdata", "trap.wasm")
	err := voxhost(t, "run", "-q", "--events", events, "--dtmf", "500:7", "--pipeline", eventsWasm+" | "+trap, in, out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kinds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			TimeMs int             `json:"t_ms"`
			Plugin string          `json:"plugin"`
			Kind   string          `json:"kind"`
			Data   json.RawMessage `json:"data"`
			Error  string          `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		kinds = append(kinds, e.Kind)
		switch e.Kind {
		case "digit":
			if e.TimeMs != 500 || string(e.Data) != `"7"` {
				t.Fatalf("digit event %+v", e)
			}
		case "plugin_error":
			// events.wasm swallows every second frame, so trap.wasm's third
			// frame is the fifth of the input, which starts at 80 ms.
			if e.TimeMs != 80 || e.Plugin != "trap.wasm" || !strings.Contains(e.Error, "trap in vox_process at frame 3") {
				t.Fatalf("fault event %+v", e)
			}
		}
	}
	if got := strings.Join(kinds, ","); got != "meta,plugin_error,digit" {
		t.Fatalf("event kinds = %s", got)
	}
}

// A plugin that traps in call_end fails the run (main prints the error and
// exits 1), but the output is written first, flush tail included.
func TestRunWritesOutputAndReportsCallEndFault(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.wav"), filepath.Join(dir, "out.wav")
	speech := signal.Speech(8000, 1)
	if err := audiofile.WritePCM(in, speech, 8000); err != nil {
		t.Fatal(err)
	}
	endTrap := filepath.Join("..", "..", "host", "offline", "testdata", "end_trap.wasm")
	err := voxhost(t, "run", "-q", "--events", filepath.Join(dir, "events.jsonl"), "--pipeline", "gain db=0 | "+endTrap, in, out)
	var exit exitError
	if err == nil || errors.As(err, &exit) {
		t.Fatalf("err = %v, want an error for main to print", err)
	}
	for _, want := range []string{"call_end", "plugin end_trap.wasm", "vox_event", "unreachable", out + " holds the output"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	pcm, _, err := audiofile.ReadPCM(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(speech) + 4*2; len(pcm) != want || string(pcm[:len(speech)]) != string(speech) {
		t.Fatalf("wrote %d bytes, want the %d of the input and the flush tail", len(pcm), want)
	}
}

func TestRunRejectsWrongRateWithAdvice(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.wav")
	if err := audiofile.WritePCM(in, signal.Tone(16000, 440, 0.5, 0.1), 16000); err != nil {
		t.Fatal(err)
	}
	err := voxhost(t, "run", "-p", "gain", in, filepath.Join(dir, "out.wav"))
	if err == nil || !strings.Contains(err.Error(), "16000 Hz audio; voxhost run needs 8000 Hz mono PCM16") {
		t.Fatalf("err = %v", err)
	}
}

func TestInspectExitCodes(t *testing.T) {
	if err := voxhost(t, "plugin", "inspect", "gain"); err != nil {
		t.Fatalf("inspect gain: %v", err)
	}
	err := voxhost(t, "plugin", "inspect", "--json", filepath.Join("..", "..", "host", "plugin", "testdata", "missing_process.wasm"))
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("inspect of an invalid module: err = %v, want exit 1", err)
	}
}

func TestPluginTestExitCodes(t *testing.T) {
	if err := voxhost(t, "plugin", "test", "--config", `{"db":-6}`, "gain"); err != nil {
		t.Fatalf("plugin test gain: %v", err)
	}
	err := voxhost(t, "plugin", "test", filepath.Join("..", "..", "host", "plugin", "testdata", "trap.wasm"))
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("plugin test of a trapping plugin: err = %v, want exit 1", err)
	}
	if err := voxhost(t, "plugin", "test", "--config", "{nope", "gain"); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("bad --config: %v", err)
	}
}

func TestFlagsAfterFilesAreExplained(t *testing.T) {
	for _, args := range [][]string{
		{"run", "in.wav", "out.wav", "--pipeline", "gain"},
		{"plugin", "test", "gain", "--config", "{}"},
	} {
		err := voxhost(t, args...)
		if err == nil || !strings.Contains(err.Error(), "flags go before") {
			t.Errorf("voxhost %s: %v, want the flags-first hint", strings.Join(args, " "), err)
		}
	}
}
