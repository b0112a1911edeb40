package abi_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/voxhost/voxhost/abi"
)

// TestCHeaderAgrees checks that the C SDK's constants mirror this package.
func TestCHeaderAgrees(t *testing.T) {
	src, err := os.ReadFile("../sdk/c/voxhost.h")
	if err != nil {
		t.Fatal(err)
	}
	defines := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define (VOX_[A-Z_]+) \(?(-?\d+)\)?$`).FindAllSubmatch(src, -1) {
		v, _ := strconv.Atoi(string(m[2]))
		defines[string(m[1])] = v
	}
	want := map[string]int{
		"VOX_ABI_VERSION":      abi.Version,
		"VOX_OK":               abi.StatusOK,
		"VOX_ERROR":            abi.StatusError,
		"VOX_BAD_CONFIG":       abi.StatusBadConfig,
		"VOX_BAD_RATE":         abi.StatusBadRate,
		"VOX_BAD_LENGTH":       abi.StatusBadLength,
		"VOX_BAD_STATE":        abi.StatusBadState,
		"VOX_EVENT_CALL_START": abi.EventCallStart,
		"VOX_EVENT_CALL_END":   abi.EventCallEnd,
		"VOX_EVENT_DTMF":       abi.EventDTMF,
		"VOX_EVENT_CLEAR":      abi.EventClear,
		"VOX_EVENT_FLUSH":      abi.EventFlush,
		"VOX_LOG_DEBUG":        abi.LogDebug,
		"VOX_LOG_INFO":         abi.LogInfo,
		"VOX_LOG_WARN":         abi.LogWarn,
		"VOX_LOG_ERROR":        abi.LogError,
	}
	for name, v := range want {
		got, ok := defines[name]
		if !ok {
			t.Errorf("sdk/c/voxhost.h lacks #define %s", name)
		} else if got != v {
			t.Errorf("sdk/c/voxhost.h: %s = %d, abi says %d", name, got, v)
		}
	}
	for _, name := range []string{abi.VersionMarker, abi.ExportBuffer, abi.ExportProcess, abi.ExportInit, abi.ExportEvent, abi.ExportRate} {
		if !regexp.MustCompile(`"` + name + `"`).Match(src) {
			t.Errorf("sdk/c/voxhost.h never names export %s", name)
		}
	}
	for _, name := range []string{abi.ImportLog, abi.ImportEmit} {
		if !regexp.MustCompile(`VOX_IMPORT\("` + name + `"\)`).Match(src) {
			t.Errorf("sdk/c/voxhost.h does not import %s.%s", abi.HostModule, name)
		}
	}
}
