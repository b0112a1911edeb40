package loadgen

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// IdleResult is what connections cost a server when they carry no audio:
// how fast they open, and the server memory each holds.
type IdleResult struct {
	// Conns is the number of connections attempted; Failed could not
	// connect; Dropped were closed by the server while held (an idle
	// timeout shorter than Ramp+Hold, say).
	Conns, Failed, Dropped int
	// ConnectP50 and ConnectP95 are the times to open a connection.
	ConnectP50, ConnectP95 time.Duration
	// Hold is how long all connections were held open before the server's
	// memory was read.
	Hold time.Duration
	// HasServer says whether the server's /metrics was read; the fields
	// below are zero when it was not.
	HasServer bool
	// RSSBefore and RSSHeld are the server's resident memory before the
	// connections opened and while they were all held, bytes.
	RSSBefore, RSSHeld int64
	// RSSPerConn is (RSSHeld−RSSBefore) per connection held, bytes. The Go
	// runtime keeps freed memory for a while, so run this on a fresh
	// server: memory an earlier load left behind hides part of the cost.
	RSSPerConn float64
	// HeapPerConn is the same for the Go heap in use
	// (go_memstats_heap_inuse_bytes), which GC timing blurs less; 0 when
	// the server does not export it.
	HeapPerConn float64
	// ActiveHeld is the server's voxhost_active_calls while held.
	ActiveHeld int
	// Errors are the distinct reasons connections failed, most frequent
	// first.
	Errors []string
}

// Idle opens n connections spread over cfg.Ramp, without audio (each
// sends what opens its protocol's stream, Twilio's connected and start,
// so the server sets the call up as it would for real), holds them all for cfg.IdleHold, reads the server's
// memory, and closes them. The server's idle timeout counts from each
// connection's start: keep Ramp+IdleHold under it (10 s by default), or
// the earliest connections are dropped and the memory reads low.
func Idle(ctx context.Context, cfg Config, n int) (IdleResult, error) {
	if n <= 0 {
		return IdleResult{}, errors.New("loadgen: no idle connections")
	}
	cfg.Calls = n
	cfg, err := cfg.withDefaults()
	if err != nil {
		return IdleResult{}, err
	}
	r, err := newRunner(cfg)
	if err != nil {
		return IdleResult{}, err
	}
	scr := newScraper(r.metricsURL)
	before := scr.scrape(ctx)

	type idleConn struct {
		conn    *link
		connect time.Duration
		err     error
		closing atomic.Bool
		dropped atomic.Bool
		done    chan struct{} // the reader has stopped
	}
	conns := make([]idleConn, n)
	r.origin = time.Now()
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			ic := &conns[i]
			if ic.err = sleepUntil(ctx, r.origin.Add(r.dialAt(i))); ic.err != nil {
				return
			}
			t0 := time.Now()
			conn, err := r.dial(ctx)
			ic.connect = time.Since(t0)
			if ic.err = err; err != nil {
				return
			}
			if ic.err = r.calls[i].open(conn); ic.err != nil {
				conn.close(false)
				return
			}
			ic.conn, ic.done = conn, make(chan struct{})
			// A reader notices the server closing the connection, and
			// drains anything it sends meanwhile.
			go func() {
				defer close(ic.done)
				buf := make([]byte, 512)
				for {
					if _, _, err := conn.read(&buf); err != nil {
						ic.dropped.Store(!ic.closing.Load())
						return
					}
				}
			}()
		})
	}
	wg.Wait()
	holdErr := sleepUntil(ctx, time.Now().Add(cfg.IdleHold))
	var held *sample
	if holdErr == nil {
		held = scr.scrape(ctx)
	}
	res := IdleResult{Conns: n, Hold: cfg.IdleHold}
	var connects []time.Duration
	errs := map[string]int{}
	for i := range conns {
		ic := &conns[i]
		switch {
		case ic.err != nil:
			res.Failed++
			errs[ic.err.Error()]++
		case ic.dropped.Load():
			res.Dropped++
		}
		if ic.conn != nil {
			connects = append(connects, ic.connect)
		}
	}
	res.ConnectP50, res.ConnectP95 = percentile(connects, 50), percentile(connects, 95)
	res.Errors = tally(errs)
	if opened := n - res.Failed - res.Dropped; before != nil && held != nil && opened > 0 {
		res.HasServer = true
		if !math.IsNaN(before.rss) && !math.IsNaN(held.rss) {
			res.RSSBefore, res.RSSHeld = int64(before.rss), int64(held.rss)
			res.RSSPerConn = float64(res.RSSHeld-res.RSSBefore) / float64(opened)
		}
		if !math.IsNaN(before.heap) && !math.IsNaN(held.heap) {
			res.HeapPerConn = (held.heap - before.heap) / float64(opened)
		}
		if !math.IsNaN(held.activeCalls) {
			res.ActiveHeld = int(held.activeCalls)
		}
	}

	for i := range conns {
		if ic := &conns[i]; ic.conn != nil {
			ic.closing.Store(true)
			wg.Go(func() {
				ic.conn.close(true)
				<-ic.done
			})
		}
	}
	wg.Wait()
	return res, holdErr
}
