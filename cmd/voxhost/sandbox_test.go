package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestHostilePluginsUnderAPodsMemoryLimit runs voxhost as a pod would:
// GOMEMLIMIT=512MiB and an address-space limit (RLIMIT_AS, ulimit -v),
// and sends it calls through every hostile plugin that once took the
// process down or held gigabytes (table growth, 16 MiB fill loops, WASI
// floods, deep recursion), several at once, beside a healthy call. The
// process must survive, the healthy call must get every frame, and the
// peak RSS (VmHWM) stays within the pod's 512 MiB.
func TestHostilePluginsUnderAPodsMemoryLimit(t *testing.T) {
	bin := buildVoxhost(t)
	dir := t.TempDir()
	hostile := []string{"table_grow", "fill_loop", "wasi_flood", "recursion", "grow_bomb"}
	cfg := "default_pipeline: main\npipelines:\n  main:\n    - plugin: gain\n      config: {db: -6}\n"
	for _, name := range hostile {
		path, err := filepath.Abs(filepath.Join("..", "..", "host", "plugin", "testdata", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("  %s:\n    - plugin: gain\n      config: {db: -6}\n    - plugin: %s\n", name, path)
	}
	cfgPath := filepath.Join(dir, "voxhost.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// 8 GiB of address space: each instance reserves its 16 MiB memory
	// limit, the Go runtime and wazero's code a few hundred MiB more.
	proc := exec.Command("/bin/sh", "-c", `ulimit -v 8388608 && exec "$0" --cache-dir - serve --addr 127.0.0.1:0 --config "$1"`, bin, cfgPath)
	proc.Env = append(os.Environ(), "GOMEMLIMIT=512MiB")
	p := startServe(t, proc)
	addr := p.addr

	frames := 50
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(hostile)+1)
	call := func(pipeline string, check bool) {
		defer wg.Done()
		got, err := echoCall(fmt.Sprintf("ws://%s/ws?pipeline=%s", addr, pipeline), frames)
		if err == nil && check && got != frames {
			err = fmt.Errorf("%s: %d of %d frames came back", pipeline, got, frames)
		}
		if err != nil {
			errs <- err
		}
	}
	for round := 0; round < 4; round++ {
		for _, name := range hostile {
			wg.Add(1)
			go call(name, false)
		}
	}
	wg.Add(1)
	go call("main", true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case err := <-p.exited:
		t.Fatalf("voxhost died: %v\n%s", err, p.logs())
	default:
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", proc.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.Fields(v)[0])
			t.Logf("peak RSS %d MiB after %d hostile calls", kb>>10, 4*len(hostile))
			if kb > 512<<10 {
				t.Fatalf("peak RSS %d MiB: over the pod's 512 MiB", kb>>10)
			}
		}
	}
}

// echoCall streams frames of μ-law silence over a raw call and counts the
// audio replies; text events are skipped.
func echoCall(url string, frames int) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return 0, err
	}
	defer c.CloseNow()
	frame := make([]byte, 160)
	for i := range frame {
		frame[i] = 0xff
	}
	got := 0
	for i := 0; i < frames; i++ {
		if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
			return got, err
		}
		for {
			typ, _, err := c.Read(ctx)
			if err != nil {
				return got, fmt.Errorf("frame %d: %w", i, err)
			}
			if typ == websocket.MessageBinary {
				got++
				break
			}
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	return got, nil
}
