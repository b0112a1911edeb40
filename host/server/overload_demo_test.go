package server_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
)

// TestOverloadFigures measures what RATIONALE.md's "Overload" section
// reports: a healthy call's round trips beside calls that want more CPU
// than the machine has, and beside a burst of slow call set-ups, with and
// without the protection. It asserts nothing (figures from a shared
// machine are for reading) and runs only when asked, for about 40 s:
//
//	VOXHOST_OVERLOAD_DEMO=1 go test -run TestOverloadFigures -v ./host/server
func TestOverloadFigures(t *testing.T) {
	if os.Getenv("VOXHOST_OVERLOAD_DEMO") == "" {
		t.Skip("set VOXHOST_OVERLOAD_DEMO=1 to measure (figures, no assertions)")
	}
	spin := testdataPlugin("spin_frame") + " budget_ms=50"
	heavy := strings.Join([]string{spin, spin, spin, spin}, " | ")
	slow := testdataPlugin("slow_init") + " | " + testdataPlugin("slow_init")
	pipelines := map[string]string{"main": "passthrough", "heavy": heavy, "slow": slow}
	rtOpts := plugin.Options{InitBudget: time.Minute, Logger: quietLogger()}

	for _, tc := range []struct {
		name  string
		tweak func(*server.Options)
	}{
		{"10 calls of 4 × 4 ms stages, no CPU shedding", nil},
		{"10 calls of 4 × 4 ms stages, shedding at 85% CPU or a 10 ms wait", func(o *server.Options) {
			o.CPUHighWater, o.CPUWaitHighWater = 0.85, 10*time.Millisecond
		}},
	} {
		h := newHostOn(t, rtOpts, pipelines, tc.tweak)
		var admitted, refused atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		go func() {
			time.Sleep(time.Second)
			for i := 0; i < 10; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					if streamUntil(h.url+"/ws?pipeline=heavy", i, stop, nil) {
						admitted.Add(1)
					} else {
						refused.Add(1)
					}
				}(i)
				time.Sleep(200 * time.Millisecond)
			}
		}()
		r := healthyCall(t, h.url+"/ws", 8*time.Second)
		close(stop)
		wg.Wait()
		t.Logf("%s: heavy calls admitted %d, refused %d; healthy call %s", tc.name, admitted.Load(), refused.Load(), r)
	}

	for _, tc := range []struct {
		name  string
		tweak func(*server.Options)
	}{
		{"20 set-ups of ~200 ms at once, no gate", func(o *server.Options) { o.MaxSetups = 1000 }},
		{"20 set-ups of ~200 ms at once, gate of GOMAXPROCS-1, wait 1 s", func(o *server.Options) { o.SetupWait = time.Second }},
		{"20 set-ups of ~200 ms at once, gate of GOMAXPROCS-1, wait 1 min", func(o *server.Options) { o.SetupWait = time.Minute }},
	} {
		h := newHostOn(t, rtOpts, pipelines, tc.tweak)
		var admitted, refused atomic.Int64
		var lastSetUp atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		burst := make(chan time.Time, 1)
		go func() {
			time.Sleep(time.Second)
			start := time.Now()
			burst <- start
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					if streamUntil(h.url+"/ws?pipeline=slow", i, stop, func() { lastSetUp.Store(int64(time.Since(start))) }) {
						admitted.Add(1)
					} else {
						refused.Add(1)
					}
				}(i)
			}
		}()
		r := healthyCall(t, h.url+"/ws", 6*time.Second)
		close(stop)
		wg.Wait()
		<-burst
		t.Logf("%s: set up %d (the last %v after the burst), refused %d; healthy call %s", tc.name,
			admitted.Load(), time.Duration(lastSetUp.Load()).Round(time.Millisecond), refused.Load(), r)
	}
}

// streamUntil places a call that answers one frame every 20 ms until stop,
// and says whether it was taken (its first frame answered); started, if
// not nil, is called when it is.
func streamUntil(url string, k int, stop <-chan struct{}, started func()) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return false
	}
	defer c.CloseNow()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		if c.Write(ctx, websocket.MessageBinary, stamp(k, i)) != nil {
			return i > 0
		}
		if _, _, err := c.Read(ctx); err != nil {
			return i > 0
		}
		if i == 0 && started != nil {
			started()
		}
		select {
		case <-stop:
			c.Close(websocket.StatusNormalClosure, "")
			return true
		case <-tick.C:
		}
	}
}

// rtts summarizes a call's round trips.
type rtts []time.Duration

func (r rtts) String() string {
	if len(r) == 0 {
		return "no frames"
	}
	s := slices.Clone(r)
	slices.Sort(s)
	late := 0
	for _, d := range s {
		if d > 20*time.Millisecond {
			late++
		}
	}
	q := func(p float64) time.Duration {
		return s[min(len(s)-1, int(p*float64(len(s))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("%d frames, %d answered later than 20 ms, round trip p50 %v p99 %v max %v", len(s), late, q(0.5), q(0.99), s[len(s)-1].Round(10*time.Microsecond))
}

// healthyCall streams a passthrough call at 20 ms a frame for d and
// returns its round trips.
func healthyCall(t *testing.T, url string, d time.Duration) rtts {
	t.Helper()
	c := dial(t, url)
	defer c.CloseNow()
	ctx := context.Background()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var r rtts
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		start := time.Now()
		if err := c.Write(ctx, websocket.MessageBinary, stamp(0, len(r))); err != nil {
			t.Fatal(err)
		}
		readMessage(t, c)
		r = append(r, time.Since(start))
	}
	c.Close(websocket.StatusNormalClosure, "")
	return r
}
