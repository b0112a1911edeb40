package server

import (
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// writeGauge lets the watchdog see a write that does not return: a peer
// that stopped reading fills its TCP window and then every write blocks.
// Its count is odd while a write is under way, so the frame path pays two
// atomic adds per write and reads no clock.
type writeGauge struct{ seq atomic.Uint32 }

func (g *writeGauge) begin() { g.seq.Add(1) }
func (g *writeGauge) end()   { g.seq.Add(1) }

// stall tracks one gauge across watchdog ticks.
type stall struct {
	last uint32
	dur  time.Duration
}

// observe adds a tick of period to the stall if the same write is still
// under way, and returns how long it has been.
func (s *stall) observe(g *writeGauge, period time.Duration) time.Duration {
	seq := g.seq.Load()
	if seq&1 == 1 && seq == s.last {
		s.dur += period
	} else {
		s.dur = 0
	}
	s.last = seq
	return s.dur
}

// watchdog ends a call whose caller sent no audio for the idle timeout, or
// one of whose peers has not taken a message for the stall timeout. It
// ticks a few times per timeout instead of being reset per frame, so a
// frame costs a counter increment rather than a timer reset.
type watchdog struct {
	c      *call
	period time.Duration
	timer  *time.Timer

	frames      uint64
	idleFor     time.Duration
	caller, bot stall
}

// watchdogTicks is how many times per timeout the watchdog looks: a call
// ends between its timeout and a quarter more.
const watchdogTicks = 4

func startWatchdog(c *call) *watchdog {
	period := min(c.s.opts.IdleTimeout, c.s.opts.StallTimeout) / watchdogTicks
	w := &watchdog{c: c, period: min(max(period, 5*time.Millisecond), time.Second)}
	// Armed only once w.timer is set: the first tick reads it.
	w.timer = time.AfterFunc(time.Hour, w.tick)
	w.timer.Reset(w.period)
	return w
}

func (w *watchdog) stop() { w.timer.Stop() }

func (w *watchdog) tick() {
	c, opts := w.c, &w.c.s.opts
	select {
	case <-c.done:
		return
	default:
	}
	if f := c.frames.Load(); f != w.frames || c.callerPaused.Load() {
		w.frames, w.idleFor = f, 0
	} else {
		w.idleFor += w.period
	}
	switch {
	case w.idleFor >= opts.IdleTimeout:
		c.end(websocket.StatusPolicyViolation, fmt.Sprintf("idle timeout: no audio for %v", opts.IdleTimeout), "idle")
		return
	case w.caller.observe(&c.callerWrites, w.period) >= opts.StallTimeout:
		// The call-ended line says so: the call's logger may be changing
		// while the call starts, and is not this goroutine's to read.
		c.end(websocket.StatusAbnormalClosure, fmt.Sprintf("the caller took no message for %v", opts.StallTimeout), "caller_stalled")
		return
	}
	if b := c.botLive.Load(); b != nil && w.bot.observe(&b.writes, w.period) >= opts.StallTimeout {
		b.failed("stalled", fmt.Sprintf("the bot took no message for %v", opts.StallTimeout), nil)
		return
	}
	w.timer.Reset(w.period)
}

// queryParams are the custom parameters a raw call carries in its URL:
// every query parameter but the token, first values only.
func queryParams(q url.Values) map[string]string {
	if len(q) == 0 {
		return nil
	}
	params := make(map[string]string, len(q))
	for k, v := range q {
		if k != "token" && len(v) > 0 {
			params[k] = v[0]
		}
	}
	return params
}
