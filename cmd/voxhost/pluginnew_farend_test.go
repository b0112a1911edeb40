package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/internal/scaffold"
)

// TestPluginNewFarEnd: plugin new --far-end writes a plugin that asks for
// the far-end reference in every language but WAT (refused with where to
// read how): built, plugin test exercises the reference (its check passes,
// not skips).
func TestPluginNewFarEnd(t *testing.T) {
	bin := buildVoxhost(t)
	for _, lang := range scaffold.Languages() {
		t.Run(lang.ID, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "echo-"+lang.ID)
			out, err := exec.Command(bin, "plugin", "new", "--far-end", "--lang", lang.ID, "echo-"+lang.ID, dir).CombinedOutput()
			if lang.ID == "wat" {
				if err == nil || !strings.Contains(string(out), "export vox_reference yourself") {
					t.Fatalf("plugin new --far-end --lang wat: %v\n%s", err, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("plugin new --far-end: %v\n%s", err, out)
			}
			requireTools(t, lang)
			cmd := exec.Command("make", "--no-print-directory", "VOXHOST="+bin)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make: %v\n%s", err, out)
			}
			cmd = exec.Command(bin, "plugin", "test", "--soak", "0", filepath.Join("build", "echo-"+lang.ID+".wasm"))
			cmd.Dir = dir
			out, err = cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "pass  far-end reference") {
				t.Fatalf("plugin test: %v, want the far-end reference check passed\n%s", err, out)
			}
		})
	}
}
