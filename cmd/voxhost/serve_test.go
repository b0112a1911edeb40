//go:build unix

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeReloadsOnSIGHUP runs `voxhost serve --admin-addr` in-process,
// edits its config file and sends the process SIGHUP: the new pipeline
// appears in the admin API's GET /pipelines.
func TestServeReloadsOnSIGHUP(t *testing.T) {
	adminAddr := freeAddr(t)
	path := filepath.Join(t.TempDir(), "voxhost.yaml")
	conf := func(pipeline string) {
		data := fmt.Sprintf("listen: '127.0.0.1:0'\nadmin:\n  tokens: [s3cret]\nlimits: {drain_timeout: 1s}\npipelines:\n  %s: [{plugin: gain}]\n", pipeline)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf("before")
	stop, ended := serveInProcess(t, "serve", "--config", path, "--admin-addr", adminAddr)
	pipelines := func() (string, error) {
		req, _ := http.NewRequest("GET", "http://"+adminAddr+"/pipelines", nil)
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		return string(b), err
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			body, err := pipelines()
			if err == nil && strings.Contains(body, want) {
				return
			}
			if over, err := ended(); over {
				t.Fatalf("serve ended: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /pipelines never showed %s: %s %v", want, body, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Serving the admin API means the SIGHUP handler is installed.
	waitFor(`"name": "before"`)
	conf("after")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(`"name": "after"`)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
