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

// fakeCPU is a CPUSampler whose process uses a set share of its cores and
// whose goroutines wait a set time for one, so that a test can overload a
// server without burning CPU, which on a shared machine would be neither
// reliable nor polite. Each sample carries its own time, so the averages
// the server keeps are exact.
type fakeCPU struct {
	mu    sync.Mutex
	share float64
	wait  time.Duration
	last  server.CPUSample
}

func (f *fakeCPU) Sample() (server.CPUSample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if !f.last.At.IsZero() {
		f.last.Used += time.Duration(f.share * float64(now.Sub(f.last.At)) * float64(runtime.GOMAXPROCS(0)))
	}
	f.last.At, f.last.Wait = now, f.wait
	return f.last, nil
}

func (f *fakeCPU) set(share float64, wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.share, f.wait = share, wait
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
// nothing may change, then does the same with the goroutines' wait for a
// core. It asserts states, not times: how soon a moving average crosses a
// mark depends on how the machine schedules the sampler.
func TestCPUOverloadShedsNewCallsAndRecovers(t *testing.T) {
	cpu := &fakeCPU{share: 0.2}
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) {
		o.CPUHighWater, o.CPULowWater = 0.8, 0.5
		o.CPUWaitHighWater = 10 * time.Millisecond
		o.CPUSampler, o.CPUSampleInterval = cpu, 5*time.Millisecond
	})
	waitFor(t, func() bool { return gauge(t, h, "voxhost_cpu_utilization") > 0.15 })
	running := dial(t, h.url+"/ws")
	defer running.CloseNow()
	echoes(t, running, 1)
	assertMetric(t, h, "voxhost_overloaded 0")
	assertMetric(t, h, `voxhost_calls_shed_total{reason="cpu"} 0`)

	cpu.set(1, 0)
	waitFor(t, func() bool { return get(t, h, "/readyz") == http.StatusServiceUnavailable })
	if _, body := fetch(t, h, "/readyz"); !strings.Contains(body, "overloaded: CPU at") || !strings.Contains(body, "(ready again at 50% CPU)") {
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
	cpu.set(0.65, 0)
	waitFor(t, func() bool { v := gauge(t, h, "voxhost_cpu_utilization"); return v > 0.6 && v < 0.7 })
	if code, _, _ := refusal(t, h.url+"/ws"); code != http.StatusServiceUnavailable {
		t.Fatalf("between the marks: %d, want still 503", code)
	}

	cpu.set(0.3, 0)
	waitFor(t, func() bool { return get(t, h, "/readyz") == http.StatusOK })
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	echoes(t, c, 3)
	assertMetric(t, h, "voxhost_overloaded 0")
	assertMetric(t, h, "voxhost_ready 1")
	assertMetric(t, h, `voxhost_calls_shed_total{reason="cpu"} 3`)

	// A process that uses little CPU because it gets little: its
	// goroutines wait.
	cpu.set(0.3, 40*time.Millisecond)
	waitFor(t, func() bool { return get(t, h, "/readyz") == http.StatusServiceUnavailable })
	if _, body := fetch(t, h, "/readyz"); !strings.Contains(body, "for a core (90th percentile), past the limit of 10ms (ready again at a 2ms wait)") {
		t.Fatalf("readyz while goroutines wait: %q", body)
	}
	if code, _, body := refusal(t, h.url+"/ws"); code != http.StatusServiceUnavailable || !strings.Contains(body, "calls wait") {
		t.Fatalf("a call while goroutines wait: %d %q", code, body)
	}
	assertMetric(t, h, `voxhost_calls_shed_total{reason="cpu_wait"} 1`)
	echoes(t, c, 4)
	cpu.set(0.3, 0)
	waitFor(t, func() bool { return get(t, h, "/readyz") == http.StatusOK })
	assertMetric(t, h, "voxhost_overloaded 0")
}

func TestCPUSheddingIsOffByDefault(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	if m := metrics(t, h); strings.Contains(m, "voxhost_cpu_utilization") || !strings.Contains(m, "voxhost_overloaded 0\n") {
		t.Fatal("without CPUHighWater the server must not sample CPU, and must say it is not overloaded")
	}
}

func TestProcessCPUCounts(t *testing.T) {
	sampler := server.ProcessCPU()
	before, err := sampler.Sample()
	if err != nil {
		t.Skipf("no CPU time here: %v", err)
	}
	for x, deadline := 0, time.Now().Add(20*time.Millisecond); time.Now().Before(deadline); x++ {
		_ = x * x
	}
	after, err := sampler.Sample()
	if err != nil || after.Used <= before.Used || !after.At.After(before.At) {
		t.Fatalf("samples %+v then %+v (%v): the CPU used must grow while the process computes", before, after, err)
	}
}

// TestProcessCPUSeesWaiting starves goroutines: one core for the Go
// scheduler and three goroutines on it that each compute for 2 ms and then
// yield, so that each waits about 4 ms for the other two before it runs
// again. The sampler must see the wait. A loaded machine only makes it
// longer. (Yielding, rather than relying on preemption, makes the
// switches many and certain: the scheduler records only one in eight.)
func TestProcessCPUSeesWaiting(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	sampler := server.ProcessCPU()
	if _, err := sampler.Sample(); err != nil {
		t.Skipf("no CPU samples here: %v", err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for slice := time.Now(); ; {
				select {
				case <-stop:
					return
				default:
				}
				if time.Since(slice) > 2*time.Millisecond {
					runtime.Gosched()
					slice = time.Now()
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	s, err := sampler.Sample()
	close(stop)
	wg.Wait()
	if err != nil || s.Wait < time.Millisecond {
		t.Fatalf("with three goroutines spinning on one core, the sampler saw a wait of %v (%v)", s.Wait, err)
	}
	t.Logf("90th percentile wait for a core: %v", s.Wait)
}

func TestBadCPUMarksAreRefused(t *testing.T) {
	rt := newHost(t, map[string]string{"main": "passthrough"}, nil).rt
	for _, marks := range [][2]float64{{1.5, 0}, {0.5, 0.5}, {-0.1, 0}} {
		_, err := server.New(context.Background(), server.Options{Runtime: rt, CPUHighWater: marks[0], CPULowWater: marks[1]})
		if err == nil || !strings.Contains(err.Error(), "CPU marks") {
			t.Errorf("marks %v: %v", marks, err)
		}
	}
	for _, marks := range [][2]time.Duration{{time.Millisecond, time.Millisecond}, {-time.Millisecond, 0}} {
		_, err := server.New(context.Background(), server.Options{Runtime: rt, CPUWaitHighWater: marks[0], CPUWaitLowWater: marks[1]})
		if err == nil || !strings.Contains(err.Error(), "CPU wait marks") {
			t.Errorf("wait marks %v: %v", marks, err)
		}
	}
}
