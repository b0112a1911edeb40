package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"
)

// syncWriter is a buffer serve's goroutine writes while the test reads.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestConsoleQuickStart runs the README's console quick start, `voxhost
// serve --admin-addr 127.0.0.1:9090` with no admin tokens: it prints a
// token made for the run, which opens the admin API, and the API refuses
// requests without it.
func TestConsoleQuickStart(t *testing.T) {
	adminAddr := freeAddr(t)
	out := &syncWriter{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		a := newApp()
		a.Writer, a.ErrWriter = out, out
		done <- a.RunContext(ctx, []string{"voxhost", "--cache-dir", "-", "--log-level", "error", "serve", "--addr", "127.0.0.1:0", "--admin-addr", adminAddr})
	}()
	defer func() { cancel(); <-done }()
	line := regexp.MustCompile(`admin token for this run \(no admin.tokens set\): ([0-9a-f]{32})\n`)
	deadline := time.Now().Add(60 * time.Second)
	var token string
	for token == "" {
		if m := line.FindStringSubmatch(out.String()); m != nil {
			token = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v\n%s", err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no admin token:\n%s", out.String())
		}
	}
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {token, http.StatusOK}} {
		req, _ := http.NewRequest("GET", "http://"+adminAddr+"/plugins", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET /plugins with token %q: %d, want %d", tc.token, resp.StatusCode, tc.want)
		}
	}
}
