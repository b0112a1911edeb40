package server_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxhost/voxhost/internal/hosttest"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/internal/signal"
)

// testHost is a server on a loopback port with its runtime and catalog.
type testHost struct {
	*server.Server
	rt   *plugin.Runtime
	cat  *catalog.Catalog
	http *httptest.Server
	url  string
}

func testdataPlugin(name string) string { return filepath.Join("testdata", name+".wasm") }

func pluginFixture(name string) string {
	return filepath.Join("..", "plugin", "testdata", name+".wasm")
}

// newHost serves the given inline pipelines; the first named "main" is the
// default.
func newHost(t testing.TB, pipelines map[string]string, tweak func(*server.Options)) *testHost {
	t.Helper()
	return newHostOn(t, plugin.Options{}, pipelines, tweak)
}

// newHostOn is newHost with a plugin runtime of the given options (and no
// compile cache).
func newHostOn(t testing.TB, rtOpts plugin.Options, pipelines map[string]string, tweak func(*server.Options)) *testHost {
	t.Helper()
	routes := map[string]routeSpec{}
	for name, spec := range pipelines {
		routes[name] = routeSpec{inbound: spec}
	}
	return newRoutesHost(t, rtOpts, routes, tweak)
}

// routeSpec is a route of inline pipeline specs: inbound, outbound ("" for
// none) and an upstream (nil for an echo).
type routeSpec struct {
	inbound, outbound string
	upstream          *server.Upstream
	overQuota         server.QuotaPolicy
}

// newRoutesHost serves the given routes; the one named "main" is the
// default.
func newRoutesHost(t testing.TB, rtOpts plugin.Options, routes map[string]routeSpec, tweak func(*server.Options)) *testHost {
	t.Helper()
	ctx := context.Background()
	rtOpts.CacheDir = "-"
	rt, err := plugin.NewRuntime(ctx, rtOpts)
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(rt, "")
	define := func(name, spec string) *pipeline.Definition {
		t.Helper()
		if spec == "" {
			return nil
		}
		specs, err := pipeline.ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		def, err := cat.Definition(ctx, name, specs)
		if err != nil {
			t.Fatal(err)
		}
		return def
	}
	rs := map[string]*server.Route{}
	for name, r := range routes {
		rs[name] = &server.Route{Name: name, Inbound: define(name, r.inbound), Outbound: define(name+".outbound", r.outbound), Upstream: r.upstream, OverQuota: r.overQuota}
	}
	opts := server.Options{Runtime: rt, Routes: rs, DefaultRoute: "main", Logger: quietLogger()}
	if tweak != nil {
		tweak(&opts)
	}
	s, err := server.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	h := &testHost{Server: s, rt: rt, cat: cat, http: hs, url: "ws" + strings.TrimPrefix(hs.URL, "http")}
	t.Cleanup(func() {
		s.Drain(ctx)
		s.Close()
		hs.Close()
		cat.Close(ctx)
		rt.Close(ctx)
	})
	return h
}

func dial(t testing.TB, url string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(1 << 20)
	return c
}

// ulawSpeech is seconds of the speech-like signal, μ-law encoded.
func ulawSpeech(seconds float64) []byte {
	pcm := signal.Speech(8000, seconds)
	ulaw := make([]byte, len(pcm)/2)
	codec.EncodeUlaw(ulaw, pcm)
	return ulaw
}

func readMessage(t testing.TB, c *websocket.Conn) (websocket.MessageType, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, msg, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return typ, msg
}

