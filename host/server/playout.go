package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// playout is a relayed call's queue of bot audio for the caller, in the
// caller's format, with the bot's marks at their places in it. The bot
// reader pushes; the playout goroutine sends it to the caller paced by the
// clock: at real time where the host owns timing, up to a bounded
// send-ahead where the caller's protocol buffers (Twilio).
type playout struct {
	s          *Server
	format     codec.Format
	frameBytes int
	limit      int
	sendAhead  time.Duration
	buffers    bool // the caller's protocol buffers and returns marks
	// chunk is the size of a message to the caller: a frame, or for a
	// caller that takes audio only in larger messages
	// (transport.AudioChunker), whole frames enough for its minimum.
	chunk int

	mu   sync.Mutex
	ring []byte
	head int
	size int
	// pushed, popped and dropped are byte counts since the call began:
	// the queue's head sits at popped+dropped in the bot's audio.
	pushed, popped, dropped int64
	// gen changes on every clear: a frame processed from before a clear
	// is not queued after it.
	gen atomic.Uint64
	// marks are bot marks not yet reached, in order; sent are those sent
	// to a buffering caller and not yet returned.
	marks []queuedMark
	sent  []string
	// playEnd is when the audio sent so far ends playing at the caller.
	playEnd time.Time
	started bool
	// lastPush is when the bot reader last queued audio, kept for chunked
	// callers: a tail short of a chunk waits for more until tailWait.
	lastPush time.Time

	underruns, overflows int64
	// paused holds the audio back: the caller's queue is full.
	paused bool
	// writing says a frame taken off the queue (or passed by it) is
	// being written to the caller; nothing else goes out until it is.
	// waited says the playout found it so and waits to be woken.
	writing, waited bool
	// takes counts the frames taken, so that the queue's depth is
	// observed one frame in depthEvery (a shared histogram costs each
	// observation a few atomic adds on cache lines every call touches).
	takes, depthEvery uint64
	hungUp            bool
	hangReason        string

	wake, space chan struct{}
}

type queuedMark struct {
	pos  int64 // pushed when the mark came
	name string
	// digit, when not 0, makes it a key the bot pressed rather than a
	// mark: the caller gets it once the audio before it has played.
	digit byte
}

// maxMarks bounds the marks a call holds, queued or sent: a bot that sends
// marks without audio between them could otherwise grow the queue.
const maxMarks = 1024

// underrunGap is the longest silence between two pieces of a bot's audio
// that counts as a gap in one answer (an underrun) rather than a pause
// between answers; underrunJitter is the shortest, under which a client's
// own buffer absorbs it.
const (
	underrunGap    = 100 * time.Millisecond
	underrunJitter = 5 * time.Millisecond
)

// catchUp is how late the playout may fall (its goroutine woken late on a
// busy machine) and still keep to its schedule by sending the late frames
// at once; later than that, or after the queue ran dry, the schedule
// starts again from now. Without it, every late wake-up would stretch the
// bot's answer.
const catchUp = 500 * time.Millisecond

// initialPlayout is the queue's first allocation: a bot that streams at
// real time never needs more; one that sends ahead grows it, up to the
// limit, once.
const initialPlayout = 200 * time.Millisecond

// pacedLead is how early a frame may go to a caller the host paces: one
// frame. Without it the schedule is anchored to the first frame's
// arrival, and a first frame the bot answered late would hold every later
// frame of a streaming bot back by as much; with it, jitter up to a frame
// passes through, and a burst still plays at real time.
const pacedLead = outboundFrameMs * time.Millisecond

func newPlayout(s *Server, f codec.Format) *playout {
	bpm := f.BytesPerMs()
	q := &playout{
		s:          s,
		format:     f,
		sendAhead:  pacedLead,
		frameBytes: outboundFrameMs * bpm,
		chunk:      outboundFrameMs * bpm,
		depthEvery: uint64(s.opts.SampleEvery),
		limit:      int(s.opts.PlayoutQueue.Milliseconds()) * bpm,
		ring:       make([]byte, int(initialPlayout.Milliseconds())*bpm),
		wake:       make(chan struct{}, 1),
		space:      make(chan struct{}, 1),
	}
	q.limit = max(q.limit, q.frameBytes)
	return q
}

