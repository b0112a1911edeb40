package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildVoxhost builds the voxhost binary into a test directory, or skips
// the test in -short mode or without a go tool.
func buildVoxhost(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the voxhost binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	bin := filepath.Join(t.TempDir(), "voxhost")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveProcess is a running `voxhost serve`.
type serveProcess struct {
	proc *exec.Cmd
	// addr is the address it serves calls on; exited receives Wait's
	// result once its stderr is read to the end.
	addr   string
	exited chan error
	logMu  sync.Mutex
	log    strings.Builder
}

// logs is what the process wrote to stderr so far.
func (p *serveProcess) logs() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.log.String()
}

// startServe starts proc, a command that runs `voxhost serve`, and waits
// until it says where it serves. The process is killed when the test
// ends, unless the test received from exited.
func startServe(t *testing.T, proc *exec.Cmd) *serveProcess {
	t.Helper()
	stderr, err := proc.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{proc: proc, exited: make(chan error, 1)}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.logMu.Lock()
			p.log.WriteString(line + "\n")
			p.logMu.Unlock()
			if a, ok := strings.CutPrefix(line, "voxhost: serving on "); ok {
				addrc <- strings.Fields(a)[0]
			}
		}
		p.exited <- proc.Wait() // Wait closes the pipe: read it all first
	}()
	t.Cleanup(func() { _ = proc.Process.Kill() })
	select {
	case p.addr = <-addrc:
	case err := <-p.exited:
		t.Fatalf("voxhost exited before serving: %v\n%s", err, p.logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("voxhost did not start\n%s", p.logs())
	}
	return p
}
