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

	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/signal"
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
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// The members of the raw protocol's events: "name", not "kind".
		var e struct {
			TimeMs int             `json:"t_ms"`
			Plugin string          `json:"plugin"`
			Name   string          `json:"name"`
			Data   json.RawMessage `json:"data"`
			Error  string          `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		names = append(names, e.Name)
		switch e.Name {
		case "digit":
			// A key is stamped with the audio before it (ABI.md §4).
			if e.TimeMs != 500 || string(e.Data) != `"7"` {
				t.Fatalf("digit event %+v", e)
			}
		case "plugin_error":
			// events.wasm swallows every second frame, so trap.wasm's third
			// frame is the fifth of the input, which ends at 100 ms.
			if e.TimeMs != 100 || e.Plugin != "trap.wasm" || !strings.Contains(e.Error, "trap in vox_process at frame 3") {
				t.Fatalf("fault event %+v", e)
			}
		}
	}
	if got := strings.Join(names, ","); got != "meta,plugin_error,digit" {
		t.Fatalf("event names = %s", got)
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
	endTrap := filepath.Join("..", "..", "internal", "offline", "testdata", "end_trap.wasm")
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
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "in.wav", "out.wav", "--pipeline", "gain"}, "run: flags go before IN and OUT, e.g. voxhost run --pipeline IN OUT"},
		{[]string{"plugin", "test", "gain", "--config", "{}"}, "plugin test: flags go before the file, e.g. voxhost plugin test --config FILE.wasm"},
		{[]string{"generate", "tone", "tone.wav", "--hz", "300"}, "generate tone: flags go before OUT, e.g. voxhost generate tone --hz OUT"},
	} {
		err := voxhost(t, tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("voxhost %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// voxhostOutput runs the CLI as voxhost does and returns what it wrote to
// stdout and stderr.
func voxhostOutput(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	app := newApp()
	var out, errOut strings.Builder
	app.Writer, app.ErrWriter = &out, &errOut
	err = app.Run(append([]string{"voxhost", "--cache-dir", "-", "--log-level", "error"}, args...))
	return out.String(), errOut.String(), err
}

// The kind's flags may follow the kind (as an author types them) or come
// before it, where they went first.
func TestGenerateTakesFlagsAfterTheKind(t *testing.T) {
	dir := t.TempDir()
	tone, speech := filepath.Join(dir, "tone.wav"), filepath.Join(dir, "speech.wav")
	if err := voxhost(t, "generate", "tone", "--hz", "300", "--seconds", "2", tone); err != nil {
		t.Fatal(err)
	}
	if err := voxhost(t, "generate", "--seconds", "1", "speech", speech); err != nil {
		t.Fatal(err)
	}
	pcm, _, err := audiofile.ReadPCM(tone)
	if err != nil {
		t.Fatal(err)
	}
	s := signal.Samples(pcm)
	crossings := 0
	for i := 1; i < len(s); i++ {
		if (s[i-1] < 0) != (s[i] < 0) {
			crossings++
		}
	}
	// 300 Hz for 2 s: 1200 zero crossings.
	if len(s) != 16000 || crossings < 1195 || crossings > 1205 {
		t.Fatalf("tone: %d samples, %d zero crossings; want 16000 and 1200", len(s), crossings)
	}
	if pcm, _, err := audiofile.ReadPCM(speech); err != nil || len(pcm) != 16000 {
		t.Fatalf("speech: %d bytes, %v; want 1 s", len(pcm), err)
	}
	if err := voxhost(t, "generate", "noise", filepath.Join(dir, "x.wav")); err == nil || !strings.Contains(err.Error(), `unknown kind "noise": want speech or tone`) {
		t.Fatalf("unknown kind: %v", err)
	}
}

// run's summary counts the emits the host dropped, by reason, and --strict
// fails a run in which a plugin faulted or emitted badly, with its own
// exit status.
func TestRunSummaryAndStrict(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.wav"), filepath.Join(dir, "out.wav")
	if err := audiofile.WritePCM(in, signal.Speech(8000, 0.2), 8000); err != nil {
		t.Fatal(err)
	}
	testdata := filepath.Join("..", "..", "host", "plugin", "testdata")
	badEmits, trap := filepath.Join(testdata, "bad_emits.wasm"), filepath.Join(testdata, "trap.wasm")
	events := filepath.Join(dir, "events.jsonl")
	_, stderr, err := voxhostOutput(t, "run", "--events", events, "-p", badEmits, in, out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(stderr, "wrote "+out+" at 8000 Hz; 60 emits dropped: 20 bad name, 20 invalid data, 10 oversize data, 10 out of bounds\n") {
		t.Fatalf("summary: %q", stderr)
	}
	for _, tc := range []struct {
		spec string
		want string
	}{
		{badEmits, "run --strict: 0 plugin errors and 60 dropped emits"},
		{"gain | " + trap, "run --strict: 1 plugin errors and 0 dropped emits"},
	} {
		_, _, err := voxhostOutput(t, "run", "--strict", "--events", events, "-p", tc.spec, in, out)
		var exit exitError
		if !errors.As(err, &exit) || exit.code != exitStrict || !strings.HasPrefix(exit.msg, tc.want) {
			t.Fatalf("run --strict -p %q: %v, want exit %d: %s", tc.spec, err, exitStrict, tc.want)
		}
		if _, _, err := voxhostOutput(t, "run", "--events", events, "-p", tc.spec, in, out); err != nil {
			t.Fatalf("without --strict: %v", err)
		}
	}
	if _, _, err := voxhostOutput(t, "run", "--strict", "-p", "gain db=-6", in, out); err != nil {
		t.Fatalf("a clean run under --strict: %v", err)
	}
}

// plugin test soaks the plugin: the AssemblyScript plugin of issue 14,
// which builds a string per frame, passes every short check and fails the
// soak, out of memory; --json carries the same for CI.
func TestPluginTestSoaksThePlugin(t *testing.T) {
	asString := filepath.Join("..", "..", "internal", "plugintest", "testdata", "as_string", "as_string.wasm")
	stdout, _, err := voxhostOutput(t, "plugin", "test", "--soak", "1m", asString)
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("err = %v, want exit 1", err)
	}
	for _, want := range []string{
		"pass  process speech: 50 frames",
		"fail  soak faults: plugin as_string.wasm: trap in vox_process at frame 1436: unreachable (after 42.39 s of audio, in speech, a 20 ms frame); out of memory: memory was at its maximum of 1 page",
		"as_string.wasm FAILED",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not say %q:\n%s", want, stdout)
		}
	}
	stdout, _, err = voxhostOutput(t, "plugin", "test", "--json", "--soak", "1m", asString)
	var rep struct {
		Schema int
		Passed bool
		Soaks  []struct {
			Fault     string
			FaultAtMs int64 `json:"fault_at_ms"`
		}
	}
	if jerr := json.Unmarshal([]byte(stdout), &rep); jerr != nil || err == nil || rep.Schema != 1 || rep.Passed || len(rep.Soaks) != 1 || rep.Soaks[0].FaultAtMs != 42392 {
		t.Fatalf("--json: %v, %v: %s", err, jerr, stdout)
	}
	// Each --config is soaked; commas inside JSON do not split it.
	stdout, _, err = voxhostOutput(t, "plugin", "test", "--soak", "5s", "--config", `{"db":-6,"x":1}`, "--config", `{"db":6}`, "gain")
	if err != nil || !strings.Contains(stdout, "pass  init with config: {\"db\":-6,\"x\":1} accepted") || !strings.Contains(stdout, "pass  soak memory (config 2): 1 page throughout 5.00 s of audio") {
		t.Fatalf("two configs: %v\n%s", err, stdout)
	}
	if _, _, err := voxhostOutput(t, "plugin", "test", "--soak", "0", "gain"); err != nil {
		t.Fatalf("--soak 0: %v", err)
	}
}
