package server_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// These tests are issue 26's bot-dial findings, each as its proof of
// concept: a caller's data must not choose where the bot dial goes (1),
// the dial follows no redirect with the route's credentials (4), the bot's
// URL reaches neither the caller nor the log's reason (5), and caller data
// makes no dot segment in the bot's path (6).

// botUnreachable is the only reason a caller hears for a bot dial that
// failed, whatever the cause.
const botUnreachable = "the voice bot cannot be reached"

// logTo makes a host log to l.
func logTo(l *hosttest.LogBuffer) func(*server.Options) {
	return func(o *server.Options) { o.Logger = slog.New(slog.NewTextHandler(l, nil)) }
}

// recorder is an HTTP server that answers 404 and keeps each request's
// headers: where credentials must never arrive.
type recorder struct {
	url     string
	mu      sync.Mutex
	headers []http.Header
}

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		http.NotFound(w, req)
	}))
	t.Cleanup(hs.Close)
	r.url = hs.URL
	return r
}

func (r *recorder) seen() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// credentials are the headers a route sends its bot.
func credentials() http.Header {
	return http.Header{"Authorization": {"Bearer route-secret"}, "X-Api-Key": {"key-secret"}}
}

// rawCallEnds places a raw call at path (with its query) and returns the
// close the host ended it with.
func rawCallEnds(t *testing.T, h *testHost, path string) websocket.CloseError {
	t.Helper()
	c := dial(t, h.url+path)
	defer c.CloseNow()
	ctx := context.Background()
	_ = c.Write(ctx, websocket.MessageBinary, make([]byte, 160))
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !asCloseError(err, &ce) {
			t.Fatalf("the call ended with %v, want a close frame", err)
		}
		return ce
	}
}

// TestCallerDataCannotMoveTheBotDial is finding 1: a placeholder before
// the path let a caller's n=1%40127.0.0.1 turn
// ws://10.255.255.{param.n}:18091/region into a dial of 127.0.0.1 with the
// route's headers, and {param.port} dial any port. Such a route is refused
// when the routes are set, naming the route and the part.
func TestCallerDataCannotMoveTheBotDial(t *testing.T) {
	victim := startRecorder(t)
	victimPort := victim.url[strings.LastIndexByte(victim.url, ':')+1:]
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough"}}, nil)
	ctx := context.Background()
	specs, err := pipeline.ParseSpec("passthrough")
	if err != nil {
		t.Fatal(err)
	}
	inbound, err := h.cat.Definition(ctx, "main", specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, part string }{
		{"ws://10.255.255.{param.n}:18091/region", "host"},
		{"ws://127.0.0.1:{param.port}/p", "port"},
		{"ws://{param.user}@127.0.0.1:" + victimPort + "/p", "userinfo"},
		{"ws{param.s}://127.0.0.1:" + victimPort + "/p", "scheme"},
		{"ws://127.0.0.1{param.port}/p", "host"},
	} {
		t.Run(tc.part, func(t *testing.T) {
			up := upstream(t, tc.url, "raw")
			up.Header = credentials()
			err := h.SetRoutes(ctx, map[string]*server.Route{"main": {Name: "main", Inbound: inbound, Upstream: up}}, "main")
			if err == nil {
				t.Fatalf("a route whose upstream url is %s was accepted: a caller could choose where the bot dial (and its credentials) goes", tc.url)
			}
			for _, want := range []string{"route main", "{param.", "in the " + tc.part} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error %q does not say %q", err, want)
				}
			}
		})
	}

	// What may stand in the path stays there: @ and : in a caller's value
	// reach the route's bot escaped, and nothing else is dialled.
	bot := startBot(t, func(conn *gorilla.Conn) { conn.ReadMessage() })
	up := upstream(t, bot.url+"/region/{param.n}", "raw")
	up.Header = credentials()
	h = newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: up}}, nil)
	rawCallEnds(t, h, "/ws?n=1%40127.0.0.1:"+victimPort)
	if got := victim.seen(); len(got) != 0 {
		t.Fatalf("a caller's value moved the dial to another server, which got %v", got)
	}
	bot.mu.Lock()
	defer bot.mu.Unlock()
	if len(bot.requests) != 1 || bot.requests[0] != "/region/1@127.0.0.1:"+victimPort {
		t.Fatalf("the route's bot got %q, want the caller's value in its path", bot.requests)
	}
}

