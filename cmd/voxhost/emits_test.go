package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestServeCountsDroppedEmits runs `voxhost serve` in-process with a
// pipeline of bad_emits.wasm, which makes six emits the ABI forbids in
// every frame, places a call of 10 frames and reads /metrics: once the call
// has ended, voxhost_plugin_emits_dropped_total has them by reason.
func TestServeCountsDroppedEmits(t *testing.T) {
	addr := freeAddr(t)
	wasm, err := filepath.Abs(filepath.Join("..", "..", "host", "plugin", "testdata", "bad_emits.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "voxhost.yaml")
	conf := fmt.Sprintf("limits: {drain_timeout: 1s}\npipelines:\n  bad: [{plugin: %q}]\n", wasm)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	stop, _ := serveInProcess(t, "serve", "--config", path, "--addr", addr)
	metrics := func() string {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for metrics() == "" {
		if time.Now().After(deadline) {
			t.Fatal("serve never answered /metrics")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got, err := echoCall("ws://"+addr+"/ws?pipeline=bad", 10); err != nil || got != 10 {
		t.Fatalf("call: %d of 10 frames, %v", got, err)
	}
	want := map[string]string{"bad_name": "20", "invalid_data": "20", "oversize_data": "10", "out_of_bounds": "10"}
	for {
		body := metrics()
		missing := ""
		for reason, n := range want {
			re := regexp.MustCompile(`voxhost_plugin_emits_dropped_total\{plugin="[^"]*bad_emits[^"]*",reason="` + reason + `"\} ` + n + `\n`)
			if !re.MatchString(body) {
				missing = reason
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s count of %s in /metrics:\n%s", missing, want[missing], regexp.MustCompile(`(?m)^voxhost_plugin_emits.*$`).FindAllString(body, -1))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