func TestRawCallMatchesOfflineRun(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough", "quiet": "gain db=-6"}, nil)
	ulaw := ulawSpeech(3)
	want := hosttest.OfflineUlaw(t, "gain db=-6", ulaw)
	c := dial(t, h.url+"/ws?pipeline=quiet")
	defer c.CloseNow()
	ctx := context.Background()
	var got []byte
	for off := 0; off < len(ulaw); off += 160 {
		if err := c.Write(ctx, websocket.MessageBinary, ulaw[off:off+160]); err != nil {
			t.Fatal(err)
		}
		typ, msg := readMessage(t, c)
		if typ != websocket.MessageBinary || len(msg) != 160 {
			t.Fatalf("frame %d: reply of type %v and %d bytes", off/160, typ, len(msg))
		}
		got = append(got, msg...)
	}
	if string(got) != string(want) {
		t.Fatal("the live call's audio differs from voxhost run's for the same input")
	}
	c.Close(websocket.StatusNormalClosure, "done")
}

// twilioMsg renders an inbound Twilio message as Twilio's docs show it.
func twilioMsg(event string, seq int, body string) []byte {
	extra := ""
	if body != "" {
		extra = "," + body
	}
	return []byte(fmt.Sprintf(`{"event":%q,"sequenceNumber":"%d","streamSid":"MZ00000000000000000000000000000001"%s}`, event, seq, extra))
}

func TestTwilioConversation(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough", "bot": "gain db=-6 | " + testdataPlugin("clear_on_dtmf")}, nil)
	ulaw := ulawSpeech(1)
	want := hosttest.OfflineUlaw(t, "gain db=-6", ulaw)
	c := dial(t, h.url+"/twilio")
	defer c.CloseNow()
	ctx := context.Background()
	send := func(msg []byte) {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			t.Fatal(err)
		}
	}
	send([]byte(`{"event":"connected","protocol":"Call","version":"1.0.0"}`))
	send(twilioMsg("start", 1, `"start":{"accountSid":"AC1","streamSid":"MZ00000000000000000000000000000001","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{"pipeline":"bot"}}`))
	type reply struct {
		Event     string `json:"event"`
		StreamSid string `json:"streamSid"`
		Media     struct {
			Payload string `json:"payload"`
		} `json:"media"`
		Mark struct {
			Name string `json:"name"`
		} `json:"mark"`
	}
	readReply := func() reply {
		t.Helper()
		typ, msg := readMessage(t, c)
		if typ != websocket.MessageText {
			t.Fatalf("Twilio accepts text messages only; got %v", typ)
		}
		var r reply
		if err := json.Unmarshal(msg, &r); err != nil {
			t.Fatalf("reply %q: %v", msg, err)
		}
		if r.StreamSid != "MZ00000000000000000000000000000001" {
			t.Fatalf("reply without the streamSid: %s", msg)
		}
		return r
	}
	var got []byte
	seq := 2
	for off, chunk := 0, 1; off < len(ulaw); off, chunk = off+160, chunk+1 {
		send(twilioMsg("media", seq, fmt.Sprintf(`"media":{"track":"inbound","chunk":"%d","timestamp":"%d","payload":%q}`,
			chunk, off/8, base64.StdEncoding.EncodeToString(ulaw[off:off+160]))))
		seq++
		r := readReply()
		if r.Event != "media" {
			t.Fatalf("got %q, want media", r.Event)
		}
		pcm, err := base64.StdEncoding.DecodeString(r.Media.Payload)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pcm...)
		if chunk == 10 {
			send(twilioMsg("mark", seq, `"mark":{"name":"after-10"}`))
			seq++
			if r := readReply(); r.Event != "mark" || r.Mark.Name != "after-10" {
				t.Fatalf("mark echo = %+v", r)
			}
		}
		if chunk == 20 {
			send(twilioMsg("dtmf", seq, `"dtmf":{"track":"inbound_track","digit":"5"}`))
			seq++
			if r := readReply(); r.Event != "clear" {
				t.Fatalf("after dtmf: got %+v, want the plugin's clear", r)
			}
		}
	}
	if string(got) != string(want) {
		t.Fatal("Twilio audio differs from voxhost run's for the same input")
	}
	send(twilioMsg("stop", seq, `"stop":{"accountSid":"AC1","callSid":"CA1"}`))
	_, _, err := c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after stop: %v, want a normal close", err)
	}
}

