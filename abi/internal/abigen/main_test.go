package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSDKsMatchABI fails when an SDK's constants differ from what abi.go
// generates: someone edited a generated file, or abi.go without go generate.
func TestSDKsMatchABI(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what abi/abi.go generates: run go generate ./abi (and edit abi/abi.go, not %s)", path, path)
		}
	}
}

// TestGeneratedNames pins the spellings each language has always used, which
// plugins compile against.
func TestGeneratedNames(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, lines := range map[string][]string{
		"sdk/c/voxhost.h":                    {"#define VOX_ABI_VERSION 1\n", "#define VOX_BAD_CONFIG (-2)\n", "#define VOX_EVENT_DTMF 3\n", "#define VOX_LOG_WARN 2\n"},
		"sdk/rust/src/abi.rs":                {"pub const ABI_VERSION: i32 = 1;\n", "pub const STATUS_BAD_CONFIG: i32 = -2;\n", "pub const MAX_EMIT_NAME_LEN: usize = 64;\n", "pub const TELEPHONY_RATE: u32 = 8000;\n", "pub const EXPORT_BUFFER: &str = \"vox_buffer\";\n"},
		"sdk/assemblyscript/assembly/abi.ts": {"export const Version: i32 = 1;\n", "@lazy\nexport const VersionMarker: string = \"voxhost_abi_v1\";\n"},
		"sdk/go/abi.go":                      {"\tStatusBadConfig = -2\n", "const TelephonyRate = 8000\n"},
	} {
		for _, l := range lines {
			if !strings.Contains(string(files[path]), l) {
				t.Errorf("%s lacks %q", path, l)
			}
		}
	}
}
