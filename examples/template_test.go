package examples_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/voxhost/voxhost/abi"
)

// TestWATTemplate builds sdk/wat/template.wat and checks that it is what it
// says: a valid plugin with every ABI export that passes audio through
// untouched, takes a config and any event.
func TestWATTemplate(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		msg := "wat2wasm (wabt) not installed: run make toolchains"
		if os.Getenv(requiredEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	wasm := filepath.Join(t.TempDir(), "template.wasm")
	if out, err := exec.Command(wat2wasm, "../sdk/wat/template.wat", "-o", wasm).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, out)
	}
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

	c, err := startCall(t, definitionAt(t, "template", wasm, nil, `{"anything":[1,2,3]}`), 8000, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := c.run(t, speech, []int{frameSamples, 8, 800}, keys)
	if len(got) != len(speech) {
		t.Fatalf("%d samples out, %d in", len(got), len(speech))
	}
	for i := range got {
		if got[i] != speech[i] {
			t.Fatalf("sample %d: %d, want %d unchanged", i, got[i], speech[i])
		}
	}
	if len(c.events.events) > 0 {
		t.Errorf("the template emitted %v", c.events.events)
	}
	if err := c.p.Event(abi.EventClear, 0, nil); err != nil {
		t.Error(err)
	}
	if err := c.p.Event(99, 7, nil); err != nil {
		t.Errorf("an unknown event kind: %v, want it ignored", err)
	}
}

// TestBuilds: every example build is a valid plugin. It logs each build's
// size, memory and warnings (go test -v), the numbers of examples/README.md.
func TestBuilds(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			bin, err := os.ReadFile(wasmPath(t, lang))
			if err != nil {
				t.Fatal(err)
			}
			rep := host(t).Runtime().Inspect(context.Background(), "tremolo.wasm", bin)
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