func TestConcurrentCallsEachGetTheirFramesInOrder(t *testing.T) {
	calls, frames := 200, 100
	if testing.Short() {
		calls = 50
	}
	// All the calls arrive at once and their set-ups queue for one slot on
	// two cores: under the race detector, 200 of them took up to 1.6 s.
	// This test is about frames, not about refusing set-ups.
	h := newHost(t, map[string]string{"main": "passthrough | passthrough"}, func(o *server.Options) { o.SetupWait = time.Minute })
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for k := 0; k < calls; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			errs <- echoCall(h.url+"/ws", k, frames)
		}(k)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// echoCall streams frames at 20 ms, each stamped with the call and frame
// number, and checks every reply arrives, unchanged and in order.
func echoCall(url string, k, frames int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return err
	}
	defer c.CloseNow()
	done := make(chan error, 1)
	go func() {
		for i := 0; i < frames; i++ {
			_, msg, err := c.Read(ctx)
			if err != nil {
				done <- fmt.Errorf("call %d frame %d: %v", k, i, err)
				return
			}
			if want := stamp(k, i); string(msg) != string(want) {
				done <- fmt.Errorf("call %d: reply %d is not frame %d: got %q", k, i, i, msg)
				return
			}
		}
		done <- nil
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < frames; i++ {
		if err := c.Write(ctx, websocket.MessageBinary, stamp(k, i)); err != nil {
			return err
		}
		<-tick.C
	}
	err = <-done
	c.Close(websocket.StatusNormalClosure, "")
	return err
}

// stamp is a frame no other call or frame sends. Every byte avoids 0x7F,
// the one μ-law code that does not survive a decode/encode round trip.
func stamp(call, frame int) []byte {
	b := make([]byte, 160)
	for i := range b {
		v := byte((call*131 + frame*7 + i*3) % 256)
		if v == 0x7F {
			v = 0x7E
		}
		b[i] = v
	}
	b[0], b[1], b[2] = byte(call), byte(call>>8), byte(frame)
	for i := 0; i < 3; i++ {
		if b[i] == 0x7F {
			b[i] = 0xFF
		}
	}
	return b
}

func closeOf(t *testing.T, c *websocket.Conn) (websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Reason
		}
		t.Fatalf("read ended without a close frame: %v", err)
	}
}

func httpStatus(t *testing.T, url string, header http.Header) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if err == nil {
		t.Fatalf("dial %s succeeded, want a refusal", url)
	}
	if resp == nil {
		t.Fatalf("dial %s: %v (no HTTP response)", url, err)
	}
	return resp.StatusCode
}

func TestAuth(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.Tokens = []string{"s3cret"} })
	before := h.rt.LiveInstances()
	if got := httpStatus(t, h.url+"/ws", nil); got != http.StatusUnauthorized {
		t.Fatalf("no token: %d", got)
	}
	if got := httpStatus(t, h.url+"/ws?token=wrong", nil); got != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", got)
	}
	if got := httpStatus(t, h.url+"/twilio", http.Header{"Authorization": {"Bearer nope"}}); got != http.StatusUnauthorized {
		t.Fatalf("wrong bearer: %d", got)
	}
	if h.rt.LiveInstances() != before {
		t.Fatal("a refused connection instantiated plugins")
	}
	c := dial(t, h.url+"/ws?token=s3cret")
	c.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, h.url+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer s3cret"}}})
	if err != nil {
		t.Fatalf("bearer token refused: %v", err)
	}
	c.CloseNow()
	assertMetric(t, h, `voxhost_rejected_connections_total{reason="auth"} 3`)
}

