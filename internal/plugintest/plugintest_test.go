package plugintest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/plugintest"
	"github.com/voxhost/voxhost/plugins"
)

func run(t *testing.T, name string, wasm []byte, opts plugintest.Options) *plugintest.Report {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	return plugintest.Run(ctx, rt, name, wasm, opts)
}

func fixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// find returns a check: the first that did not pass under that name, else
// the first.
func find(rep *plugintest.Report, name string) (plugintest.Check, bool) {
	for _, c := range rep.Checks {
		if c.Name == name && c.Status != plugintest.Pass {
			return c, true
		}
	}
	for _, c := range rep.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return plugintest.Check{}, false
}

func text(rep *plugintest.Report) string {
	var sb strings.Builder
	rep.WriteText(&sb)
	return sb.String()
}

func TestStockGainPassesEveryCheck(t *testing.T) {
	gain, _ := plugins.Get("gain")
	rep := run(t, "gain", gain, plugintest.Options{Config: []byte(`{"db":-6}`), MoreConfigs: [][]byte{[]byte(`{"db":12}`)}, Soak: 30 * time.Second})
	if !rep.Passed || rep.NsPerFrame <= 0 {
		t.Fatalf("gain must pass:\n%s", text(rep))
	}
	for _, c := range rep.Checks {
		if c.Status == plugintest.Fail || c.Status == plugintest.Warn {
			t.Fatalf("gain: %+v", c)
		}
	}
	// One soak per configuration, every frame length from 1 to 100 ms.
	if len(rep.Soaks) != 2 || rep.Soaks[1].Config != `{"db":12}` {
		t.Fatalf("soaks: %+v", rep.Soaks)
	}
	for _, s := range rep.Soaks {
		if s.AudioMs != 30000 || s.FrameMsMin != 1 || s.FrameMsMax != 100 || s.Fault != "" {
			t.Fatalf("soak %+v", s)
		}
	}
	if _, ok := find(rep, "soak memory (config 2)"); !ok {
		t.Fatalf("no check of the second config's soak:\n%s", text(rep))
	}
}

func TestFailuresAreReportedWithTheirReasons(t *testing.T) {
	testdata := filepath.Join("..", "..", "host", "plugin", "testdata")
	cases := []struct {
		file, check string
		want        plugintest.Status
		detail      string
	}{
		{filepath.Join(testdata, "trap.wasm"), "process shortest frame (1 ms)", plugintest.Fail, "trap in vox_process at frame 3: unreachable"},
		{filepath.Join(testdata, "grow.wasm"), "memory after init", plugintest.Fail, "memory grew from 1 to"},
		{filepath.Join(testdata, "status.wasm"), "process longest frame", plugintest.Warn, "refused 800 samples"},
		{filepath.Join(testdata, "missing_process.wasm"), "load", plugintest.Fail, "missing export vox_process"},
		{filepath.Join("testdata", "random.wasm"), "determinism", plugintest.Fail, "two fresh instances gave different output"},
		// A check that fails on one of its frames says which, once.
		{filepath.Join("testdata", "speech_trap.wasm"), "process speech", plugintest.Fail, "frame 6 of 50: plugin speech_trap.wasm: trap in vox_process at frame 10: unreachable"},
		{filepath.Join(testdata, "bad_emits.wasm"), "process speech", plugintest.Fail, "50 frames, "},
		{filepath.Join(testdata, "bad_emits.wasm"), "process silence", plugintest.Fail, `160 samples in, 160 out; 6 emits dropped: 2 bad name, 2 invalid data, 1 oversize data, 1 out of bounds; bad name: a name of 65 bytes; names are 1-64 bytes of [a-z0-9_.-]; oversize data: 4097 bytes of data; the most is 4096; out of bounds: the data of "level" at 65530+8 lies outside memory of 65536 bytes; invalid data: "level" with 8 bytes of data "{\"db\":-3": not one JSON value (unexpected end of JSON input)`},
		{filepath.Join("testdata", "late_emits.wasm"), "dtmf event", plugintest.Fail, `1 emit with the wrong data: emit dtmf carries the key as a JSON string such as "5" (ABI.md §4), got 5`},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.file)+"/"+tc.check, func(t *testing.T) {
			rep := run(t, filepath.Base(tc.file), fixture(t, tc.file), plugintest.Options{Soak: -1})
			c, _ := find(rep, tc.check)
			if c.Status != tc.want || !strings.Contains(c.Detail, tc.detail) {
				t.Fatalf("check %q = %s %q, want %s with %q", tc.check, c.Status, c.Detail, tc.want, tc.detail)
			}
			if tc.want == plugintest.Fail && rep.Passed {
				t.Fatal("a failed check must fail the report")
			}
			n := 0
			for _, c := range rep.Checks {
				if c.Name == tc.check {
					n++
				}
			}
			if n != 1 && tc.check != "load" {
				t.Fatalf("%d lines for the check %q:\n%s", n, tc.check, text(rep))
			}
		})
	}
}

