package abi_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/voxhost/voxhost/abi"
)

// TestAssemblyScriptSDKAgrees checks that the AssemblyScript SDK
// (sdk/assemblyscript) mirrors this package: its constants, under the same
// names as here, the two host imports and the exports it implements.
func TestAssemblyScriptSDKAgrees(t *testing.T) {
	src, err := os.ReadFile("../sdk/assemblyscript/assembly/abi.ts")
	if err != nil {
		t.Fatal(err)
	}
	ints, strs := map[string]int{}, map[string]string{}
	constRe := regexp.MustCompile(`(?m)^export const ([A-Za-z0-9_]+): (i32|string) = (-?\d+|"[^"\\]*");$`)
	for _, m := range constRe.FindAllSubmatch(src, -1) {
		name, typ, value := string(m[1]), string(m[2]), string(m[3])
		if _, dup := ints[name]; dup {
			t.Errorf("abi.ts declares %s twice", name)
		}
		if _, dup := strs[name]; dup {
			t.Errorf("abi.ts declares %s twice", name)
		}
		if typ == "i32" {
			v, err := strconv.Atoi(value)
			if err != nil {
				t.Errorf("abi.ts: %s = %s is not a number", name, value)
			}
			ints[name] = v
		} else {
			if value[0] != '"' {
				t.Errorf("abi.ts: string %s = %s is not a string literal", name, value)
				continue
			}
			strs[name] = value[1 : len(value)-1]
		}
	}
	wantInts := map[string]int{
		"Version":         abi.Version,
		"StatusOK":        abi.StatusOK,
		"StatusError":     abi.StatusError,
		"StatusBadConfig": abi.StatusBadConfig,
		"StatusBadRate":   abi.StatusBadRate,
		"StatusBadLength": abi.StatusBadLength,
		"StatusBadState":  abi.StatusBadState,
		"EventCallStart":  abi.EventCallStart,
		"EventCallEnd":    abi.EventCallEnd,
		"EventDTMF":       abi.EventDTMF,
		"EventClear":      abi.EventClear,
		"EventFlush":      abi.EventFlush,
		"LogDebug":        abi.LogDebug,
		"LogInfo":         abi.LogInfo,
		"LogWarn":         abi.LogWarn,
		"LogError":        abi.LogError,
		"MaxEmitNameLen":  abi.MaxEmitNameLen,
		"MaxEmitDataLen":  abi.MaxEmitDataLen,
		"MaxLogLen":       abi.MaxLogLen,
		"SampleBytes":     abi.SampleBytes,
		"BufferAlign":     abi.BufferAlign,
		"TelephonyRate":   abi.TelephonyRate,
	}
	wantStrs := map[string]string{
		"VersionMarkerPrefix": abi.VersionMarkerPrefix,
		"VersionMarker":       abi.VersionMarker,
		"ExportMemory":        abi.ExportMemory,
		"ExportBuffer":        abi.ExportBuffer,
		"ExportProcess":       abi.ExportProcess,
		"ExportInit":          abi.ExportInit,
		"ExportEvent":         abi.ExportEvent,
		"ExportRate":          abi.ExportRate,
		"HostModule":          abi.HostModule,
		"ImportLog":           abi.ImportLog,
		"ImportEmit":          abi.ImportEmit,
		"EmitClear":           abi.EmitClear,
		"EmitSpeechStart":     abi.EmitSpeechStart,
		"EmitSpeechEnd":       abi.EmitSpeechEnd,
		"EmitDTMF":            abi.EmitDTMF,
	}
	for name, v := range wantInts {
		if got, ok := ints[name]; !ok {
			t.Errorf("sdk/assemblyscript/assembly/abi.ts lacks `export const %s: i32 = %d;`", name, v)
		} else if got != v {
			t.Errorf("sdk/assemblyscript/assembly/abi.ts: %s = %d, abi says %d", name, got, v)
		}
	}
	for name, v := range wantStrs {
		if got, ok := strs[name]; !ok {
			t.Errorf("sdk/assemblyscript/assembly/abi.ts lacks `export const %s: string = %q;`", name, v)
		} else if got != v {
			t.Errorf("sdk/assemblyscript/assembly/abi.ts: %s = %q, abi says %q", name, got, v)
		}
	}
	for name := range ints {
		if _, ok := wantInts[name]; !ok {
			t.Errorf("sdk/assemblyscript/assembly/abi.ts: %s is not checked against package abi (add it here)", name)
		}
	}
	for name := range strs {
		if _, ok := wantStrs[name]; !ok {
			t.Errorf("sdk/assemblyscript/assembly/abi.ts: %s is not checked against package abi (add it here)", name)
		}
	}

	// The host imports: declared with @external under their ABI names.
	host, err := os.ReadFile("../sdk/assemblyscript/assembly/host.ts")
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range []struct{ name, params string }{
		{abi.ImportLog, `level: i32, ptr: usize, len: i32`},
		{abi.ImportEmit, `namePtr: usize, nameLen: i32, dataPtr: usize, dataLen: i32`},
	} {
		re := regexp.MustCompile(`@external\("` + abi.HostModule + `", "` + imp.name + `"\)\s*\n\s*export declare function \w+\(` + regexp.QuoteMeta(imp.params) + `\): void;`)
		if !re.Match(host) {
			t.Errorf("sdk/assemblyscript/assembly/host.ts does not import %s.%s as (%s): void", abi.HostModule, imp.name, imp.params)
		}
	}

	// The exports the SDK implements for a plugin to re-export.
	buffer, err := os.ReadFile("../sdk/assemblyscript/assembly/buffer.ts")
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []string{
		`export function ` + abi.VersionMarker + `(): void`,
		`export function ` + abi.ExportBuffer + `(capacity_bytes: i32): i32`,
	} {
		if !regexp.MustCompile(regexp.QuoteMeta(sig)).Match(buffer) {
			t.Errorf("sdk/assemblyscript/assembly/buffer.ts lacks %q", sig)
		}
	}
}