func TestCapacityAndUnknownPipeline(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.MaxCalls = 2 })
	a, b := dial(t, h.url+"/ws"), dial(t, h.url+"/twilio")
	defer a.CloseNow()
	defer b.CloseNow()
	waitFor(t, func() bool { return h.ActiveCalls() == 2 })
	if got := httpStatus(t, h.url+"/ws", nil); got != http.StatusServiceUnavailable {
		t.Fatalf("third call: %d, want 503", got)
	}
	if resp := get(t, h, "/readyz"); resp != http.StatusServiceUnavailable {
		t.Fatalf("readyz at capacity: %d", resp)
	}
	a.Close(websocket.StatusNormalClosure, "")
	waitFor(t, func() bool { return h.ActiveCalls() == 1 })
	if got := httpStatus(t, h.url+"/ws?pipeline=nope", nil); got != http.StatusNotFound {
		t.Fatalf("unknown pipeline: %d, want 404", got)
	}
	assertMetric(t, h, `voxhost_rejected_connections_total{reason="capacity"} 1`)
}

func TestARefusedCallsConnectionIsClosed(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.MaxCalls = 1 })
	a := dial(t, h.url+"/ws")
	defer a.CloseNow()
	waitFor(t, func() bool { return h.ActiveCalls() == 1 })
	conn, err := net.Dial("tcp", h.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A bound on a failure only: a server that keeps the connection would
	// otherwise leave the read below waiting for its idle timeout.
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", h.http.Listener.Addr())
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close {
		t.Fatalf("second call: %d, close %v; want 503 and Connection: close", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the refusal the connection gave %v, want EOF (closed by the server)", err)
	}
}

func get(t *testing.T, h *testHost, path string) int {
	t.Helper()
	code, _ := fetch(t, h, path)
	return code
}

// fetch GETs path from the server and returns the status and the body.
func fetch(t *testing.T, h *testHost, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(h.http.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	hosttest.WaitFor(t, "the condition", cond)
}

func metrics(t *testing.T, h *testHost) string {
	t.Helper()
	_, body := fetch(t, h, "/metrics")
	return body
}

func assertMetric(t *testing.T, h *testHost, line string) {
	t.Helper()
	waitFor(t, func() bool { return strings.Contains(metrics(t, h), line+"\n") })
}

func TestMalformedInputEndsOnlyThatCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.MaxMessageBytes = 1024 })
	bystander := dial(t, h.url+"/ws")
	defer bystander.CloseNow()
	ctx := context.Background()
	start := twilioMsg("start", 1, `"start":{"streamSid":"MZ1","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{}}`)
	cases := []struct {
		name     string
		path     string
		messages [][]byte
		binary   bool
		code     websocket.StatusCode
		reason   string
	}{
		{"bad json", "/twilio", [][]byte{[]byte(`{"event":"media",`)}, false, websocket.StatusInvalidFramePayloadData, "twilio"},
		{"bad base64", "/twilio", [][]byte{start, twilioMsg("media", 2, `"media":{"track":"inbound","chunk":"1","timestamp":"0","payload":"!!!not base64!!!"}`)}, false, websocket.StatusInvalidFramePayloadData, "base64"},
		{"binary on twilio", "/twilio", [][]byte{make([]byte, 160)}, true, websocket.StatusUnsupportedData, "binary"},
		{"media before start", "/twilio", [][]byte{twilioMsg("media", 2, `"media":{"track":"inbound","chunk":"1","timestamp":"0","payload":"AAAA"}`)}, false, websocket.StatusInvalidFramePayloadData, "start"},
		{"oversized", "/ws", [][]byte{make([]byte, 4096)}, true, websocket.StatusMessageTooBig, "limit of 1024 bytes"},
		{"odd raw frame", "/ws", [][]byte{make([]byte, 7)}, true, websocket.StatusInvalidFramePayloadData, "8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, h.url+tc.path)
			defer c.CloseNow()
			typ := websocket.MessageText
			if tc.binary {
				typ = websocket.MessageBinary
			}
			for _, m := range tc.messages {
				if err := c.Write(ctx, typ, m); err != nil {
					t.Fatal(err)
				}
			}
			code, reason := closeOf(t, c)
			if code != tc.code || !strings.Contains(reason, tc.reason) {
				t.Fatalf("close %v %q, want %v with %q", code, reason, tc.code, tc.reason)
			}
		})
	}
	// The bystander's call goes on.
	if err := bystander.Write(ctx, websocket.MessageBinary, stamp(1, 1)); err != nil {
		t.Fatal(err)
	}
	if _, msg := readMessage(t, bystander); string(msg) != string(stamp(1, 1)) {
		t.Fatal("the bystander call was disturbed")
	}
	if !strings.Contains(metrics(t, h), "voxhost_malformed_messages_total") {
		t.Fatal("malformed messages are not counted")
	}
}

