package abi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/voxhost/voxhost/abi"
)

// rustSDKConstRE matches `pub const NAME: TYPE = VALUE;` in the Rust SDK, where
// VALUE is an integer or a string literal.
var rustSDKConstRE = regexp.MustCompile(`(?m)^\s*pub const ([A-Z][A-Z0-9_]*): [^=]+= (-?[0-9]+|"[^"\\]*");`)

// rustSDKConsts reads every literal constant of sdk/rust/src/*.rs, as Go
// literal text (strings keep their quotes).
func rustSDKConsts(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("../sdk/rust/src/*.rs")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Rust sources in sdk/rust/src (%v)", err)
	}
	consts := map[string]string{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rustSDKConstRE.FindAllSubmatch(src, -1) {
			name := string(m[1])
			if prev, dup := consts[name]; dup {
				t.Errorf("sdk/rust: %s defined twice (%s and %s)", name, prev, m[2])
			}
			consts[name] = string(m[2])
		}
	}
	return consts
}

// rustSDKName is the Rust spelling of a constant of package abi:
// MaxEmitNameLen -> MAX_EMIT_NAME_LEN, EventDTMF -> EVENT_DTMF.
func rustSDKName(goName string) string {
	if goName == "Version" {
		return "ABI_VERSION"
	}
	r := []rune(goName)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) &&
			(unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(c))
	}
	return b.String()
}

// rustSDKGoConsts reads every exported constant of abi.go with its literal value.
func rustSDKGoConsts(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "abi.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if !id.IsExported() {
					continue
				}
				if i >= len(vs.Values) {
					t.Fatalf("abi.go: %s has no literal value; teach this test to read it", id.Name)
				}
				switch v := vs.Values[i].(type) {
				case *ast.BasicLit:
					consts[id.Name] = v.Value
				case *ast.UnaryExpr:
					lit, ok := v.X.(*ast.BasicLit)
					if !ok || v.Op != token.SUB {
						t.Fatalf("abi.go: cannot read the value of %s", id.Name)
					}
					consts[id.Name] = "-" + lit.Value
				default:
					t.Fatalf("abi.go: cannot read the value of %s", id.Name)
				}
			}
		}
	}
	return consts
}

// TestRustSDKAgrees checks that the Rust SDK (sdk/rust) mirrors every
// constant of this package, and that its plugin! macro and host imports use
// the ABI's names.
func TestRustSDKAgrees(t *testing.T) {
	rust := rustSDKConsts(t)
	gos := rustSDKGoConsts(t)
	if len(gos) < 30 {
		t.Fatalf("read only %d constants from abi.go", len(gos))
	}
	mirrored := map[string]bool{}
	for goName, goVal := range gos {
		name := rustSDKName(goName)
		mirrored[name] = true
		got, ok := rust[name]
		switch {
		case !ok:
			t.Errorf("sdk/rust/src lacks pub const %s (abi.%s = %s)", name, goName, goVal)
		case got != goVal:
			t.Errorf("sdk/rust/src: %s = %s, abi.%s = %s", name, got, goName, goVal)
		}
	}
	// A constant the Rust SDK has under an ABI prefix but abi.go does not is
	// stale or misspelt.
	prefix := regexp.MustCompile(`^(ABI|VERSION|EXPORT|HOST|IMPORT|STATUS|EVENT|LOG|EMIT|MAX|SAMPLE|BUFFER|TELEPHONY)_`)
	for name, v := range rust {
		if prefix.MatchString(name) && !mirrored[name] {
			t.Errorf("sdk/rust/src: %s = %s has no counterpart in abi.go", name, v)
		}
	}

	// Spot checks against the compiled package, in case the parsing above
	// and the constants drift apart.
	for name, want := range map[string]int{
		"ABI_VERSION": abi.Version, "STATUS_BAD_CONFIG": abi.StatusBadConfig,
		"EVENT_FLUSH": abi.EventFlush, "LOG_ERROR": abi.LogError, "EVENT_DTMF": abi.EventDTMF,
	} {
		if got, _ := strconv.Atoi(rust[name]); got != want || rust[name] == "" {
			t.Errorf("sdk/rust/src: %s = %q, abi says %d", name, rust[name], want)
		}
	}

	lib, err := os.ReadFile("../sdk/rust/src/lib.rs")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{abi.VersionMarker, abi.ExportBuffer, abi.ExportProcess, abi.ExportInit, abi.ExportEvent, abi.ExportRate} {
		if !regexp.MustCompile(`#\[export_name = "` + regexp.QuoteMeta(name) + `"\]`).Match(lib) {
			t.Errorf("sdk/rust/src/lib.rs: the plugin! macro does not define export %s", name)
		}
	}
	if !regexp.MustCompile(`#\[link\(wasm_import_module = "` + regexp.QuoteMeta(abi.HostModule) + `"\)\]`).Match(lib) {
		t.Errorf("sdk/rust/src/lib.rs does not import from module %s", abi.HostModule)
	}
	for _, name := range []string{abi.ImportLog, abi.ImportEmit} {
		if !regexp.MustCompile(`#\[link_name = "` + regexp.QuoteMeta(name) + `"\]`).Match(lib) {
			t.Errorf("sdk/rust/src/lib.rs does not import %s.%s", abi.HostModule, name)
		}
	}
}

func TestRustSDKNameSpelling(t *testing.T) {
	for goName, want := range map[string]string{
		"Version": "ABI_VERSION", "VersionMarkerPrefix": "VERSION_MARKER_PREFIX", "StatusOK": "STATUS_OK",
		"EventDTMF": "EVENT_DTMF", "MaxEmitNameLen": "MAX_EMIT_NAME_LEN", "TelephonyRate": "TELEPHONY_RATE",
		"EmitSpeechStart": "EMIT_SPEECH_START", "DTMFTone": "DTMF_TONE", "Pcm16Bytes": "PCM16_BYTES",
	} {
		if got := rustSDKName(goName); got != want {
			t.Errorf("rustSDKName(%s) = %s, want %s", goName, got, want)
		}
	}
}