// ahead is how much audio is queued before a frame pushed now: how long
// after now it is due to play, for the scheduler's deadline.
func (q *playout) ahead() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	return time.Duration(q.size/q.format.BytesPerMs()) * time.Millisecond
}

// tailWait is how long a chunked caller's tail, short of a chunk, waits
// for more of the bot's audio before it goes out padded with silence: two
// frames, since a streaming bot's next frame comes within one.
const tailWait = 2 * outboundFrameMs * time.Millisecond

// chunked makes messages to the caller at least minBytes long and a
// multiple of multiple bytes, in whole frames.
func (q *playout) chunked(minBytes, multiple int) {
	n := max((minBytes+q.frameBytes-1)/q.frameBytes, 1) * q.frameBytes
	for i := 0; multiple > 0 && n%multiple != 0 && i < multiple; i++ {
		n += q.frameBytes
	}
	q.chunk = n
	q.limit = max(q.limit, n)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (q *playout) generation() uint64 { return q.gen.Load() }

// push queues a frame the bot reader processed in generation gen; one
// from before a clear is dropped. A full queue holds the reader back until
// there is room (counted as an overflow) or done closes; false ok means
// done. A frame that is due at once, with nothing queued or being written
// before it, is not queued: direct says the reader is to write it itself
// (sendPlayout, then written), which spares a streaming bot's every frame
// a wake-up of the playout goroutine.
func (q *playout) push(b []byte, gen uint64, done <-chan struct{}) (direct, ok bool) {
	waited := false
	for {
		q.mu.Lock()
		if gen != q.gen.Load() {
			q.mu.Unlock()
			return false, true
		}
		if q.size+len(b) <= q.limit {
			break
		}
		if !waited {
			waited = true
			q.overflows++
			q.s.metrics.overflows.Inc()
		}
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-done:
			return false, false
		}
	}
	defer q.mu.Unlock()
	var now time.Time
	if q.chunk > q.frameBytes {
		q.lastPush = time.Now()
	}
	if q.size == 0 {
		now = time.Now()
		if gap := now.Sub(q.playEnd); q.started && gap > underrunJitter && gap <= underrunGap {
			q.underruns++
			q.s.metrics.underruns.Inc()
		}
		if q.chunk == q.frameBytes && len(q.marks) == 0 && !q.paused && !q.writing && !q.schedule(now).After(now) {
			q.pushed += int64(len(b))
			q.took(len(b))
			return true, true
		}
	}
	if q.size+len(b) > len(q.ring) {
		q.grow(q.size + len(b))
	}
	tail := (q.head + q.size) % len(q.ring)
	n := copy(q.ring[tail:], b)
	copy(q.ring, b[n:])
	q.size += len(b)
	q.pushed += int64(len(b))
	signal(q.wake)
	return false, true
}

// schedule is when the next frame is due, restarting the schedule if the
// caller has heard everything; mu is held.
func (q *playout) schedule(now time.Time) time.Time {
	if q.playEnd.Before(now.Add(-catchUp)) {
		q.playEnd = now // the caller heard everything: start again from now
	}
	return q.playEnd.Add(-q.sendAhead)
}

// took books n bytes as on their way to the caller; mu is held.
func (q *playout) took(n int) {
	q.popped += int64(n)
	q.playEnd = q.playEnd.Add(time.Duration(n/q.format.BytesPerMs()) * time.Millisecond)
	q.started = true
	q.writing = true
	if q.takes++; q.depthEvery != 0 && q.takes%q.depthEvery == 0 {
		q.s.metrics.playoutDepth.Observe(float64(q.size/q.format.BytesPerMs()) / 1000)
	}
}

// written says the frame being written has gone out.
func (q *playout) written() {
	q.mu.Lock()
	q.writing = false
	wake := q.waited
	q.waited = false
	q.mu.Unlock()
	if wake {
		// Only a playout that found the write under way waits for it: a
		// streaming bot's frames, written by the bot reader, wake no one.
		signal(q.wake)
	}
}

