//go:build linux || darwin || freebsd || netbsd || openbsd

package httpguard

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// readable hands out its listener's connections once the client's first
// bytes have arrived, so that the door sees what a surge's connections
// show it (a request already sent) whatever the machine's timing: the
// wait is on the socket's readiness, not a sleep.
type readable struct{ net.Listener }

func (l readable) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return nil, err
	}
	var b [1]byte
	_ = raw.Read(func(fd uintptr) bool { return peek(fd, b[:]) > 0 })
	return c, nil
}

// handedOn tells of each connection the door hands on to net/http.
type handedOn struct {
	net.Listener
	passed chan struct{}
}

func (l handedOn) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.passed <- struct{}{}
	}
	return c, err
}

type heldKey struct{}

// serveDoor serves "passed" behind a Door that refuses /call while shut
// and holds it while open ("passed held": the handler saw the hold let go
// of); passed hears of each connection the door lets through.
func serveDoor(t *testing.T, shut *atomic.Bool, refused *atomic.Int64) (addr string, passed chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := Door(readable{ln}, func(method, target []byte) ([]byte, bool) {
		if string(method) != "GET" || !strings.HasPrefix(string(target), "/call") {
			return nil, false
		}
		if !shut.Load() {
			return nil, true
		}
		refused.Add(1)
		return Answer(http.StatusServiceUnavailable, "2", "full: try another host"), false
	})
	passed = make(chan struct{}, 8)
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "passed")
			if r.Context().Value(heldKey{}) == true {
				io.WriteString(w, " held")
			}
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, heldKey{}, Let(c))
		},
	}
	go hs.Serve(handedOn{d, passed})
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String(), passed
}

// ask sends a request head on a new connection, in parts: each after the
// first once the door has handed the connection on (after, a wait that
// never ends if it does not). It reads the answer.
func ask(t *testing.T, addr string, passed <-chan struct{}, parts ...string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, p := range parts {
		if i > 0 {
			<-passed
		}
		if _, err := io.WriteString(c, p); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestDoorRefusesWhileShut: while shut, a request the refuse function
// refuses gets its answer from the door, whole (status, Retry-After, the
// close, the body), and the connection ends; other requests, and all of
// them while open, reach the handler.
func TestDoorRefusesWhileShut(t *testing.T) {
	var shut atomic.Bool
	var refused atomic.Int64
	addr, passed := serveDoor(t, &shut, &refused)
	get := func(target string) string { return "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n" }

	if resp, body := ask(t, addr, passed, get("/call?pipeline=a")); resp.StatusCode != 200 || body != "passed held" {
		t.Fatalf("open door: %d %q, want 200 passed held", resp.StatusCode, body)
	}
	shut.Store(true)
	resp, body := ask(t, addr, passed, get("/call?pipeline=a"))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" || !resp.Close ||
		body != "full: try another host\n" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("shut door: %d Retry-After %q close %v %q %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close, resp.Header.Get("Content-Type"), body)
	}
	if refused.Load() != 1 {
		t.Fatalf("refuse asked %d times, want 1", refused.Load())
	}
	if resp, body := ask(t, addr, passed, get("/metrics")); resp.StatusCode != 200 || body != "passed" {
		t.Fatalf("shut door, another path: %d %q, want 200 passed", resp.StatusCode, body)
	}
}

// TestDoorPassesAnUnfinishedHead: a request whose head has not all
// arrived is net/http's to read, shut or not; the door never waits for it.
func TestDoorPassesAnUnfinishedHead(t *testing.T) {
	var shut atomic.Bool
	var refused atomic.Int64
	shut.Store(true)
	addr, passed := serveDoor(t, &shut, &refused)
	resp, body := ask(t, addr, passed, "GET /call HTTP/1.1\r\nHo", "st: x\r\n\r\n")
	if resp.StatusCode != 200 || body != "passed" || refused.Load() != 0 {
		t.Fatalf("unfinished head: %d %q, refuse asked %d times; want 200 passed, 0", resp.StatusCode, body, refused.Load())
	}
}
