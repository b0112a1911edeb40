package scaffold

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// placeholder matches a placeholder New should have replaced.
var placeholder = regexp.MustCompile(`__(NAME|IDENT|TYPE|LANG|LANGID|SOURCE|TOOLCHAIN)__`)

// TestNewWritesEveryLanguage: every language's project has its Makefile,
// its source, the SDK in voxhost/ with voxhost.mk, no placeholder left and
// no test of the SDK; the toolchains and builds are TestPluginNewEveryLanguage's
// (cmd/voxhost).
func TestNewWritesEveryLanguage(t *testing.T) {
	for _, l := range Languages() {
		t.Run(l.ID, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "my-plugin")
			p, err := New(l.ID, "my-plugin", dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if p.WASM != "build/my-plugin.wasm" || strings.Contains(p.Source, "__") {
				t.Errorf("WASM %s, Source %s", p.WASM, p.Source)
			}
			want := map[string]bool{"Makefile": false, "README.md": false, ".gitignore": false, p.Source: false, "voxhost/voxhost.mk": false}
			for _, f := range p.Files {
				if _, ok := want[f]; ok {
					want[f] = true
				}
				if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, ".tmpl") || placeholder.MatchString(f) {
					t.Errorf("wrote %s", f)
				}
				data, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				// The SDK's own files are copied as they are; only the
				// templates must have no placeholder left.
				if !strings.HasPrefix(f, SDKDir+"/") || f == SDKDir+"/go.mod" {
					if m := placeholder.Find(data); m != nil {
						t.Errorf("%s: placeholder %s left", f, m)
					}
				}
			}
			for f, ok := range want {
				if !ok {
					t.Errorf("no %s among %q", f, p.Files)
				}
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ lang, name, dir, want string }{
		{"c", "ok", dir, "exists and is not empty"},
		{"cobol", "ok", filepath.Join(dir, "new"), `unknown language "cobol": want one of c, cpp, rust, assemblyscript, go, wat`},
		{"c", "My-Gain", filepath.Join(dir, "new"), "lower-case"},
		{"c", "1gain", filepath.Join(dir, "new"), "starting with a letter"},
		{"c", strings.Repeat("a", 41), filepath.Join(dir, "new"), "1 to 40"},
	} {
		if _, err := New(c.lang, c.name, c.dir, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%s, %s): %v, want an error with %q", c.lang, c.name, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("a refused project left a directory")
	}
}

func TestNames(t *testing.T) {
	r := Language{ID: "rust", Title: "Rust", Source: "src/lib.rs"}.replacer("my-gain_2")
	if got := r.Replace("__NAME__ __IDENT__ __TYPE__ __LANGID__ __LANG__ __SOURCE__"); got != "my-gain_2 my_gain_2 MyGain2 rust Rust src/lib.rs" {
		t.Errorf("replaced: %s", got)
	}
}
