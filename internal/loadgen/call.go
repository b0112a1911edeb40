package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voxhost/voxhost/host/transport"
)

// Reads and writes use context.Background: coder/websocket allocates for
// every operation under a cancellable context, and a call is stopped by
// closing its socket instead.
var bg = context.Background()

// call is one simulated call: a connection, the protocol's client role, a
// sender on the call's schedule and a receiver matching replies to frames.
type call struct {
	r     *runner
	index int
	shard *shard
	fl    flight
	// sess is the protocol's client role: it renders what the carrier
	// sends and decodes what the host sends back. Its renders and the
	// writes of what they render are serialized by wmu, since the sender,
	// the mark returner and the receiver's replies all write.
	sess transport.BotSession
	wmu  sync.Mutex
	in   transport.Inbound // the receiver's
	buf  []byte            // the receiver's message buffer

	// What the receiver alone touches. owed is the audio received towards
	// the next frame's answer; played is when the audio received so far
	// ends, played out as a carrier that buffers plays it (from when it
	// arrives, one after another), which is when Twilio returns a mark
	// sent after it.
	owed   int
	played time.Duration
	// marks carries the host's marks to returnMarks, with the time each
	// is due back; nil for a protocol whose carrier returns none.
	marks         chan markAck
	marksReturned atomic.Int64
	marksDropped  atomic.Int64

	conn    atomic.Pointer[link] // for the run's abort
	closing atomic.Bool          // set before we close the connection, so its error is ours

	connect   time.Duration // time to open the connection
	connected bool
	sent      int64 // frames written
	err       error // why the call failed: no connection, or its connection broke
	readErr   error // the receiver's, read after it has finished
	extra     int64 // audio replies beyond the frames sent
}

// run is the call's whole life: dial at its slot, open the stream, send
// every frame on schedule, wait the grace period for the last replies,
// end the stream and close.
func (c *call) run(ctx context.Context) {
	r := c.r
	if err := sleepUntil(ctx, r.origin.Add(r.dialAt(c.index))); err != nil {
		c.err = err
		return
	}
	t0 := time.Now()
	conn, err := r.dial(ctx)
	c.connect = time.Since(t0)
	if err != nil {
		c.err = err
		return
	}
	c.connected = true
	c.conn.Store(conn)
	if ctx.Err() != nil { // the abort may have passed this call before Store
		c.closing.Store(true)
		conn.close(false)
		c.err = ctx.Err()
		return
	}
	if err := c.open(conn); err != nil {
		c.closing.Store(true)
		conn.close(false)
		c.err = fmt.Errorf("start: %w", err)
		return
	}
	c.fl.first = r.firstSlot(c.index, time.Since(r.origin))
	done := make(chan struct{})
	if c.marks != nil {
		go c.returnMarks(conn, done)
	}
	go c.receive(conn, done)
	sendErr := c.send(conn)
	if sendErr == nil {
		grace := time.NewTimer(r.cfg.Grace)
		select {
		case <-done:
		case <-grace.C:
		}
		grace.Stop()
	}
	c.closing.Store(true)
	select {
	case <-done: // every frame answered, or the connection broke
		if sendErr == nil {
			c.stop(conn)
		}
		conn.close(true)
	default:
		// Replies are overdue: the frames count as failed, the connection
		// does not.
		conn.close(false)
		<-done
	}
	// The receiver's error says more: a close frame's status and reason,
	// where the sender only sees a closed socket.
	c.err = cmp.Or(c.readErr, sendErr)
}

// open sends what begins the stream: Twilio's connected and start,
// AudioSocket's UUID, raw's start event.
func (c *call) open(conn *link) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.sess.Open(conn.write)
}

// stop sends the end of the stream, as the carrier ends a call (Twilio's
// stop, AudioSocket's hang-up frame), if the protocol has one; the
// connection closes after it anyway.
func (c *call) stop(conn *link) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if typ, msg, ok := c.sess.Stop(); ok {
		_ = conn.write(typ, msg)
	}
}

