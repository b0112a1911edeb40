package app_test

// Issue 26's findings 2, 3, 8 and 9, each against a served host: real
// listeners on loopback, real net/http clients (or raw TCP where a client
// must misbehave as an attacker's would). Waits are on conditions: the
// server answering, or closing the connection.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/internal/app"
)

// served is a host serving a config, with its listeners' addresses.
type served struct {
	h           *app.Host
	call, admin string // host:port
}

// serveYAML serves the config in text, with one passthrough pipeline and
// no compile cache.
func serveYAML(t *testing.T, text string) *served {
	t.Helper()
	text = "listen: '127.0.0.1:0'\nlimits: {drain_timeout: 1s}\npipelines:\n  p: [{plugin: passthrough}]\n" + text
	cfg, err := config.ParseChecked("voxhost.yaml", []byte(text), app.Checker{})
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Apply(&cfg, app.Overrides{CacheDir: "-"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := app.New(ctx, cfg, quiet())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- h.ListenAndServe(ctx, func(a net.Addr) { addrc <- a }) }()
	s := &served{h: h}
	select {
	case a := <-addrc:
		s.call = a.String()
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	if a := h.AdminAddr(); a != nil {
		s.admin = a.String()
	}
	t.Cleanup(func() {
		cancel()
		<-done
		h.Close(context.Background())
	})
	return s
}

// request is one HTTP request for do.
type request struct {
	method, url string
	host        string // the Host header, if not the URL's
	token       string
	header      map[string]string
	body        string
}

// crossSite are the headers a browser sends with a fetch() or form post
// from a page of another site: a text/plain body needs no CORS preflight.
var crossSite = map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"}

// do sends r with a client of its own and returns the status and body.
func do(t *testing.T, r request) (int, string) {
	t.Helper()
	req, err := http.NewRequest(r.method, r.url, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.host != "" {
		req.Host = r.host
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rebound are the headers of a page whose name was made to resolve to
// 127.0.0.1 (DNS rebinding): to the browser it is the page's own origin.
func rebound(addr string) (host string, header map[string]string) {
	_, port, _ := net.SplitHostPort(addr)
	host = "rebind.evil.example:" + port
	return host, map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin", "Content-Type": "text/plain"}
}

// TestAdminQuickStartRefusesWebPages is finding 2's PoC against the
// README's console quick start (admin.listen on loopback, no tokens): a
// cross-site POST /reload and POST /console/tickets, a rebound PUT
// /plugins/passthrough and GET /plugins, and GET /debug/pprof/cmdline
// without a token are all refused; the token voxhost made for the run
// does what the operator asks.
func TestAdminQuickStartRefusesWebPages(t *testing.T) {
	s := serveYAML(t, "admin: {listen: '127.0.0.1:0'}\n")
	base := "http://" + s.admin
	tok := s.h.AdminToken()
	if len(tok) < 32 {
		t.Fatalf("AdminToken() = %q: the quick start needs a token made for the run", tok)
	}
	host, header := rebound(s.admin)
	wasm, err := os.ReadFile("../admin/testdata/negate.wasm")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		r    request
		want int
	}{
		{"cross-site POST /reload", request{method: "POST", url: base + "/reload", header: crossSite}, http.StatusForbidden},
		{"cross-site POST /reload with the token", request{method: "POST", url: base + "/reload", token: tok, header: crossSite}, http.StatusForbidden},
		{"cross-site POST /console/tickets", request{method: "POST", url: base + "/console/tickets", header: crossSite}, http.StatusForbidden},
		{"same-site POST /reload (another port of localhost)", request{method: "POST", url: base + "/reload",
			header: map[string]string{"Origin": "http://localhost:1", "Sec-Fetch-Site": "same-site"}}, http.StatusForbidden},
		{"rebound PUT /plugins/passthrough", request{method: "PUT", url: base + "/plugins/passthrough", host: host, header: header, body: string(wasm)}, http.StatusForbidden},
		{"rebound GET /plugins", request{method: "GET", url: base + "/plugins", host: host, header: header}, http.StatusForbidden},
		{"rebound GET /console/", request{method: "GET", url: base + "/console/", host: host, header: header}, http.StatusForbidden},
		{"GET /debug/pprof/cmdline without the token", request{method: "GET", url: base + "/debug/pprof/cmdline"}, http.StatusUnauthorized},
		{"POST /reload without the token (curl)", request{method: "POST", url: base + "/reload"}, http.StatusUnauthorized},
		{"POST /console/tickets without the token (curl)", request{method: "POST", url: base + "/console/tickets"}, http.StatusUnauthorized},
		// What the operator does still works, from curl and from the page.
		{"POST /reload with the token", request{method: "POST", url: base + "/reload", token: tok}, http.StatusConflict}, // no config file to reload
		{"same-origin POST /console/tickets with the token", request{method: "POST", url: base + "/console/tickets", token: tok,
			header: map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}}, http.StatusCreated},
		{"GET /plugins with the token on localhost", request{method: "GET", url: base + "/plugins", host: "localhost:" + port(s.admin), token: tok}, http.StatusOK},
		{"GET /debug/pprof/cmdline with the token", request{method: "GET", url: base + "/debug/pprof/cmdline", token: tok}, http.StatusOK},
		{"GET /console/ (the page needs no token)", request{method: "GET", url: base + "/console/"}, http.StatusOK},
	} {
		if status, body := do(t, tc.r); status != tc.want {
			t.Errorf("%s: %d %.200s, want %d", tc.what, status, body, tc.want)
		}
	}
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// TestAdminWithoutTokenStillRefusesWebPages: admin.insecure_no_token is
// the operator's explicit opt-out from tokens; the Host and origin checks
// still hold, and the profiles are not served at all.
func TestAdminWithoutTokenStillRefusesWebPages(t *testing.T) {
	s := serveYAML(t, "admin: {listen: '127.0.0.1:0', insecure_no_token: true}\n")
	base := "http://" + s.admin
	if tok := s.h.AdminToken(); tok != "" {
		t.Fatalf("AdminToken() = %q with admin.insecure_no_token", tok)
	}
	host, header := rebound(s.admin)
	for _, tc := range []struct {
		what string
		r    request
		want int
	}{
		{"cross-site POST /reload", request{method: "POST", url: base + "/reload", header: crossSite}, http.StatusForbidden},
		{"cross-site POST /console/tickets", request{method: "POST", url: base + "/console/tickets", header: crossSite}, http.StatusForbidden},
		{"rebound GET /plugins", request{method: "GET", url: base + "/plugins", host: host, header: header}, http.StatusForbidden},
		{"GET /debug/pprof/cmdline", request{method: "GET", url: base + "/debug/pprof/cmdline"}, http.StatusForbidden},
		{"POST /reload (curl)", request{method: "POST", url: base + "/reload"}, http.StatusConflict},
		{"GET /plugins (curl)", request{method: "GET", url: base + "/plugins"}, http.StatusOK},
	} {
		if status, body := do(t, tc.r); status != tc.want {
			t.Errorf("%s: %d %.200s, want %d", tc.what, status, body, tc.want)
		}
	}
}

// TestAllowedHosts: a listener answers the names admin.allowed_hosts and
// allowed_hosts list, loopback ones, and no others.
func TestAllowedHosts(t *testing.T) {
	s := serveYAML(t, "allowed_hosts: [voice.example.com]\nadmin: {listen: '127.0.0.1:0', tokens: [t0k], allowed_hosts: ['*.internal']}\n")
	for _, tc := range []struct {
		addr, path, host string
		want             int
	}{
		{s.admin, "/plugins", "admin.internal", http.StatusOK},
		{s.admin, "/plugins", "ADMIN.internal.:" + port(s.admin), http.StatusOK},
		{s.admin, "/plugins", "[::1]:" + port(s.admin), http.StatusOK},
		{s.admin, "/plugins", "voice.example.com", http.StatusForbidden},
		{s.admin, "/plugins", "10.0.0.1", http.StatusForbidden}, // no client reaches loopback by that address
		{s.call, "/healthz", "voice.example.com", http.StatusOK},
		{s.call, "/healthz", "localhost", http.StatusOK},
		{s.call, "/healthz", "admin.internal", http.StatusForbidden},
	} {
		if status, body := do(t, request{method: "GET", url: "http://" + tc.addr + tc.path, host: tc.host, token: "t0k"}); status != tc.want {
			t.Errorf("GET %s with Host %s: %d %.200s, want %d", tc.path, tc.host, status, body, tc.want)
		}
	}
}

// TestCallListenerRefusesReboundWebSocket is finding 2's PoC on the call
// listener: a WebSocket whose Host and Origin are the same rebound name
// is refused before the upgrade, while a call to the listener's own
// address is taken; with console: true, a cross-site POST to the
// console's API is refused too.
func TestCallListenerRefusesReboundWebSocket(t *testing.T) {
	s := serveYAML(t, "console: true\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host, header := rebound(s.call)
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	c, resp, err := websocket.Dial(ctx, "ws://"+s.call+"/ws", &websocket.DialOptions{Host: host, HTTPHeader: h})
	if err == nil {
		c.CloseNow()
		t.Fatal("a WebSocket with a rebound Host was upgraded")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("rebound WebSocket: %v, want 403", err)
	}
	c, _, err = websocket.Dial(ctx, "ws://"+s.call+"/ws", nil)
	if err != nil {
		t.Fatalf("a call to the listener's own address: %v", err)
	}
	c.CloseNow()
	for _, path := range []string{"/console/api/run?name=a.wav", "/console/tickets"} {
		if status, body := do(t, request{method: "POST", url: "http://" + s.call + path, header: crossSite, body: "RIFF"}); status != http.StatusForbidden {
			t.Errorf("cross-site POST %s: %d %.200s, want 403", path, status, body)
		}
	}
}

// dialRaw opens a TCP connection with a deadline far beyond any timeout
// under test: reaching it means the server never closed the connection.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

// awaitClose reads c until the server closes it, and fails if it does not
// within the connection's deadline.
func awaitClose(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: the server kept the connection open", what)
	}
}

// TestListenersTimeOutConnections is finding 3's PoC on both listeners:
// a kept-alive connection that sends no next request, one that never
// finishes its headers and one that never finishes its body are each
// closed by the server after the configured timeout.
func TestListenersTimeOutConnections(t *testing.T) {
	s := serveYAML(t, "console: true\nhttp: {read_header_timeout: 200ms, read_timeout: 300ms, idle_timeout: 200ms}\nadmin: {listen: '127.0.0.1:0', tokens: [t0k]}\n")
	for _, l := range []struct{ name, addr, body string }{
		{"call listener", s.call, "POST /console/api/run?name=a.wav HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\nRIFF"},
		{"admin listener", s.admin, "PUT /plugins/x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer t0k\r\nContent-Length: 100000\r\n\r\n\x00asm"},
	} {
		idle := dialRaw(t, l.addr)
		fmt.Fprint(idle, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		resp.Body.Close()
		awaitClose(t, idle, l.name+", idle kept-alive connection")

		headers := dialRaw(t, l.addr)
		fmt.Fprint(headers, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
		awaitClose(t, headers, l.name+", unfinished headers")

		body := dialRaw(t, l.addr)
		fmt.Fprint(body, l.body)
		awaitClose(t, body, l.name+", unfinished body")
	}
}

// TestCallsOutliveTheReadTimeout: the read timeout bounds requests, not
// the calls they upgrade to, on the call listener and on the admin
// listener's console.
func TestCallsOutliveTheReadTimeout(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	s := serveYAML(t, fmt.Sprintf("http: {read_header_timeout: %[1]v, read_timeout: %[1]v}\nadmin: {listen: '127.0.0.1:0', tokens: [t0k]}\n", readTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	status, body := do(t, request{method: "POST", url: "http://" + s.admin + "/console/tickets", token: "t0k"})
	if status != http.StatusCreated {
		t.Fatalf("POST /console/tickets: %d %s", status, body)
	}
	ticket := body[strings.Index(body, `"ticket":"`)+10:]
	ticket = ticket[:strings.IndexByte(ticket, '"')]
	for _, u := range []string{"ws://" + s.call + "/ws", "ws://" + s.admin + "/console/call?" + url.Values{"ticket": {ticket}}.Encode()} {
		c, _, err := websocket.Dial(ctx, u, nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		frame := make([]byte, 160)
		// Frames go back and forth until the call has lasted several read
		// timeouts, however long each takes on a loaded machine.
		start := time.Now()
		for n := 0; n < 10 || time.Since(start) < 5*readTimeout; n++ {
			if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
				t.Fatalf("%s: frame %d after %v: %v", u, n, time.Since(start), err)
			}
			if _, _, err := c.Read(ctx); err != nil {
				t.Fatalf("%s: reply %d after %v: %v", u, n, time.Since(start), err)
			}
		}
		c.CloseNow()
	}
}

// TestRunTakesItsSlotBeforeTheBody is finding 3's second PoC: POST
// /console/api/run answers a second request while the first holds the one
// run slot, without reading the second's body (an Expect: 100-continue
// client is told to send it only once the handler reads it).
func TestRunTakesItsSlotBeforeTheBody(t *testing.T) {
	s := serveYAML(t, "console: true\n")
	const req = "POST /console/api/run?name=a.wav HTTP/1.1\r\nHost: localhost\r\nContent-Length: 8388607\r\nExpect: 100-continue\r\n\r\n"
	// statusLine sends the request's headers and reads the first answer.
	statusLine := func(c net.Conn) string {
		t.Helper()
		fmt.Fprint(c, req)
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(line)
	}
	first := dialRaw(t, s.call)
	if line := statusLine(first); !strings.Contains(line, " 100 ") {
		t.Fatalf("first run: %q, want 100 Continue", line)
	}
	// The first request's handler is reading its body, so it holds the slot.
	second := dialRaw(t, s.call)
	if line := statusLine(second); !strings.Contains(line, " 429 ") {
		t.Fatalf("second run while the first holds the slot: %q, want 429 before its body is read", line)
	}
	first.Close()
	// Once the first gives the slot back, a run gets it.
	for {
		c := dialRaw(t, s.call)
		line := statusLine(c)
		c.Close()
		if strings.Contains(line, " 100 ") {
			break
		}
		if !strings.Contains(line, " 429 ") {
			t.Fatalf("run after the first ended: %q", line)
		}
	}
}

// TestConnectionsPerAddress is finding 3's limit on the connections of one
// source address, on both listeners: a connection over it is closed
// unanswered, and one closing makes room.
func TestConnectionsPerAddress(t *testing.T) {
	s := serveYAML(t, "http: {max_conns_per_ip: 2}\nadmin: {listen: '127.0.0.1:0', tokens: [t0k]}\n")
	get := func(c net.Conn) error {
		fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, addr := range []string{s.call, s.admin} {
		a, b := dialRaw(t, addr), dialRaw(t, addr)
		if err := get(a); err != nil {
			t.Fatal(err)
		}
		if err := get(b); err != nil {
			t.Fatal(err)
		}
		third := dialRaw(t, addr)
		if err := get(third); err == nil {
			t.Fatalf("%s: a third connection from one address was answered", addr)
		}
		a.Close()
		for {
			c := dialRaw(t, addr)
			err := get(c)
			c.Close()
			if err == nil {
				break
			}
		}
		b.Close()
	}
}

// TestHeaderSize is finding 9: headers over http.max_header_bytes (64 KiB
// by default, not net/http's 1 MiB) are answered 431 on both listeners.
func TestHeaderSize(t *testing.T) {
	s := serveYAML(t, "admin: {listen: '127.0.0.1:0', tokens: [t0k]}\n")
	for _, addr := range []string{s.call, s.admin} {
		for _, tc := range []struct {
			size int
			want int
		}{{32 << 10, http.StatusOK}, {200 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
			status, body := do(t, request{method: "GET", url: "http://" + addr + "/healthz", token: "t0k",
				header: map[string]string{"X-Big": strings.Repeat("a", tc.size)}})
			if addr == s.admin && status == http.StatusNotFound {
				status = http.StatusOK // the admin API has no /healthz; the request got through
			}
			if status != tc.want {
				t.Errorf("%s: a %d KiB header: %d %.100s, want %d", addr, tc.size>>10, status, body, tc.want)
			}
		}
	}
}

// TestConsoleTicketsPerToken is finding 8: one call token cannot take
// every console ticket of the call listener; another token still gets one.
func TestConsoleTicketsPerToken(t *testing.T) {
	s := serveYAML(t, "console: true\nauth: {tokens: [one, two]}\n")
	u := "http://" + s.call + "/console/tickets"
	client := &http.Client{Timeout: 30 * time.Second}
	taken := 0
	for ; taken < 2000; taken++ {
		req, _ := http.NewRequest("POST", u, nil)
		req.Header.Set("Authorization", "Bearer one")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("ticket %d: %d", taken, resp.StatusCode)
		}
	}
	if taken > 64 {
		t.Errorf("one token took %d tickets", taken)
	}
	if status, body := do(t, request{method: "POST", url: u, token: "two"}); status != http.StatusCreated {
		t.Fatalf("another token after the first took %d: %d %s", taken, status, body)
	}
}