// grow makes room for need bytes, doubling up to the limit.
func (q *playout) grow(need int) {
	ring := make([]byte, min(max(2*len(q.ring), need), q.limit))
	n := copy(ring, q.ring[q.head:min(q.head+q.size, len(q.ring))])
	copy(ring[n:], q.ring[:q.size-n])
	q.ring, q.head = ring, 0
}

// mark queues a bot mark after the audio queued so far. Past maxMarks the
// mark is acknowledged at once, and counted dropped.
func (q *playout) mark(name string, c *call) {
	q.mu.Lock()
	if len(q.marks)+len(q.sent) >= maxMarks {
		q.mu.Unlock()
		c.log.Warn("the bot sent more marks than the host holds: acknowledged at once", "limit", maxMarks)
		c.bot.ack(name, "dropped")
		return
	}
	q.marks = append(q.marks, queuedMark{pos: q.pushed, name: name})
	q.mu.Unlock()
	signal(q.wake)
}

// digit queues a key the bot pressed after the audio queued so far, for
// a caller whose protocol carries keys. It counts against maxMarks; past
// it the key is dropped.
func (q *playout) digit(d byte, c *call) {
	q.mu.Lock()
	if len(q.marks)+len(q.sent) >= maxMarks {
		q.mu.Unlock()
		c.log.Warn("the bot pressed more keys than the host holds: dropped", "limit", maxMarks, "digit", string(d))
		return
	}
	q.marks = append(q.marks, queuedMark{pos: q.pushed, digit: d})
	q.mu.Unlock()
	signal(q.wake)
}

// played takes name from the marks sent to the caller and says whether it
// was one.
func (q *playout) played(name string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, n := range q.sent {
		if n == name {
			q.sent = append(q.sent[:i], q.sent[i+1:]...)
			return true
		}
	}
	return false
}

// clear drops the queued audio and marks and returns where in the bot's
// audio the caller stopped hearing it, in ms, with the marks dropped;
// dropsMarks drops those sent to the caller too, for a caller whose clear
// discards them.
func (q *playout) clear(dropsMarks bool) (heardMs int64, cleared []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	bpm := int64(q.format.BytesPerMs())
	// What was sent but not yet played is gone too: the caller's clear
	// drops it at a buffering carrier, and for the rest it is under a
	// frame.
	unplayed := max(q.playEnd.Sub(now), 0).Milliseconds() * bpm
	heardMs = max(q.popped+q.dropped-unplayed, 0) / bpm
	q.dropped += int64(q.size)
	q.size, q.head = 0, 0
	q.gen.Add(1)
	for _, m := range q.marks {
		if m.digit == 0 { // the keys go with the audio before them
			cleared = append(cleared, m.name)
		}
	}
	q.marks = q.marks[:0]
	if dropsMarks {
		// The caller's clear discards the marks it holds instead of
		// returning them (transport.MarkDropper).
		cleared = append(cleared, q.sent...)
		q.sent = q.sent[:0]
	}
	q.playEnd = now
	signal(q.space)
	return heardMs, cleared
}

// hangUp records that the bot ended the call: the playout ends it once
// the queue is empty.
func (q *playout) hangUp(reason string) {
	q.mu.Lock()
	q.hungUp, q.hangReason = true, reason
	q.mu.Unlock()
	signal(q.wake)
}

// pause holds the audio back (on) or lets it go again.
func (q *playout) pause(on bool) {
	q.mu.Lock()
	q.paused = on
	q.mu.Unlock()
	signal(q.wake)
}

// unplayedMarks counts the bot's marks the caller never reached.
func (q *playout) unplayedMarks() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.sent)
	for _, m := range q.marks {
		if m.digit == 0 {
			n++
		}
	}
	return n
}

// step is what the playout goroutine does next.
type step struct {
	n     int           // bytes of audio to send, in the frame buffer
	gen   uint64        // the queue's generation the audio was taken in
	marks []queuedMark  // marks and keys reached, after the audio before them
	wait  time.Duration // nothing is due before this long
	idle  bool          // nothing is queued
	ended bool          // the bot hung up and all it said was sent
}

