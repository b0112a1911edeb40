package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
)

// setupLog is a log handler that follows slow_init's "setup begin" and
// "setup end" lines: how many set-ups run at once, and at most. With hold
// set, a set-up that begins stops in its plugin's log call until hold is
// closed, so a test can keep a set-up slot taken for as long as it needs.
type setupLog struct {
	mu                   sync.Mutex
	running, peak, ended int
	hold                 chan struct{}
	begun                chan struct{}
}

func newSetupLog() *setupLog { return &setupLog{begun: make(chan struct{}, 16)} }

func (l *setupLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *setupLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *setupLog) WithGroup(string) slog.Handler            { return l }

func (l *setupLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	switch r.Message {
	case "setup begin":
		l.running++
		l.peak = max(l.peak, l.running)
	case "setup end":
		l.running--
		l.ended++
	}
	hold := l.hold
	l.mu.Unlock()
	if r.Message == "setup begin" && hold != nil {
		l.begun <- struct{}{}
		<-hold
	}
	return nil
}

func (l *setupLog) counts() (peak, ended int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peak, l.ended
}

// slowSetupHost serves slow_init (whose vox_init spins ~100 ms) as the
// pipeline of every call, logging to l. The init budget is raised so
// that the spin, however slow this machine runs it, is never cut.
func slowSetupHost(t *testing.T, l *setupLog, tweak func(*server.Options)) *testHost {
	t.Helper()
	return newHostOn(t, plugin.Options{InitBudget: time.Minute, Logger: quietLogger()},
		map[string]string{"main": testdataPlugin("slow_init")}, func(o *server.Options) {
			o.Logger = slog.New(l)
			if tweak != nil {
				tweak(o)
			}
		})
}

// startTwilio opens a Twilio stream and sends its start message.
func startTwilio(t *testing.T, h *testHost) *websocket.Conn {
	t.Helper()
	c := dial(t, h.url+"/twilio")
	start := twilioMsg("start", 1, `"start":{"streamSid":"MZ1","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{}}`)
	if err := c.Write(context.Background(), websocket.MessageText, start); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCallSetupsAreBounded starts calls whose set-ups each spin ~100 ms,
// all at once, on both protocols, and counts the set-ups that ran at the
// same time: never more than DefaultMaxSetups, one core fewer than Go
// runs on, so the calls already running keep a core.
func TestCallSetupsAreBounded(t *testing.T) {
	l := newSetupLog()
	h := slowSetupHost(t, l, func(o *server.Options) { o.SetupWait = time.Minute })
	const raw, twilio = 4, 2
	var wg sync.WaitGroup
	errs := make(chan error, raw+twilio)
	for i := 0; i < raw; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, _, err := websocket.Dial(ctx, h.url+"/ws", nil)
			if err != nil {
				errs <- err
				return
			}
			defer c.CloseNow()
			if err := c.Write(ctx, websocket.MessageBinary, stamp(i, 0)); err != nil {
				errs <- err
				return
			}
			if _, _, err := c.Read(ctx); err != nil {
				errs <- err
			}
		}(i)
	}
	twilioCalls := make([]*websocket.Conn, twilio)
	for i := range twilioCalls {
		twilioCalls[i] = startTwilio(t, h)
		defer twilioCalls[i].CloseNow()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitFor(t, func() bool { _, ended := l.counts(); return ended == raw+twilio })
	peak, _ := l.counts()
	t.Logf("%d set-ups, at most %d at once (limit %d)", raw+twilio, peak, server.DefaultMaxSetups())
	if peak < 1 || peak > server.DefaultMaxSetups() {
		t.Fatalf("%d set-ups ran at once; the limit is %d", peak, server.DefaultMaxSetups())
	}
	assertMetric(t, h, "voxhost_call_setup_wait_seconds_count 6")
	assertMetric(t, h, `voxhost_calls_shed_total{reason="setup_queue"} 0`)
}

// TestSetupWaitRefusesCalls keeps the only set-up slot taken and checks
// that a call waiting longer than the set-up wait is refused, with a
// reason and a count: before the upgrade on /ws (HTTP 503), at the start
// message on /twilio (close 1013, try again later). Once the slot is free
// calls are taken again.
func TestSetupWaitRefusesCalls(t *testing.T) {
	l := newSetupLog()
	h := slowSetupHost(t, l, func(o *server.Options) { o.MaxSetups, o.SetupWait = 1, 50*time.Millisecond })
	l.mu.Lock()
	l.hold = make(chan struct{})
	l.mu.Unlock()
	holder := dial(t, h.url+"/ws")
	defer holder.CloseNow()
	<-l.begun // its set-up is under way, and stays so

	code, retry, body := refusal(t, h.url+"/ws")
	if code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, "no call set-up slot free within 50ms (set-ups run 1 at a time)") {
		t.Fatalf("raw call while the set-up slot is taken: %d, Retry-After %q, %q", code, retry, body)
	}
	tw := startTwilio(t, h)
	defer tw.CloseNow()
	if code, reason := closeOf(t, tw); code != websocket.StatusTryAgainLater || !strings.Contains(reason, "no call set-up slot free") {
		t.Fatalf("Twilio start while the set-up slot is taken: close %v %q", code, reason)
	}
	assertMetric(t, h, `voxhost_calls_shed_total{reason="setup_queue"} 2`)
	assertMetric(t, h, `voxhost_rejected_connections_total{reason="setup_queue"} 1`)
	assertMetric(t, h, `voxhost_calls_total{outcome="shed",protocol="twilio"} 1`)

	l.mu.Lock()
	close(l.hold)
	l.hold = nil
	l.mu.Unlock()
	echoes(t, holder, 1)
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	echoes(t, c, 2)
}
