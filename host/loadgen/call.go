package loadgen

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Reads and writes use context.Background: coder/websocket allocates for
// every operation under a cancellable context, and a call is stopped by
// closing its socket instead.
var bg = context.Background()

// call is one simulated call: a socket, a sender on the call's schedule and
// a receiver matching replies to frames.
type call struct {
	r     *runner
	index int
	shard *shard
	fl    flight
	typ   websocket.MessageType
	msg   []byte   // the frame message, rendered once
	open  [][]byte // messages that start the stream (Twilio), before any frame
	buf   []byte   // the receiver's message buffer

	conn    atomic.Pointer[websocket.Conn] // for the run's abort
	closing atomic.Bool                    // set before we close the socket, so its error is ours

	connect   time.Duration // time to open the connection
	connected bool
	sent      int64 // frames written
	err       error // why the call failed: no connection, or its socket broke
	readErr   error // the receiver's, read after it has finished
	extra     int64 // audio replies beyond the frames sent
}

// run is the call's whole life: dial at its slot, send every frame on
// schedule, wait the grace period for the last replies, close.
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
		_ = conn.CloseNow()
		c.err = ctx.Err()
		return
	}
	for _, m := range c.open {
		if err := conn.Write(bg, websocket.MessageText, m); err != nil {
			c.closing.Store(true)
			_ = conn.CloseNow()
			c.err = fmt.Errorf("start: %w", err)
			return
		}
	}
	c.fl.first = r.firstSlot(c.index, time.Since(r.origin))
	done := make(chan struct{})
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
	case <-done: // every frame answered, or the socket broke
		_ = conn.Close(websocket.StatusNormalClosure, "")
	default:
		// Replies are overdue: the frames count as failed, the connection
		// does not.
		_ = conn.CloseNow()
		<-done
	}
	// The receiver's error says more: a close frame's status and reason,
	// where the sender only sees a closed socket.
	c.err = cmp.Or(c.readErr, sendErr)
}

// send writes the call's frames on its schedule: frame k goes at
// first+k×period however the replies fare. A sender that falls behind (a
// busy machine, a socket that blocked) sends the frames it owes at once,
// as a network delivers a burst after a stall.
func (c *call) send(conn *websocket.Conn) error {
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
		if err := conn.Write(bg, c.typ, c.msg); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		c.sent++
	}
	return nil
}

// receive reads replies until every frame the call will send is answered
// or the socket closes, and records each audio reply's round trip.
func (c *call) receive(conn *websocket.Conn, done chan<- struct{}) {
	defer close(done)
	for c.fl.received.Load() < c.r.frames {
		typ, n, err := readMessage(conn, c.buf)
		if err != nil {
			if !c.closing.Load() {
				c.readErr = err
			}
			return
		}
		now := time.Since(c.r.origin)
		if !c.isAudio(typ, c.buf[:n]) {
			continue
		}
		rtt, ok := c.fl.reply(now)
		if !ok {
			c.extra++
			continue
		}
		c.shard.recordRTT(rtt)
	}
}

// readMessage reads one message into buf and returns its type and length,
// at most len(buf). Of a longer message the head is kept and the rest read
// over buf's second half, since a reply is told apart by its head.
func readMessage(conn *websocket.Conn, buf []byte) (websocket.MessageType, int, error) {
	typ, rd, err := conn.Reader(bg)
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for {
		dst := buf[n:]
		if len(dst) == 0 {
			dst = buf[len(buf)/2:]
		}
		m, err := rd.Read(dst)
		n = min(n+m, len(buf))
		if err == io.EOF {
			return typ, n, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}

// isAudio tells an audio reply from the rest: plugin events on raw,
// marks and clears on Twilio.
func (c *call) isAudio(typ websocket.MessageType, msg []byte) bool {
	if c.r.cfg.Protocol == ProtocolRaw {
		return typ == websocket.MessageBinary
	}
	return typ == websocket.MessageText && twilioEvent(msg, "media")
}

// twilioEvent reports whether msg's "event" member is the string event,
// without decoding the message: a media reply is read on every frame.
func twilioEvent(msg []byte, event string) bool {
	i := bytes.Index(msg, []byte(`"event"`))
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(msg[i+len(`"event"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	return len(rest) > len(event)+1 && rest[0] == '"' && string(rest[1:1+len(event)]) == event && rest[1+len(event)] == '"'
}

// twilioMessages renders the messages of call n of a run: connected and
// start, which open the stream, and the media message sent as every
// frame. Twilio's docs give their shape; the same media message (same
// sequence number, chunk and payload) serves every frame, since a server
// has no reason to check them and rendering each would cost the
// generator an allocation per frame.
func twilioMessages(nonce int64, n int, pipeline string, frame []byte) (open [][]byte, media []byte) {
	sid := fmt.Sprintf("MZ%016x%016x", uint64(nonce), n)
	params := "{}"
	if pipeline != "" {
		params = fmt.Sprintf(`{"pipeline":%q}`, pipeline)
	}
	open = [][]byte{
		[]byte(`{"event":"connected","protocol":"Call","version":"1.0.0"}`),
		fmt.Appendf(nil, `{"event":"start","sequenceNumber":"1","start":{"accountSid":"AC%032x","streamSid":%q,"callSid":"CA%016x%016x",`+
			`"tracks":["inbound"],"customParameters":%s,"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}},"streamSid":%q}`,
			0, sid, uint64(nonce), n, params, sid),
	}
	media = fmt.Appendf(nil, `{"event":"media","sequenceNumber":"2","media":{"track":"inbound","chunk":"1","timestamp":"0","payload":%q},"streamSid":%q}`,
		base64.StdEncoding.EncodeToString(frame), sid)
	return open, media
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
