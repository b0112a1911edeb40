package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signalHelperEnv makes the test binary, run again as a child, be a command
// that takes signalContext and then ignores it, as a compile that does not
// watch its context does.
const signalHelperEnv = "VOXHOST_TEST_SIGNAL_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(signalHelperEnv) == "1" {
		ctx, _ := signalContext()
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("cancelled:", context.Cause(ctx))
		select {} // the work that does not stop
	}
	os.Exit(m.Run())
}

// The first SIGTERM cancels the commands' context; once it has, SIGTERM
// has its default action again, so a process stuck in work that ignores
// the context still ends when it is sent again.
func TestRepeatedSIGTERMEndsAProcessThatIgnoresItsContext(t *testing.T) {
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), signalHelperEnv+"=1")
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		exited <- child.Wait()
	}()
	defer func() { _ = child.Process.Kill() }()
	expect := func(prefix string) string {
		t.Helper()
		select {
		case line := <-lines:
			if !strings.HasPrefix(line, prefix) {
				t.Fatalf("child said %q, want %s...", line, prefix)
			}
			return line
		case <-time.After(10 * time.Second):
			t.Fatalf("child did not say %s", prefix)
		}
		return ""
	}
	expect("ready")
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if line := expect("cancelled:"); !strings.Contains(line, "terminated") {
		t.Errorf("context cause %q does not name SIGTERM", line)
	}
	// The default action comes back just after the context is cancelled:
	// send until it takes, as an operator would.
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("child ended with %v, want death by SIGTERM", err)
			}
			if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
				t.Fatalf("child ended with %v, want death by SIGTERM", err)
			}
			return
		case <-tick.C:
			_ = child.Process.Signal(syscall.SIGTERM)
		case <-deadline:
			t.Fatal("the child ignored SIGTERM after its context was cancelled")
		}
	}
}

// A command whose context is cancelled says it was interrupted rather than
// reporting a verdict on what it did not finish: an inspect cut short is
// not an invalid module.
func TestCancelledInspectSaysInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	app := newApp()
	err := app.RunContext(ctx, []string{"voxhost", "--cache-dir", "-", "--log-level", "warn", "plugin", "inspect", "gain"})
	var exit exitError
	if err == nil || errors.As(err, &exit) || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err = %v, want an error saying the command was cancelled", err)
	}
}
