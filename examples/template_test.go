package examples_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/plugin"
)

// watInclude is the line of a plugin's .wat that stands for the SDK's
// functions (sdk/wat/wat.mk).
var watInclude = regexp.MustCompile(`(?m)^ *;; @include voxhost.wat *$`)

// assembleWAT builds the WebAssembly text src as sdk/wat/wat.mk does: the
// SDK's functions where it includes them, then wat2wasm. It returns the
// module's path, or skips without wat2wasm (a failure under make test).
func assembleWAT(t *testing.T, src []byte) string {
	t.Helper()
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		msg := "wat2wasm (wabt) not installed: run make toolchains"
		if os.Getenv(requiredEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	sdkWAT, err := os.ReadFile("../sdk/wat/voxhost.wat")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	text, wasm := filepath.Join(dir, "plugin.wat"), filepath.Join(dir, "plugin.wasm")
	if err := os.WriteFile(text, watInclude.ReplaceAllLiteral(src, sdkWAT), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(wat2wasm, text, "-o", wasm).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, out)
	}
	return wasm
}

// TestWATTemplate builds sdk/wat/template.wat, the project `voxhost plugin
// new --lang wat` starts from, and checks that it is what it says: a valid
// plugin with every ABI export that applies its gain_db (0 dB passes audio
// through untouched), refuses unknown keys and takes any event.
func TestWATTemplate(t *testing.T) {
	src, err := os.ReadFile("../sdk/wat/template.wat")
	if err != nil {
		t.Fatal(err)
	}
	// The name plugin new gives it: event names are lower case.
	wasm := assembleWAT(t, bytes.ReplaceAll(src, []byte("__NAME__"), []byte("template")))
	bin, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	rep := host(t).Runtime().Inspect(context.Background(), "template.wasm", bin)
	if !rep.Valid || len(rep.Warnings) > 0 {
		t.Fatalf("template: valid=%v, problems %q, warnings %q", rep.Valid, rep.Problems, rep.Warnings)
	}
	exports := map[string]bool{}
	for _, e := range rep.Exports {
		exports[e.Name] = true
	}
	for _, name := range []string{abi.ExportMemory, abi.VersionMarker, abi.ExportBuffer, abi.ExportProcess, abi.ExportInit, abi.ExportRate, abi.ExportEvent} {
		if !exports[name] {
			t.Errorf("template does not export %s", name)
		}
	}

	c, err := startCall(t, definitionAt(t, "template", wasm, nil, ` { "gain_db" : 0 } `), 8000, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := c.run(t, speech, []int{frameSamples, 8, 800}, nil)
	if len(got) != len(speech) {
		t.Fatalf("%d samples out, %d in", len(got), len(speech))
	}
	for i := range got {
		if got[i] != speech[i] {
			t.Fatalf("sample %d: %d, want %d unchanged at 0 dB", i, got[i], speech[i])
		}
	}
	if err := c.p.Event(abi.EventDTMF, '7', nil); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`[{template.key {"key":"7","samples":%d}}]`, len(speech))
	if fmt.Sprint(c.events.events) != want {
		t.Errorf("events %v, want %s", c.events.events, want)
	}
	if err := c.p.Event(abi.EventClear, 0, nil); err != nil {
		t.Error(err)
	}
	if err := c.p.Event(99, 7, nil); err != nil {
		t.Errorf("an unknown event kind: %v, want it ignored", err)
	}
	for _, bad := range []string{`{"anything":[1,2,3]}`, `{"gain_db":"loud"}`, `{"gain_db":21}`} {
		logs := &logRecorder{}
		_, err := startCall(t, definitionAt(t, "template", wasm, nil, bad), 8000, slog.New(logs))
		var perr *plugin.Error
		if !errors.As(err, &perr) || perr.Status != abi.StatusBadConfig || len(logs.lines) != 1 {
			t.Errorf("config %s: %v with %d log lines, want vox_init to log why and fail with -2", bad, err, len(logs.lines))
		}
	}
}

// TestBuilds: every example build is a valid plugin. It logs each build's
// size, memory and warnings (go test -v), the numbers of examples/README.md.
func TestBuilds(t *testing.T) {
	for _, lang := range languages {
		for _, name := range []string{"tremolo", "clipper"} {
			t.Run(lang+"/"+name, func(t *testing.T) {
				bin, err := os.ReadFile(examplePath(t, lang, name))
				if err != nil {
					t.Fatal(err)
				}
				rep := host(t).Runtime().Inspect(context.Background(), name+".wasm", bin)
				if !rep.Valid {
					t.Fatalf("invalid: %q", rep.Problems)
				}
				max := "no maximum"
				if rep.MemoryMaxPages > 0 {
					max = fmt.Sprintf("max %d", rep.MemoryMaxPages)
				}
				t.Logf("%d bytes; memory %d pages, %s; warnings %q", rep.Size, rep.MemoryMinPages, max, rep.Warnings)
			})
		}
	}
}
