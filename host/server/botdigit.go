package server

import (
	"time"

	"github.com/voxhost/voxhost/host/transport"
)

// digit handles a key the bot pressed (its dialect's KindDTMF): it is
// queued for the caller after the audio the bot sent before it, where the
// caller's protocol carries keys (transport.DigitSender: SIP's RFC 4733
// telephone-events). Another caller's protocol has no place for one: the
// call's log says so, once.
func (b *botLeg) digit(d byte, t0 time.Time) bool {
	if _, ok := b.c.sess.(transport.DigitSender); !ok {
		if !b.keysDropped {
			b.keysDropped = true
			b.c.log.Info("the bot pressed a key, which the caller's protocol cannot carry: dropped", "digit", string(d))
		}
		return true
	}
	// As for a mark: the audio before the key is queued before it, and a
	// frame cut short goes out as it is.
	if !b.flushFrame(t0) {
		return false
	}
	b.queue.digit(d, b.c)
	return true
}

// reached acts on a mark or key of the bot's whose audio before it has
// played (or, for a mark to a buffering caller, been sent): a mark goes
// on (markReached), a key is sent to the caller.
func (c *call) reached(m queuedMark) bool {
	if m.digit == 0 {
		return c.markReached(m.name)
	}
	ds := c.sess.(transport.DigitSender)
	return c.renderCaller(func() (transport.MessageType, []byte, bool) { return ds.Digit(m.digit) })
}
