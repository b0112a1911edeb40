package loadgen

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// maxRing caps a call's ring of send times: 20 s of frames at 50 fps, far
// beyond any round trip worth measuring precisely.
const maxRing = 1024

// flight is one call's frames in flight: a ring of send times, written by
// the call's sender and read by its receiver. A server answers a call's
// frames in order, so the k-th reply belongs to the k-th frame.
//
// The sender never waits for room, since that would close the loop. When a
// server falls more than the ring's length behind, the sender overwrites the
// oldest stamps, and the receiver, seeing that, takes the frame's scheduled
// time instead, which is earlier than its true send time by only the
// sender's lag.
type flight struct {
	stamps   []atomic.Int64 // send time of frame k at k&mask, since the run's origin
	mask     int64
	first    time.Duration // when frame 0 was due, since the origin
	period   time.Duration
	sent     atomic.Int64
	received atomic.Int64
}

// newFlight makes a ring for a call that sends frames frames.
func newFlight(frames int64, period time.Duration) flight {
	n := int64(1) << bits.Len64(uint64(min(max(frames, 2), maxRing)-1))
	return flight{stamps: make([]atomic.Int64, n), mask: n - 1, period: period}
}

// send stamps the next frame with its send time and returns its index.
func (f *flight) send(now time.Duration) int64 {
	k := f.sent.Load()
	f.stamps[k&f.mask].Store(int64(now))
	f.sent.Store(k + 1) // publishes the stamp to the receiver
	return k
}

// reply matches a reply that arrived at now to the oldest unanswered frame
// and returns the round trip; false if every frame sent is answered already.
func (f *flight) reply(now time.Duration) (time.Duration, bool) {
	k := f.received.Load()
	if k >= f.sent.Load() {
		return 0, false
	}
	stamp := time.Duration(f.stamps[k&f.mask].Load())
	// Frame k+len overwrites the slot only after sent reaches k+len, so
	// a lower count read after the stamp proves the stamp is frame k's.
	if f.sent.Load()-k >= int64(len(f.stamps)) {
		stamp = f.first + time.Duration(k)*f.period
	}
	f.received.Store(k + 1)
	return now - stamp, true
}