// TestFailedChecksShowThePluginsLog: the stock resample needs "to"; without
// it vox_init refuses, and the report says why in the plugin's own words.
func TestFailedChecksShowThePluginsLog(t *testing.T) {
	resample, _ := plugins.Get("resample")
	rep := run(t, "resample", resample, plugintest.Options{Soak: -1})
	c, _ := find(rep, "init without config")
	if c.Status != plugintest.Fail || len(c.Logs) != 1 || c.Logs[0].Level != "error" || !strings.Contains(c.Logs[0].Msg, `"to", the output rate in Hz, is required`) {
		t.Fatalf("check %+v", c)
	}
	if out := text(rep); !strings.Contains(out, "fail  init without config: plugin resample: vox_init returned -2 (configuration rejected)\n        log error: resample: \"to\"") {
		t.Fatalf("text:\n%s", out)
	}
	// With a config the checks run on it, and refusing none is a warning.
	rep = run(t, "resample", resample, plugintest.Options{Config: []byte(`{"to":16000}`), Soak: 10 * time.Second})
	if c, _ := find(rep, "init without config"); !rep.Passed || c.Status != plugintest.Warn || len(c.Logs) != 1 {
		t.Fatalf("resample to 16 kHz: %+v\n%s", c, text(rep))
	}
}

// TestTheSoakCatchesWhatTheShortChecksPass: four plugins that pass every
// short check and fail in a long call, each for its reason.
func TestTheSoakCatchesWhatTheShortChecksPass(t *testing.T) {
	cases := []struct {
		file, check, detail string
		not                 string
	}{
		// Issue 14: an AssemblyScript plugin that builds a string per
		// frame traps with unreachable, out of memory, some seconds in.
		{"as_string/as_string.wasm", "soak faults", "plugin as_string.wasm: trap in vox_process at frame 1436: unreachable (after 42.39 s of audio, in speech, a 20 ms frame); out of memory: memory was at its maximum of 1 page, and with room to grow the plugin passes that frame, having grown to 2 pages by then", ""},
		// A trap with memory to spare is not called out of memory.
		{"late_trap.wasm", "soak faults", "plugin late_trap.wasm: trap in vox_process at frame 2000: unreachable (after 57.02 s of audio, in noise, a 49 ms frame)", "memory"},
		{"leak.wasm", "soak memory", "memory grew from 1 to 28 pages over 180.00 s of audio (6 by 36.02 s, 12 by 72.00 s, 17 by 108.09 s, 23 by 144.04 s, 28 by 180.00 s): the plugin keeps memory it allocates", ""},
		{"late_emits.wasm", "soak emits", `58 emits dropped: 58 invalid data; invalid data: "level" with 8 bytes of data "{\"db\":-3": not one JSON value (unexpected end of JSON input)`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			rep := run(t, filepath.Base(tc.file), fixture(t, filepath.Join("testdata", tc.file)), plugintest.Options{Soak: 3 * time.Minute})
			c, _ := find(rep, tc.check)
			if c.Status != plugintest.Fail || !strings.Contains(c.Detail, tc.detail) || tc.not != "" && strings.Contains(c.Detail, tc.not) {
				t.Fatalf("check %q = %s %q\nwant fail with %q", tc.check, c.Status, c.Detail, tc.detail)
			}
			for _, short := range []string{"process speech", "process longest frame", "flush event", "call_end event"} {
				if c, _ := find(rep, short); c.Status != plugintest.Pass {
					t.Fatalf("%s: %+v, want the short checks to pass", short, c)
				}
			}
		})
	}
}

// TestReportJSONSchema: the members CI reads, by name.
func TestReportJSONSchema(t *testing.T) {
	rep := run(t, "leak.wasm", fixture(t, filepath.Join("testdata", "leak.wasm")), plugintest.Options{Soak: time.Minute})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema *int  `json:"schema"`
		Passed *bool `json:"passed"`
		Checks []struct {
			Name, Status, Detail string
			Logs                 []struct{ Level, Msg string }
		} `json:"checks"`
		Soaks []struct {
			Config      *string `json:"config"`
			AudioMs     *int64  `json:"audio_ms"`
			MemoryPages *struct {
				Start, End, Peak, Max *int
			} `json:"memory_pages"`
			DroppedEmits map[string]int `json:"dropped_emits"`
			Fault        *string        `json:"fault"`
		} `json:"soaks"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Schema == nil || *got.Schema != plugintest.Schema || got.Passed == nil || *got.Passed || len(got.Checks) < 10 || len(got.Soaks) != 1 {
		t.Fatalf("report %s", b)
	}
	s := got.Soaks[0]
	if s.Config == nil || *s.Config != "{}" || s.AudioMs == nil || *s.AudioMs != 60000 || s.MemoryPages == nil || *s.MemoryPages.Start != 1 || *s.MemoryPages.End <= 1 ||
		*s.MemoryPages.Max != 64 || s.Fault == nil || len(s.DroppedEmits) != int(plugin.NumDropReasons) {
		t.Fatalf("soak %s", b)
	}
}
