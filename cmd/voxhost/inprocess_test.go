package main

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// freeAddr is a loopback address nothing listens on, for a server a test
// starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serveInProcess runs `voxhost ARGS…` (a serve) in this process, as the
// tests of what a signal or a scrape sees do. stop cancels it and returns
// its result; ended says whether it has stopped on its own, and how.
func serveInProcess(t *testing.T, args ...string) (stop func() error, ended func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		app := newApp()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		done <- app.RunContext(ctx, append([]string{"voxhost", "--cache-dir", "-", "--log-level", "error"}, args...))
	}()
	var result error
	over := false
	wait := func(d time.Duration) bool {
		if over {
			return true
		}
		select {
		case result = <-done:
			over = true
		case <-time.After(d):
		}
		return over
	}
	t.Cleanup(func() { cancel(); wait(10 * time.Second) })
	stop = func() error {
		cancel()
		if !wait(10 * time.Second) {
			t.Fatal("serve did not stop")
		}
		return result
	}
	ended = func() (bool, error) {
		return wait(0), result
	}
	return stop, ended
}