func TestIdleTimeoutClosesWithReason(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.IdleTimeout = 200 * time.Millisecond })
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	code, reason := closeOf(t, c)
	if code != websocket.StatusPolicyViolation || !strings.Contains(reason, "idle timeout: no audio for 200ms") {
		t.Fatalf("close %v %q", code, reason)
	}
}

func TestOriginPolicy(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.Origins = []string{"app.example.com"} })
	if got := httpStatus(t, h.url+"/ws", http.Header{"Origin": {"https://evil.example.net"}}); got != http.StatusForbidden {
		t.Fatalf("foreign origin: %d, want 403", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, h.url+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://app.example.com"}}})
	if err != nil {
		t.Fatalf("allowed origin refused: %v", err)
	}
	c.CloseNow()
}

func TestTrappingPluginBypassOrEndCall(t *testing.T) {
	h := newHost(t, map[string]string{
		"main":   "gain db=-6 | " + pluginFixture("trap"),
		"strict": "gain db=-6 | " + pluginFixture("trap") + " on_error=end_call",
	}, nil)
	ulaw := ulawSpeech(0.2)
	want := hosttest.OfflineUlaw(t, "gain db=-6", ulaw)
	ctx := context.Background()

	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	var got []byte
	var events []string
	for off := 0; off < len(ulaw); off += 160 {
		c.Write(ctx, websocket.MessageBinary, ulaw[off:off+160])
		for {
			typ, msg := readMessage(t, c)
			if typ == websocket.MessageText {
				events = append(events, string(msg))
				continue
			}
			got = append(got, msg...)
			break
		}
	}
	if string(got) != string(want) {
		t.Fatal("with the trapping plugin bypassed, audio must still flow, processed by the others")
	}
	if len(events) != 1 || !strings.Contains(events[0], `"plugin_error"`) || !strings.Contains(events[0], "trap in vox_process at frame 3") {
		t.Fatalf("events = %q", events)
	}
	assertMetric(t, h, `voxhost_plugin_errors_total{kind="trap",plugin="trap.wasm"} 1`)

	s := dial(t, h.url+"/ws?pipeline=strict")
	defer s.CloseNow()
	for i := 0; i < 3; i++ {
		s.Write(ctx, websocket.MessageBinary, ulaw[:160])
	}
	code, reason := closeOf(t, s)
	if code != websocket.StatusInternalError || !strings.Contains(reason, "plugin failed: plugin trap.wasm: trap in vox_process at frame 3") {
		t.Fatalf("end_call close: %v %q", code, reason)
	}
}

func TestDrain(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.DrainTimeout = 300 * time.Millisecond })
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	waitFor(t, func() bool { return h.ActiveCalls() == 1 })
	drained := make(chan struct{})
	go func() { h.Drain(context.Background()); close(drained) }()
	waitFor(t, func() bool { return get(t, h, "/readyz") == http.StatusServiceUnavailable })
	if got := httpStatus(t, h.url+"/ws", nil); got != http.StatusServiceUnavailable {
		t.Fatalf("new call while draining: %d", got)
	}
	// The active call still works while the drain waits for it.
	ctx := context.Background()
	c.Write(ctx, websocket.MessageBinary, stamp(2, 2))
	if _, msg := readMessage(t, c); string(msg) != string(stamp(2, 2)) {
		t.Fatal("the active call stopped working during the drain")
	}
	code, reason := closeOf(t, c)
	if code != websocket.StatusGoingAway || reason != "server shutting down" {
		t.Fatalf("after the drain timeout: %v %q", code, reason)
	}
	<-drained
	if get(t, h, "/healthz") != http.StatusOK {
		t.Fatal("healthz must stay ok while draining")
	}
}

