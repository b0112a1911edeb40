package abi_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/voxhost/voxhost/abi"
)

// The SDKs' constants are generated from abi.go (abi/internal/abigen, whose
// test fails when they drift); these tests check the code around them: that
// each SDK defines the exports and imports the ABI names.

// sdkSource reads a file of an SDK, relative to sdk/.
func sdkSource(t *testing.T, path string) []byte {
	t.Helper()
	src, err := os.ReadFile("../sdk/" + path)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// mustMatch fails unless each pattern, with %s replaced by its quoted name,
// matches src.
func mustMatch(t *testing.T, file string, src []byte, pattern string, names ...string) {
	t.Helper()
	for _, name := range names {
		re := regexp.MustCompile(regexp.MustCompile(`%s`).ReplaceAllLiteralString(pattern, regexp.QuoteMeta(name)))
		if !re.Match(src) {
			t.Errorf("sdk/%s does not name %s (no match for %s)", file, name, re)
		}
	}
}

func TestCHeaderNamesExportsAndImports(t *testing.T) {
	src := sdkSource(t, "c/voxhost.h")
	mustMatch(t, "c/voxhost.h", src, `VOX_EXPORT\("%s"\)`, abi.VersionMarker, abi.ExportBuffer, abi.ExportProcess, abi.ExportInit, abi.ExportEvent, abi.ExportRate)
	mustMatch(t, "c/voxhost.h", src, `VOX_IMPORT\("%s"\)`, abi.ImportLog, abi.ImportEmit)
}

func TestRustSDKNamesExportsAndImports(t *testing.T) {
	src := sdkSource(t, "rust/src/lib.rs")
	mustMatch(t, "rust/src/lib.rs", src, `#\[export_name = "%s"\]`, abi.VersionMarker, abi.ExportBuffer, abi.ExportProcess, abi.ExportInit, abi.ExportEvent, abi.ExportRate)
	mustMatch(t, "rust/src/lib.rs", src, `#\[link\(wasm_import_module = "%s"\)\]`, abi.HostModule)
	mustMatch(t, "rust/src/lib.rs", src, `#\[link_name = "%s"\]`, abi.ImportLog, abi.ImportEmit)
}

func TestAssemblyScriptSDKNamesExportsAndImports(t *testing.T) {
	host := sdkSource(t, "assemblyscript/assembly/host.ts")
	mustMatch(t, "assemblyscript/assembly/host.ts", host, `@external\("voxhost", "%s"\)\s*\n\s*export declare function \w+\(`, abi.ImportLog, abi.ImportEmit)
	buffer := sdkSource(t, "assemblyscript/assembly/buffer.ts")
	mustMatch(t, "assemblyscript/assembly/buffer.ts", buffer, `export function %s\(`, abi.VersionMarker, abi.ExportBuffer)
}