// send writes the call's frames on its schedule: frame k goes at
// first+k×period however the replies fare. A sender that falls behind (a
// busy machine, a socket that blocked) sends the frames it owes at once,
// as a network delivers a burst after a stall.
func (c *call) send(conn *link) error {
	r := c.r
	for k := int64(0); k < r.frames; k++ {
		due := c.fl.first + time.Duration(k)*r.period
		now := time.Since(r.origin)
		if wait := due - now; wait > 0 {
			time.Sleep(wait)
			now = time.Since(r.origin)
		}
		c.shard.recordLag(now - due)
		c.fl.send(now)
		if err := c.sendFrame(conn); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		c.sent++
	}
	return nil
}

// sendFrame renders the frame as the protocol carries it and writes it.
func (c *call) sendFrame(conn *link) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	typ, msg := c.sess.Audio(c.r.frame)
	return conn.write(typ, msg)
}

// receive reads replies until every frame the call will send is answered
// or the connection closes, and records each frame's round trip.
//
// A frame is answered by its length of audio, not by a message: a relayed
// call's audio comes back cut and paced by the host's playout clock, in
// messages that need not match the frames sent, and the k-th frame is
// answered when the audio received adds up to k+1 frames. Nothing in the
// audio says which frame it was: the route's plugins (a gain, an AGC)
// change every sample, so a nonce would not survive them, while the order
// and the length of the audio do.
func (c *call) receive(conn *link, done chan<- struct{}) {
	defer close(done)
	r := c.r
	for c.fl.received.Load() < r.frames {
		typ, msg, err := conn.read(&c.buf)
		if err != nil {
			if !c.closing.Load() {
				c.readErr = readError(err)
			}
			return
		}
		now := time.Since(r.origin)
		if err := c.sess.Decode(typ, msg, &c.in); err != nil {
			if !c.closing.Load() {
				c.readErr = fmt.Errorf("reply: %w", err)
			}
			return
		}
		if c.in.Reply != nil && c.reply(conn) != nil {
			return // the connection broke: the sender sees it too
		}
		switch c.in.Kind {
		case transport.KindAudio:
		case transport.KindMark:
			if c.marks != nil {
				c.returnMark(c.in.Mark, now)
			}
			continue
		default: // clears, events, the host's hang-up: the close follows
			continue
		}
		audio := len(c.in.Audio)
		c.played = max(c.played, now) + time.Duration(audio)*time.Millisecond/time.Duration(r.cfg.Format.BytesPerMs())
		for c.owed += audio; c.owed >= r.frameBytes; c.owed -= r.frameBytes {
			rtt, ok := c.fl.reply(now)
			if !ok {
				c.extra++
				continue
			}
			c.shard.recordRTT(rtt)
		}
	}
}

// reply writes what the protocol answers the host's last message with at
// once (a handshake's reply), as the carrier would.
func (c *call) reply(conn *link) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return conn.write(c.in.ReplyType, c.in.Reply)
}

// maxMarks bounds the marks a call holds for returning.
const maxMarks = 64

// markAck is a mark the host sent and when to return it.
type markAck struct {
	due  time.Duration // since the run's origin
	name string
}

// returnMark queues the host's mark for returning once the audio received
// before it has played, as Twilio does. Marks are rare (one per utterance
// of a bot), so each may allocate.
func (c *call) returnMark(name string, now time.Duration) {
	select {
	case c.marks <- markAck{due: max(now, c.played), name: name}:
	default:
		// More marks outstanding than the queue holds: the host sends them
		// faster than audio plays, which Twilio would return late, too.
		c.marksDropped.Add(1)
	}
}

// returnMarks sends each queued mark back at its time, until the receiver
// ends.
func (c *call) returnMarks(conn *link, done <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var m markAck
		select {
		case m = <-c.marks:
		case <-done:
			return
		}
		if wait := time.Until(c.r.origin.Add(m.due)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-done:
				timer.Stop()
				return
			}
		}
		if c.markPlayed(conn, m.name) != nil {
			return
		}
	}
}

// markPlayed writes the protocol's acknowledgement of the mark name.
func (c *call) markPlayed(conn *link, name string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	typ, msg, ok := c.sess.MarkPlayed(name)
	if !ok {
		return nil
	}
	if err := conn.write(typ, msg); err != nil {
		return err
	}
	c.marksReturned.Add(1)
	return nil
}

// sleepUntil waits for t or the context.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