// next fills frame with the audio due at now, or says what is next.
func (q *playout) next(frame []byte, now time.Time, marks []queuedMark) step {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.writing {
		q.waited = true // the bot reader's frame: written wakes us
		return step{idle: true}
	}
	// A mark is reached once the audio before it is sent (a buffering
	// caller returns it when played) or, where the host owns timing, has
	// played.
	for len(q.marks) > 0 && q.marks[0].pos <= q.popped+q.dropped {
		if !q.buffers && q.playEnd.After(now) {
			if len(marks) == 0 {
				return step{wait: q.playEnd.Sub(now)}
			}
			break
		}
		marks = append(marks, q.marks[0])
		if q.buffers && q.marks[0].digit == 0 {
			q.sent = append(q.sent, q.marks[0].name)
		}
		q.marks = append(q.marks[:0], q.marks[1:]...)
	}
	if len(marks) > 0 {
		return step{marks: marks}
	}
	if q.size == 0 || q.paused {
		return step{idle: true, ended: q.hungUp && q.size == 0}
	}
	if due := q.schedule(now); due.After(now) {
		return step{wait: due.Sub(now)}
	}
	n := min(q.size, q.chunk)
	send := n
	if n < q.chunk && q.chunk > q.frameBytes {
		// A tail short of the caller's chunk waits for more, unless the
		// bot's answer ended (it hung up, or sent a mark after it); then it
		// goes out padded with silence.
		ended := q.hungUp || len(q.marks) > 0 && q.marks[0].pos == q.pushed
		if wait := q.lastPush.Add(tailWait).Sub(now); !ended && wait > 0 {
			return step{wait: wait}
		}
		send = q.chunk
	}
	k := copy(frame[:n], q.ring[q.head:])
	copy(frame[k:n], q.ring)
	if send > n {
		silence := q.format.Silence()
		for i := range frame[n:send] {
			frame[n+i] = silence
		}
	}
	q.head = (q.head + n) % len(q.ring)
	q.size -= n
	q.took(n)
	if send > n { // the padding plays too
		q.playEnd = q.playEnd.Add(time.Duration((send-n)/q.format.BytesPerMs()) * time.Millisecond)
	}
	signal(q.space)
	return step{n: send, gen: q.gen.Load()}
}

// playout is the relayed call's playout goroutine: it sends the bot's
// queued audio to the caller as the clock allows, and its marks after it.
func (c *call) playout() {
	defer c.workers.Done()
	b := c.bot
	q := b.queue
	frame := make([]byte, q.chunk)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var marks []queuedMark
	for {
		st := q.next(frame, time.Now(), marks[:0])
		switch {
		case st.ended:
			c.end(websocket.StatusNormalClosure, q.hangReason, "bot_hangup")
			return
		case st.idle:
			select {
			case <-q.wake:
			case <-c.done:
				return
			}
			continue
		case st.wait > 0:
			timer.Reset(st.wait)
			select {
			case <-timer.C:
			case <-q.wake:
				timer.Stop()
			case <-c.done:
				timer.Stop()
				return
			}
			continue
		}
		if st.n > 0 {
			ok := c.sendPlayout(frame[:st.n], st.gen)
			q.written()
			if !ok {
				return
			}
		}
		for _, m := range st.marks {
			if !c.reached(m) {
				return
			}
		}
		marks = st.marks
	}
}

// sendPlayout writes a frame taken from the queue in generation gen to
// the caller, unless a barge-in cleared the queue since: the clear and the
// check are both made under callerMu, so no audio queued before a clear
// reaches the caller after the clear message.
func (c *call) sendPlayout(ulaw []byte, gen uint64) bool {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	if c.bot.queue.generation() != gen {
		return true
	}
	typ, msg := c.sess.Audio(ulaw)
	if !c.writeCallerLocked(typ, msg) {
		return false
	}
	if c.far != nil {
		c.far.wrote(ulaw)
	}
	c.rec.Heard(ulaw)
	c.framesOut.Inc()
	return true
}

// markReached sends a bot mark on: to a buffering caller, which returns
// it once played; where the host owns timing it has played, and the bot
// hears so at once (the caller sees the mark too).
func (c *call) markReached(name string) bool {
	if !c.bot.queue.buffers {
		// The bot hears first: the caller's copy is only news.
		c.bot.ack(name, "played")
	}
	return c.renderCaller(func() (transport.MessageType, []byte, bool) { return c.sess.Mark(name) })
}
