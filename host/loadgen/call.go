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

	// What the receiver alone touches. owed is the audio received towards
	// the next frame's answer; played is when the audio received so far
	// ends, played out as a Twilio caller plays it (from when it arrives,
	// one after another), which is when Twilio returns a mark sent after
	// it.
	owed   int
	played time.Duration
	// marks carries the host's marks to returnMarks (Twilio only), with
	// the time each is due back; markHead is the returned mark message up
	// to the name.
	marks         chan markAck
	markHead      []byte
	marksReturned atomic.Int64
	marksDropped  atomic.Int64

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
// or the socket closes, and records each frame's round trip.
//
// A frame is answered by its length of audio, not by a message: a relayed
// call's audio comes back cut and paced by the host's playout clock, in
// messages that need not match the frames sent, and the k-th frame is
// answered when the audio received adds up to k+1 frames. Nothing in the
// audio says which frame it was: the route's plugins (a gain, an AGC)
// change every sample, so a nonce would not survive them, while the order
// and the length of the audio do.
func (c *call) receive(conn *websocket.Conn, done chan<- struct{}) {
	defer close(done)
	for c.fl.received.Load() < c.r.frames {
		typ, n, size, err := readMessage(conn, c.buf)
		if err != nil {
			if !c.closing.Load() {
				c.readErr = err
			}
			return
		}
		now := time.Since(c.r.origin)
		msg := c.buf[:n]
		audio := c.audioBytes(typ, msg, size)
		if audio == 0 {
			if c.marks != nil && typ == websocket.MessageText && twilioEvent(msg, "mark") {
				c.returnMark(msg, now)
			}
			continue
		}
		c.played = max(c.played, now) + time.Duration(audio)*time.Second/ulawRate
		for c.owed += audio; c.owed >= FrameBytes; c.owed -= FrameBytes {
			rtt, ok := c.fl.reply(now)
			if !ok {
				c.extra++
				continue
			}
			c.shard.recordRTT(rtt)
		}
	}
}

// readMessage reads one message into buf and returns its type, the bytes
// kept (at most len(buf)) and its whole length. Of a longer message the
// head is kept and the rest read over buf's second half, since a reply is
// told apart by its head.
func readMessage(conn *websocket.Conn, buf []byte) (typ websocket.MessageType, n, size int, err error) {
	typ, rd, err := conn.Reader(bg)
	if err != nil {
		return 0, 0, 0, err
	}
	for {
		dst := buf[n:]
		if len(dst) == 0 {
			dst = buf[len(buf)/2:]
		}
		m, err := rd.Read(dst)
		n, size = min(n+m, len(buf)), size+m
		if err == io.EOF {
			return typ, n, size, nil
		}
		if err != nil {
			return 0, 0, 0, err
		}
	}
}

// audioBytes is the μ-law audio a reply carries, 0 for the rest: plugin
// events on raw, marks and clears on Twilio. size is the reply's whole
// length, of which msg is the head.
func (c *call) audioBytes(typ websocket.MessageType, msg []byte, size int) int {
	if c.r.cfg.Protocol == ProtocolRaw {
		if typ != websocket.MessageBinary {
			return 0
		}
		return size
	}
	if typ != websocket.MessageText || !twilioEvent(msg, "media") {
		return 0
	}
	if n, ok := twilioPayloadBytes(msg); ok {
		return n
	}
	return FrameBytes // a payload past the head: count it a frame
}

// twilioPayloadBytes is the length of a media message's decoded payload,
// counted from its base64 text without decoding it; false if the payload
// does not end within msg.
func twilioPayloadBytes(msg []byte) (int, bool) {
	rest := memberValue(msg, `"payload"`)
	if len(rest) == 0 || rest[0] != '"' {
		return 0, false
	}
	end := bytes.IndexByte(rest[1:], '"')
	if end < 0 {
		return 0, false
	}
	b64 := rest[1 : 1+end]
	// An escaped solidus (\/) is one character of base64; base64 has no
	// other character JSON escapes.
	chars := len(b64) - bytes.Count(b64, []byte{'\\'})
	pad := 0
	for j := len(b64) - 1; j >= 0 && b64[j] == '=' && pad < 2; j-- {
		pad++
	}
	return chars/4*3 - pad, true
}

// maxMarks bounds the marks a Twilio call holds for returning.
const maxMarks = 64

// ulawRate is the sample rate of the μ-law both protocols carry, in Hz.
const ulawRate = 8000

// markAck is a mark the host sent a Twilio call and when to return it.
type markAck struct {
	due  time.Duration // since the run's origin
	name []byte        // the name's JSON string token, quoted
}

// returnMark queues the host's mark msg for returning once the audio
// received before it has played, as Twilio does. Marks are rare (one per
// utterance of a bot), so each may allocate.
func (c *call) returnMark(msg []byte, now time.Duration) {
	name, ok := twilioMarkName(msg)
	if !ok {
		return
	}
	select {
	case c.marks <- markAck{due: max(now, c.played), name: bytes.Clone(name)}:
	default:
		// More marks outstanding than the queue holds: the host sends them
		// faster than audio plays, which Twilio would return late, too.
		c.marksDropped.Add(1)
	}
}

// returnMarks sends each queued mark back at its time, until the receiver
// ends.
func (c *call) returnMarks(conn *websocket.Conn, done <-chan struct{}) {
	var msg []byte
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
		msg = append(append(append(msg[:0], c.markHead...), m.name...), "}}"...)
		if conn.Write(bg, websocket.MessageText, msg) != nil {
			return
		}
		c.marksReturned.Add(1)
	}
}

// twilioMarkName returns the JSON string token of a mark message's
// mark.name, quotes and escapes as sent.
func twilioMarkName(msg []byte) ([]byte, bool) {
	rest := memberValue(msg, `"name"`)
	if len(rest) == 0 || rest[0] != '"' {
		return nil, false
	}
	for j := 1; j < len(rest); j++ {
		switch rest[j] {
		case '\\':
			j++
		case '"':
			return rest[:j+1], true
		}
	}
	return nil, false
}

// twilioEvent reports whether msg's "event" member is the string event,
// without decoding the message: a media reply is read on every frame.
func twilioEvent(msg []byte, event string) bool {
	rest := memberValue(msg, `"event"`)
	return len(rest) > len(event)+1 && rest[0] == '"' && string(rest[1:1+len(event)]) == event && rest[1+len(event)] == '"'
}

// memberValue returns what follows the first member named key (quoted)
// in msg and its colon, from the value on; nil if there is none. It reads
// the few members a reply is told by without decoding it, which the
// receiver does for every frame; a key inside a string value would fool
// it, and no message the host sends has one.
func memberValue(msg []byte, key string) []byte {
	i := bytes.Index(msg, []byte(key))
	if i < 0 {
		return nil
	}
	rest := bytes.TrimLeft(msg[i+len(key):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return nil
	}
	return bytes.TrimLeft(rest[1:], " \t\r\n")
}

// twilioMessages renders the messages of call n of a run: connected and
// start, which open the stream, the media message sent as every frame,
// and the head of a returned mark, up to its name. Twilio's docs give their shape; the same media message (same
// sequence number, chunk and payload) serves every frame, since a server
// has no reason to check them and rendering each would cost the
// generator an allocation per frame.
func twilioMessages(nonce int64, n int, pipeline string, frame []byte) (open [][]byte, media, markHead []byte) {
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
	markHead = fmt.Appendf(nil, `{"event":"mark","sequenceNumber":"3","streamSid":%q,"mark":{"name":`, sid)
	return open, media, markHead
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
