package server

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/sched"
)

func (c *call) readFailed(err error) {
	switch {
	case errors.Is(err, errTooBig):
		c.s.metrics.malformed.WithLabelValues(c.proto.Name(), "too_big").Inc()
		c.end(websocket.StatusMessageTooBig, fmt.Sprintf("message exceeds the limit of %d bytes", c.s.opts.MaxMessageBytes), "malformed")
	case errors.Is(err, errPeerClosed):
		c.flush()
		c.end(websocket.StatusNormalClosure, "", "completed")
	default:
		// The client vanished, or end() already closed the socket.
		c.end(websocket.StatusAbnormalClosure, "", "disconnected")
	}
}

func (c *call) malformed(err error) {
	reason := "malformed"
	status := websocket.StatusInvalidFramePayloadData
	var perr *transport.ProtocolError
	if errors.As(err, &perr) {
		switch {
		case perr.Unsupported:
			status = websocket.StatusUnsupportedData
		case perr.Limit:
			// Well formed, but a value the host will not keep.
			status, reason = websocket.StatusPolicyViolation, "limit"
		}
	}
	c.s.metrics.malformed.WithLabelValues(c.proto.Name(), reason).Inc()
	c.log.Info("malformed message", "err", err)
	c.end(status, err.Error(), "malformed")
}

// pluginFailed ends the call for an inbound plugin's failure (its
// policy is end_call), after what the plugins emitted.
func (c *call) pluginFailed(err error) {
	c.flushInbound()
	c.end(websocket.StatusInternalError, "plugin failed: "+err.Error(), "plugin_error")
}

// outboundFailed is pluginFailed for an outbound plugin, called by the
// goroutine that runs the outbound pipeline.
func (c *call) outboundFailed(err error) {
	c.flushOutbound()
	c.end(websocket.StatusInternalError, "plugin failed: "+err.Error(), "plugin_error")
}

// stop ends a stream the client closed in order: plugins flush what they
// hold, and the tail goes out before the close.
func (c *call) stop() {
	c.flush()
	c.end(websocket.StatusNormalClosure, "stream stopped", "completed")
}

// flush sends on what the inbound plugins hold when the caller's stream
// ends: to the bot in a relay, through the outbound pipeline to the caller
// in an echo.
func (c *call) flush() {
	if c.in == nil {
		return
	}
	// The slot is held while plugins run, never across a write: a caller
	// that stopped reading must not hold up every call's plugins.
	lease, deadline := c.cpu.in, sched.Now()+int64(c.s.rt.deadline)
	lease.Acquire(deadline)
	err := c.in.Flush(func(pcm []byte) error {
		if c.bot != nil {
			lease.Release()
			defer lease.Acquire(deadline)
			if !c.bot.sendAudio(pcm) {
				return errors.New("the bot leg failed")
			}
			return nil
		}
		if c.out != nil {
			c.pcmSrc.Frame = pcm
			var err error
			if pcm, err = c.out.Process(&c.pcmSrc); err != nil {
				lease.Release()
				defer lease.Acquire(deadline)
				c.outboundFailed(err)
				return err
			}
		}
		lease.Release()
		defer lease.Acquire(deadline)
		if n := c.format.Encode(c.frameOut, pcm); n > 0 && !c.sendCallerAudio(c.frameOut[:n]) {
			return errors.New("write failed")
		}
		return nil
	})
	lease.Release()
	if err != nil {
		c.log.Info("flush failed", "err", err)
	}
	c.flushInbound()
}

// end closes the call once, with a close code and reason for the caller;
// outcome labels it in metrics and logs. A relayed call's bot hears stop
// and a normal close. Safe from any goroutine.
func (c *call) end(status websocket.StatusCode, reason, outcome string) {
	c.endOnce.Do(func() {
		c.outcome, c.reason = outcome, reason
		close(c.done)
		if b := c.botLive.Load(); b != nil {
			b.close()
		}
		if status != websocket.StatusAbnormalClosure {
			c.hangup()
		}
		c.conn.close(status, reason)
	})
}

// hangup sends what the caller's protocol ends a call with, if anything;
// a caller that stopped reading must not hold up the end, so it is sent
// only if no write is under way.
func (c *call) hangup() {
	if !c.callerMu.TryLock() {
		return
	}
	defer c.callerMu.Unlock()
	if typ, msg, ok := c.sess.Hangup(); ok {
		_ = c.conn.write(typ, msg)
	}
}

// closeReason fits a reason into the 123 bytes a close frame carries.
func closeReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	cut := 120
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// finish waits for the call's other goroutines, releases its instances
// and records how it ended.
func (c *call) finish() {
	c.end(websocket.StatusNormalClosure, "", "completed")
	c.watch.stop()
	c.workers.Wait()
	c.rec.Close()
	for _, p := range []*pipeline.Pipeline{c.in, c.out} {
		if p != nil {
			if err := p.Close(ctx); err != nil {
				c.log.Info("closing plugins", "err", err)
			}
			c.s.metrics.countDroppedEmits(p)
		}
	}
	c.closeCPU()
	if c.bot != nil {
		c.bot.finish()
	}
	c.s.metrics.calls.WithLabelValues(c.proto.Name(), c.outcome).Inc()
	c.s.metrics.callSeconds.WithLabelValues(c.proto.Name()).Observe(time.Since(c.started).Seconds())
	attrs := []any{"pipeline", c.pipelineName, "frames", c.frames.Load(), "audio_ms", c.audioMs,
		"duration", time.Since(c.started).Round(time.Millisecond), "outcome", c.outcome}
	if c.bot != nil {
		attrs = append(attrs, c.bot.summary()...)
	}
	if c.cpu != nil {
		attrs = append(attrs, "plugin_cpu", c.cpu.acct.CPU().Round(time.Microsecond))
	}
	if c.reason != "" {
		attrs = append(attrs, "reason", c.reason)
	}
	if c.rec != nil {
		attrs = append(attrs, "recording", cmp.Or(c.rec.Outcome(), "still_writing"))
	}
	if c.far != nil {
		if n := c.far.finish(); n > 0 {
			attrs = append(attrs, "far_end_dropped_ms", n*1000/int64(c.format.Rate))
		}
	}
	c.log.Info("call ended", attrs...)
}