func TestShortCallsLeakNothing(t *testing.T) {
	calls := 1000
	if testing.Short() {
		calls = 100
	}
	h := newHost(t, map[string]string{"main": "gain db=-3 | passthrough"}, nil)
	baseGoroutines := runtime.NumGoroutine()
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			c, _, err := websocket.Dial(ctx, h.url+"/ws", nil)
			if err != nil {
				t.Error(err)
				return
			}
			c.Write(ctx, websocket.MessageBinary, stamp(i, 0))
			c.Read(ctx)
			if i%2 == 0 {
				c.Close(websocket.StatusNormalClosure, "")
			} else {
				c.CloseNow() // a client that vanishes
			}
		}(i)
	}
	wg.Wait()
	waitFor(t, func() bool { return h.ActiveCalls() == 0 && h.rt.LiveInstances() == 0 })
	waitFor(t, func() bool { return runtime.NumGoroutine() <= baseGoroutines+2 })
}

func TestLargeMessageWithinTheLimitIsAccepted(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	c := dial(t, h.url+"/twilio")
	defer c.CloseNow()
	ctx := context.Background()
	// Far beyond the call's initial read buffer, in a member the host does
	// not keep (custom parameters are bounded: see limits_test.go).
	big := strings.Repeat("x", 20000)
	start := twilioMsg("start", 1, fmt.Sprintf(`"start":{"streamSid":"MZ1","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{},"note":%q}`, big))
	if err := c.Write(ctx, websocket.MessageText, start); err != nil {
		t.Fatal(err)
	}
	frame := stamp(3, 3)
	media := twilioMsg("media", 2, fmt.Sprintf(`"media":{"track":"inbound","chunk":"1","timestamp":"0","payload":%q}`, base64.StdEncoding.EncodeToString(frame)))
	if err := c.Write(ctx, websocket.MessageText, media); err != nil {
		t.Fatal(err)
	}
	_, msg := readMessage(t, c)
	var reply struct {
		Media struct{ Payload string } `json:"media"`
	}
	if err := json.Unmarshal(msg, &reply); err != nil {
		t.Fatal(err)
	}
	if got, _ := base64.StdEncoding.DecodeString(reply.Media.Payload); string(got) != string(frame) {
		t.Fatal("audio after a large start message did not come back")
	}
}

func TestReadinessHysteresis(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) {
		o.MaxCalls, o.ReadyHighWater, o.ReadyLowWater = 10, 3, 1
	})
	var calls []*websocket.Conn
	for i := 0; i < 3; i++ {
		calls = append(calls, dial(t, h.url+"/ws"))
	}
	waitFor(t, func() bool { return h.ActiveCalls() == 3 })
	if got := get(t, h, "/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("readyz at the high-water mark: %d", got)
	}
	assertMetric(t, h, "voxhost_ready 0")
	// Calls beyond the high-water mark are still accepted, up to max_calls:
	// readiness steers the load balancer, it does not refuse.
	extra := dial(t, h.url+"/ws")
	extra.CloseNow()
	for i, want := range []int{http.StatusServiceUnavailable, http.StatusOK} {
		calls[i].Close(websocket.StatusNormalClosure, "")
		waitFor(t, func() bool { return h.ActiveCalls() == 2-i })
		if got := get(t, h, "/readyz"); got != want {
			t.Fatalf("readyz at %d active calls: %d, want %d", 2-i, got, want)
		}
	}
	calls[2].CloseNow()
	assertMetric(t, h, "voxhost_calls_capacity 10")
	assertMetric(t, h, "voxhost_ready 1")
}