// TestTheBotDialFollowsNoRedirect is finding 4: a bot that answered 302 to
// another port had the route's Authorization and X-Api-Key (and a Referer)
// follow it there.
func TestTheBotDialFollowsNoRedirect(t *testing.T) {
	elsewhere := startRecorder(t)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.url+"/collect", http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	up := upstream(t, "ws"+strings.TrimPrefix(redirector.URL, "http")+"/bot", "raw")
	up.Header = credentials()
	var log hosttest.LogBuffer
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: up}}, logTo(&log))
	ce := rawCallEnds(t, h, "/ws")
	// The dial is over once the caller hears of it: a redirect it
	// followed would have arrived by now.
	if got := elsewhere.seen(); len(got) != 0 {
		t.Fatalf("the bot dial followed a redirect to another origin, which got the headers %v", got)
	}
	if ce.Code != websocket.StatusTryAgainLater || ce.Reason != botUnreachable {
		t.Fatalf("the caller's call ended with %v, want 1013 %q", ce, botUnreachable)
	}
	assertMetric(t, h, `voxhost_upstream_failures_total{protocol="raw",reason="redirect"} 1`)
	if !strings.Contains(log.String(), "does not follow") {
		t.Fatalf("the log does not say the bot redirected:\n%s", log.String())
	}
}

// TestTheBotURLStaysOutOfReasons is finding 5: a failed handshake put the
// full URL, query and all, in the log's reason= and, cut short, in the
// caller's close reason. The caller now hears a generic reason; the log
// keeps the cause without the secrets.
func TestTheBotURLStaysOutOfReasons(t *testing.T) {
	// Reads the handshake request and hangs up: net/http's error (EOF)
	// quotes the URL it was sending.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = http.ReadRequest(bufio.NewReader(conn))
			conn.Close()
		}
	}()
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(forbidden.Close)
	for _, tc := range []struct{ name, url, cause string }{
		{"hang-up", "ws://user:pass-secret@" + l.Addr().String() + "/bot?key=query-secret&call={call_id}", "reason=EOF"},
		{"http 401", "ws" + strings.TrimPrefix(forbidden.URL, "http") + "/bot?key=query-secret", "HTTP 401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log hosttest.LogBuffer
			h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: upstream(t, tc.url, "raw")}}, logTo(&log))
			ce := rawCallEnds(t, h, "/ws")
			if ce.Code != websocket.StatusTryAgainLater || ce.Reason != botUnreachable {
				t.Fatalf("the caller's call ended with %v %q, want 1013 %q", ce.Code, ce.Reason, botUnreachable)
			}
			assertMetric(t, h, `voxhost_calls_total{outcome="bot_unreachable",protocol="raw"} 1`)
			text := log.String()
			if strings.Contains(text, "secret") {
				t.Fatalf("the log shows the bot url's secrets:\n%s", text)
			}
			if !strings.Contains(text, tc.cause) || !strings.Contains(text, "/bot?…") {
				t.Fatalf("the log does not give the cause (%s) and the redacted url:\n%s", tc.cause, text)
			}
		})
	}
}

// TestCallerDataMakesNoDotSegment is finding 6: lang=.. made GET /bot/..,
// and a Twilio callSid .. /tw/../.., which a proxy that normalises paths
// routes elsewhere. Such a call is not dialled; the route's bot never sees
// it, and the log says why.
func TestCallerDataMakesNoDotSegment(t *testing.T) {
	bot := startBot(t, func(conn *gorilla.Conn) { conn.ReadMessage() })
	var log hosttest.LogBuffer
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough", upstream: upstream(t, bot.url+"/bot/{param.lang}?x=1", "raw")},
		"tw":   {inbound: "passthrough", upstream: upstream(t, bot.url+"/tw/{call_id}/{stream_id}", "raw")},
	}, logTo(&log))

	for _, lang := range []string{"..", "."} {
		if ce := rawCallEnds(t, h, "/ws?lang="+lang); ce.Code != websocket.StatusTryAgainLater || ce.Reason != botUnreachable {
			t.Fatalf("lang=%s: the call ended with %v %q, want 1013 %q", lang, ce.Code, ce.Reason, botUnreachable)
		}
	}
	c := dial(t, h.url+"/twilio")
	defer c.CloseNow()
	ctx := context.Background()
	for _, m := range [][]byte{
		[]byte(`{"event":"connected","protocol":"Call","version":"1.0.0"}`),
		twilioMsg("start", 1, `"start":{"accountSid":"AC1","streamSid":"..","callSid":"..","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{"pipeline":"tw"}}`),
	} {
		if err := c.Write(ctx, websocket.MessageText, m); err != nil {
			t.Fatal(err)
		}
	}
	for {
		if _, _, err := c.Read(ctx); err != nil {
			break
		}
	}
	assertMetric(t, h, `voxhost_upstream_failures_total{protocol="raw",reason="unsafe_url"} 3`)

	// A value that only looks like one is dialled.
	rawCallEnds(t, h, "/ws?lang=...")
	bot.mu.Lock()
	defer bot.mu.Unlock()
	if len(bot.requests) != 1 || bot.requests[0] != "/bot/...?x=1" {
		t.Fatalf("the bot got %q, want only the call whose lang is ...", bot.requests)
	}
	if !strings.Contains(log.String(), "dot segment") {
		t.Fatalf("the log does not say why the calls were not dialled:\n%s", log.String())
	}
}
