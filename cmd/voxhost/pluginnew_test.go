package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/scaffold"
	"github.com/voxhost/voxhost/internal/signal"
)

// TestPluginNewEveryLanguage is what a plugin author does, in every
// language: voxhost plugin new in a temporary directory, the project's own
// make, make test (voxhost plugin test) and make run (voxhost run on
// generated speech), with the voxhost binary built from this tree. The
// output must be the input at the configured gain, and each DTMF key an
// event. A language whose toolchain is missing is skipped, naming the tool
// (a failure under make test, which installs the toolchains first).
func TestPluginNewEveryLanguage(t *testing.T) {
	bin := buildVoxhost(t)
	for _, lang := range scaffold.Languages() {
		t.Run(lang.ID, func(t *testing.T) {
			t.Parallel()
			requireTools(t, lang)
			dir := filepath.Join(t.TempDir(), "my-"+lang.ID)
			if out, err := exec.Command(bin, "plugin", "new", "--lang", lang.ID, "my-"+lang.ID, dir).CombinedOutput(); err != nil {
				t.Fatalf("plugin new: %v\n%s", err, out)
			}
			make := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("make", append([]string{"--no-print-directory", "VOXHOST=" + bin}, args...)...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			make()
			if out := make("test"); !strings.Contains(out, "PASSED") {
				t.Fatalf("make test did not pass:\n%s", out)
			}
			for _, c := range []struct {
				config string
				db     float64
			}{{"", -6}, {"gain_db=-12", -12}} {
				out := make("run", "CONFIG="+c.config, "DTMF=500:5,900:#")
				checkGain(t, filepath.Join(dir, "in.wav"), filepath.Join(dir, "out.wav"), c.db)
				events := eventLines(out)
				want := []string{`my-` + lang.ID + `.key {"key":"5","samples":4000}`, `my-` + lang.ID + `.key {"key":"#","samples":7200}`}
				if fmt.Sprint(events) != fmt.Sprint(want) {
					t.Errorf("config %q: events %q, want %q\n%s", c.config, events, want, out)
				}
			}
			// A typo'd key is refused with the plugin's reason.
			cmd := exec.Command(bin, "run", "--pipeline", "build/my-"+lang.ID+".wasm gain=-6", "in.wav", "bad.wav")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), `unknown config key \"gain\"`) {
				t.Errorf("config gain=-6: err %v, want the run refused for an unknown key\n%s", err, out)
			}
		})
	}
}

// requireTools skips the test when a tool of lang is missing, or fails it
// under make test (VOXHOST_EXAMPLES_REQUIRED).
func requireTools(t *testing.T, lang scaffold.Language) {
	t.Helper()
	for _, tool := range lang.Tools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("SKIPPING %s: %s is not installed (make toolchains installs it)", lang.Title, tool)
			if os.Getenv("VOXHOST_EXAMPLES_REQUIRED") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// checkGain requires out to be in at db dB, to a sample's rounding.
func checkGain(t *testing.T, in, out string, db float64) {
	t.Helper()
	src, _, err := audiofile.ReadPCM(in)
	if err != nil {
		t.Fatal(err)
	}
	got, rate, err := audiofile.ReadPCM(out)
	if err != nil || rate != 8000 {
		t.Fatalf("%s: rate %d, %v", out, rate, err)
	}
	x, y := signal.Samples(src), signal.Samples(got)
	if len(x) != len(y) || len(x) == 0 {
		t.Fatalf("%d samples out, %d in", len(y), len(x))
	}
	g := math.Pow(10, db/20)
	for i := range x {
		if want := float64(x[i]) * g; math.Abs(float64(y[i])-want) > 1 {
			t.Fatalf("at %g dB, sample %d: %d, want %.1f ±1", db, i, y[i], want)
		}
	}
}

// eventLines are the events voxhost run printed, as "NAME DATA".
func eventLines(out string) []string {
	var events []string
	for _, line := range strings.Split(out, "\n") {
		var e struct {
			Name, Kind string
			Data       json.RawMessage
		}
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if e.Name == "" {
			e.Name = e.Kind
		}
		var data bytes.Buffer
		_ = json.Compact(&data, e.Data)
		events = append(events, e.Name+" "+data.String())
	}
	return events
}

// TestPluginNewExplainsItsArguments: a flag after NAME, no --lang, a bad
// name or language, and a directory in use each say what to do.
func TestPluginNewExplainsItsArguments(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "taken"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"my-gain", "--lang", "c"}, "flags go before NAME, e.g. voxhost plugin new --lang LANG NAME"},
		{[]string{"my-gain"}, "new needs --lang, one of c, cpp, rust, assemblyscript, go, wat"},
		{[]string{"--lang", "c"}, "new needs a plugin NAME"},
		{[]string{"--lang", "basic", "x"}, `unknown language "basic"`},
		{[]string{"--lang", "c", "MyGain"}, "lower-case"},
		{[]string{"--lang", "c", "x", dir}, "exists and is not empty"},
	} {
		err := voxhost(t, append([]string{"plugin", "new"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("plugin new %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if err := voxhost(t, "plugin", "new", "-l", "wat", "ok", filepath.Join(dir, "ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ok", "ok.wat")); err != nil {
		t.Error(err)
	}
}
