package server_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/server"
)

// fakeCPU is a CPUSampler whose process uses a set share of its cores, so
// that a test can overload a server without burning CPU, which on a
// shared machine would be neither reliable nor polite.
type fakeCPU struct {
	mu    sync.Mutex
	share float64
	total time.Duration
	at    time.Time
}

func (f *fakeCPU) CPUTime() (time.Duration, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if !f.at.IsZero() {
		f.total += time.Duration(f.share * float64(now.Sub(f.at)) * float64(runtime.GOMAXPROCS(0)))
	}
	f.at = now
	return f.total, now, nil
}

func (f *fakeCPU) set(share float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.share = share
}

// gauge reads a series without labels from /metrics.
func gauge(t *testing.T, h *testHost, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(metrics(t, h))
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// refusal dials url expecting a refusal before the upgrade, and returns
// the status, the Retry-After header and the body.
func refusal(t *testing.T, url string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, url, nil)
	if err == nil {
		t.Fatalf("dial %s succeeded, want a refusal", url)
	}
	if resp == nil {
		t.Fatalf("dial %s: %v (no HTTP response)", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// echoes checks that a call still answers a frame with the same frame.
func echoes(t *testing.T, c *websocket.Conn, k int) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageBinary, stamp(k, k)); err != nil {
		t.Fatal(err)
	}
	if _, msg := readMessage(t, c); string(msg) != string(stamp(k, k)) {
		t.Fatal("a running call stopped answering")
	}
}

// TestCPUOverloadShedsNewCallsAndRecovers drives the CPU reading past the
// high-water mark and back, through a band between the marks where
// nothing may change. It asserts states, not times: how soon the moving
// average crosses a mark depends on how the machine schedules the sampler.
func TestCPUOverloadShedsNewCallsAndRecovers(t *testing.T) {
	cpu := &fakeCPU{share: 0.2}
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) {
		o.CPUHighWater, o.CPULowWater = 0.8, 0.5
		o.CPUSampler, o.CPUSampleInterval = cpu, 5*time.Millisecond
	})
	waitFor(t, func() bool { return gauge(t, h, "voxhost_cpu_utilization") > 0.15 })
	running := dial(t, h.url+"/ws")
	defer running.CloseNow()
	echoes(t, running, 1)
	assertMetric(t, h, "voxhost_overloaded 0")
	assertMetric(t, h, `voxhost_calls_shed_total{reason="cpu"} 0`)

	cpu.set(1)
	waitFor(t, func() bool { return get(t, h, "/readyz") == http.StatusServiceUnavailable })
	if _, body := fetch(t, h, "/readyz"); !strings.Contains(body, "overloaded: CPU at") || !strings.Contains(body, "ready again at 50%") {
		t.Fatalf("readyz while overloaded: %q", body)
	}
	for _, path := range []string{"/ws", "/twilio"} {
		code, retry, body := refusal(t, h.url+path)
		if code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, "past the limit of 80%") {
			t.Fatalf("%s while overloaded: %d, Retry-After %q, %q", path, code, retry, body)
		}
	}
	assertMetric(t, h, "voxhost_overloaded 1")
	assertMetric(t, h, "voxhost_ready 0")
	assertMetric(t, h, `voxhost_calls_shed_total{reason="cpu"} 2`)
	assertMetric(t, h, `voxhost_rejected_connections_total{reason="overloaded"} 2`)
	echoes(t, running, 2) // the call it had goes on

	// Between the marks the server stays overloaded: hysteresis.
	cpu.set(0.65)
	waitFor(t, func() bool { v := gauge(t, h, "voxhost_cpu_utilization"); return v > 0.6 && v < 0.7 })
	if code, _, _ := refusal(t, h.url+"/ws"); code != http.StatusServiceUnavailable {
		t.Fatalf("between the marks: %d, want still 503", code)
	}

	cpu.set(0.3)
	waitFor(t, func() bool { return get(t, h, "/readyz") == http.StatusOK })
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	echoes(t, c, 3)
	assertMetric(t, h, "voxhost_overloaded 0")
	assertMetric(t, h, "voxhost_ready 1")
	assertMetric(t, h, `voxhost_calls_shed_total{reason="cpu"} 3`)
}

func TestCPUSheddingIsOffByDefault(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	if m := metrics(t, h); strings.Contains(m, "voxhost_cpu_utilization") || !strings.Contains(m, "voxhost_overloaded 0\n") {
		t.Fatal("without CPUHighWater the server must not sample CPU, and must say it is not overloaded")
	}
}

func TestProcessCPUCounts(t *testing.T) {
	before, _, err := server.ProcessCPU().CPUTime()
	if err != nil {
		t.Skipf("no CPU time here: %v", err)
	}
	for x, deadline := 0, time.Now().Add(20*time.Millisecond); time.Now().Before(deadline); x++ {
		_ = x * x
	}
	after, _, err := server.ProcessCPU().CPUTime()
	if err != nil || after <= before {
		t.Fatalf("CPU time %v then %v (%v): it must grow while the process computes", before, after, err)
	}
}

func TestBadCPUMarksAreRefused(t *testing.T) {
	rt := newHost(t, map[string]string{"main": "passthrough"}, nil).rt
	for _, marks := range [][2]float64{{1.5, 0}, {0.5, 0.5}, {-0.1, 0}} {
		_, err := server.New(context.Background(), server.Options{Runtime: rt, CPUHighWater: marks[0], CPULowWater: marks[1]})
		if err == nil || !strings.Contains(err.Error(), "CPU marks") {
			t.Errorf("marks %v: %v", marks, err)
		}
	}
}
