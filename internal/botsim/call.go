package botsim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// Reads and writes use context.Background: coder/websocket allocates for
// every operation under a cancellable context, and a call is stopped by
// closing its socket instead.
var bg = context.Background()

// maxExcerpt bounds the text of a message a record keeps.
const maxExcerpt = 4 << 10

// errStopped ends a call's read loop when the host sent its stop message.
var errStopped = errors.New("stopped")

// dialect is the bot's side of one protocol. handle runs on the call's
// reader; the render methods run under call.wmu, which serializes what is
// written to the host.
type dialect interface {
	// open sends what the bot sends as the socket opens.
	open(c *call) error
	// handle acts on one message from the host: it records it, and hands
	// audio to call.received and call.echo.
	handle(c *call, typ websocket.MessageType, msg []byte) error
	// audio renders a chunk of the bot's audio, in the call's format.
	audio(c *call, chunk []byte) (websocket.MessageType, []byte)
	// begin sends what precedes an utterance of speak mode.
	begin(c *call) error
	// end sends what follows it: a mark named name, or the end of a
	// response; cut says it was cut short by a barge-in.
	end(c *call, name string, cut bool) error
	// interrupt sends the bot's barge-in.
	interrupt(c *call) error
}

// narrator is a speech provider's dialect, which says more than audio:
// narrate sends its transcripts of both sides, a tool call and a message
// of an unknown type; wmu is held.
type narrator interface {
	narrate(c *call) error
}

// call is one connection from the host.
type call struct {
	sim   *Sim
	id    int
	conn  *websocket.Conn
	d     dialect
	begun time.Time
	done  chan struct{} // closed when the call ends
	ended atomic.Bool

	recMu sync.Mutex
	rec   Call

	// wmu serializes renders and writes: the reader echoes, the speaker
	// speaks and Interrupt barges in, each through the dialect's buffers.
	wmu sync.Mutex

	startOnce sync.Once
	// The acknowledgement of a speech provider's session set-up: acked once
	// written; with Config.HoldAck, pending until released.
	acked       atomic.Bool
	ackMu       sync.Mutex
	ackReleased bool
	ackPending  func() error
	// utterance counts barge-ins: an utterance whose count changed while
	// it was being sent is cut short.
	utterance   atomic.Int64
	interrupted bool // InterruptAfter has fired; the reader's alone

	// The delayed echo's queue and the buffers it recycles.
	queue chan delayed
	free  chan []byte
}

// delayed is a frame of echo mode waiting for its time.
type delayed struct {
	due   time.Time
	audio []byte
}

// echoQueue bounds the frames a delayed echo holds: a second of delay at
// 50 frames per second is 50; a host sending faster than real time than
// this many frames ahead is held back by the socket.
const echoQueue = 1024

func (s *Sim) serve(w http.ResponseWriter, r *http.Request, protocol string) {
	if protocol == ProtocolElevenLabs && !s.elevenAuthorized(w, r) {
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	conn.SetReadLimit(int64(s.cfg.MaxMessage))
	c := &call{sim: s, conn: conn, begun: time.Now(), done: make(chan struct{})}
	c.rec = Call{Protocol: protocol, URL: r.URL.RequestURI(), Header: r.Header.Clone(), Begun: c.begun, Live: true,
		Format: codec.Telephony, InputFormat: codec.Telephony}
	switch protocol {
	case ProtocolTwilio:
		c.d = newTwilioBot()
	case ProtocolRaw:
		c.d = newRawBot(s.cfg.MaxMessage)
	case ProtocolElevenLabs:
		e := newElevenBot(r)
		c.d = e
		c.rec.Format, c.rec.InputFormat = e.format, e.format
	case ProtocolDeepgram:
		c.d = &deepgramBot{}
	case ProtocolGemini:
		c.d = &geminiBot{}
		c.rec.Format, c.rec.InputFormat = geminiOut, geminiIn
	default:
		c.d = newOpenAIBot(r)
		c.rec.Format, c.rec.InputFormat = openAIDefault, openAIDefault
	}
	s.add(c)
	if s.cfg.Mode == Echo && s.cfg.Delay > 0 {
		c.queue, c.free = make(chan delayed, echoQueue), make(chan []byte, echoQueue)
		go c.delayedEcho()
	}
	c.finish(c.run())
}

// run reads the host's messages until the call ends and says why.
func (c *call) run() error {
	c.wmu.Lock()
	err := c.d.open(c)
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 1024)
	for {
		typ, msg, err := readMessage(c.conn, buf)
		if err != nil {
			return err
		}
		buf = msg[:0]
		if capture := c.sim.cfg.Capture; capture != nil {
			capture(c.rec.Protocol, typ == websocket.MessageBinary, msg)
		}
		if err := c.d.handle(c, typ, msg); err != nil {
			return err
		}
	}
}

// readMessage reads one message into buf, growing it as needed; the
// socket's read limit bounds it.
func readMessage(conn *websocket.Conn, buf []byte) (websocket.MessageType, []byte, error) {
	typ, rd, err := conn.Reader(bg)
	if err != nil {
		return 0, nil, err
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return typ, buf, nil
		}
		if err != nil {
			return 0, nil, err
		}
	}
}

// finish ends the call for the reason err and records it. The record
// says the call ended before the closing handshake, which waits for the
// host to read.
func (c *call) finish(err error) {
	var pe *transport.ProtocolError
	status := websocket.StatusCode(-1)
	switch {
	case errors.Is(err, errStopped):
		// The host ended the stream in order; a bot hangs up then.
		status, err = websocket.StatusNormalClosure, nil
	case errors.As(err, &pe):
		status = websocket.StatusPolicyViolation
	default:
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway:
			err = nil
		}
	}
	c.ended.Store(true)
	close(c.done)
	c.record(func(r *Call) {
		r.Live = false
		if err != nil {
			r.Err = err.Error()
		}
	})
	c.sim.ended()
	if f := c.sim.cfg.OnEnd; f != nil {
		f(c.snapshot())
	}
	if status < 0 {
		_ = c.conn.CloseNow()
		return
	}
	reason := ""
	if err != nil {
		reason = truncate(err.Error(), 120)
	}
	c.wmu.Lock() // no write may be under way: a close frame is a write
	defer c.wmu.Unlock()
	_ = c.conn.Close(status, reason)
}

// record changes the call's record under its lock and wakes waiters.
func (c *call) record(f func(r *Call)) {
	c.recMu.Lock()
	f(&c.rec)
	c.recMu.Unlock()
	c.sim.touch()
}

// event records a message other than audio.
func (c *call) event(typ, value string, f func(r *Call)) {
	at := time.Since(c.begun)
	c.record(func(r *Call) {
		r.Events = appendCapped(c, r, r.Events, Event{At: at, Type: typ, Value: truncate(value, 200)})
		if f != nil {
			f(r)
		}
	})
}

// appendCapped appends v to list unless list is full, which r counts.
func appendCapped[T any](c *call, r *Call, list []T, v T) []T {
	if len(list) >= c.sim.cfg.RecordItems {
		r.Dropped++
		return list
	}
	return append(list, v)
}

// snapshot copies the record.
func (c *call) snapshot() Call {
	c.recMu.Lock()
	defer c.recMu.Unlock()
	r := c.rec
	r.Audio = slices.Clone(r.Audio)
	r.MarksSent = slices.Clone(r.MarksSent)
	r.MarksAcked = slices.Clone(r.MarksAcked)
	r.Sessions = slices.Clone(r.Sessions)
	r.Truncates = slices.Clone(r.Truncates)
	r.Events = slices.Clone(r.Events)
	if r.Start != nil {
		st := *r.Start
		r.Start = &st
	}
	return r
}

// outFormat is the format the bot answers in.
func (c *call) outFormat() codec.Format {
	c.recMu.Lock()
	defer c.recMu.Unlock()
	return c.rec.Format
}

// started marks the stream described: the host sends audio in in, the
// bot answers in out. The first time, speak mode starts speaking.
func (c *call) started(msg []byte, in, out codec.Format) {
	c.record(func(r *Call) {
		r.Format, r.InputFormat = out, in
		if r.StartMessage == "" {
			r.StartMessage = truncate(string(msg), maxExcerpt)
		}
	})
	c.startOnce.Do(func() {
		if c.sim.cfg.Mode == Speak {
			go c.speak()
		}
	})
}

// received records audio from the host, in the call's input format, and
// barges in once Config.InterruptAfter of it has arrived.
func (c *call) received(audio []byte, f codec.Format) {
	var total int64
	c.record(func(r *Call) {
		r.AudioIn += int64(len(audio))
		r.AudioMessages++
		if room := c.sim.cfg.RecordAudio - len(r.Audio); room > 0 {
			r.Audio = append(r.Audio, audio[:min(room, len(audio))]...)
		}
		total = r.AudioIn
	})
	after := c.sim.cfg.InterruptAfter
	if !c.interrupted && after > 0 && time.Duration(total/int64(f.BytesPerMs()))*time.Millisecond >= after {
		c.interrupted = true
		_ = c.interrupt()
	}
}

// echo sends audio back in echo mode, at once or after the delay.
func (c *call) echo(audio []byte) error {
	cfg := &c.sim.cfg
	if cfg.Mode != Echo {
		return nil
	}
	if cfg.Delay == 0 {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.sendAudio(audio)
	}
	var buf []byte
	select {
	case buf = <-c.free:
	default:
	}
	select {
	case c.queue <- delayed{due: time.Now().Add(cfg.Delay), audio: append(buf[:0], audio...)}:
	case <-c.done:
	}
	return nil
}

// delayedEcho sends the queued frames at their time. Every frame waits the
// same delay, so they fall due in the order they came.
func (c *call) delayedEcho() {
	for {
		var d delayed
		select {
		case d = <-c.queue:
		case <-c.done:
			return
		}
		if wait := time.Until(d.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.done:
				t.Stop()
				return
			}
		}
		c.wmu.Lock()
		err := c.sendAudio(d.audio)
		c.wmu.Unlock()
		if err != nil {
			return
		}
		select {
		case c.free <- d.audio:
		default:
		}
	}
}

// sendAudio renders and writes a chunk of the bot's audio; wmu is held.
// The chunk is counted before the write, not after it: once it is on the
// wire the host may answer it (play it, acknowledge a mark after it, hang
// up) and a test that waits for that answer must find the chunk already
// in the record. A write that fails takes it back out.
func (c *call) sendAudio(chunk []byte) error {
	typ, msg := c.d.audio(c, chunk)
	c.record(func(r *Call) { r.AudioOut += int64(len(chunk)) })
	if err := c.write(typ, msg); err != nil {
		c.record(func(r *Call) { r.AudioOut -= int64(len(chunk)) })
		return err
	}
	return nil
}

// write writes one message; wmu is held. A failed write ends the call:
// the reader sees the closed socket.
func (c *call) write(typ websocket.MessageType, msg []byte) error {
	if err := c.conn.Write(bg, typ, msg); err != nil {
		_ = c.conn.CloseNow()
		return err
	}
	return nil
}

// writeJSON writes v as a text message; wmu is held. For the rare
// messages that need no buffer of their own.
func (c *call) writeJSON(v any) error {
	msg, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.write(websocket.MessageText, msg)
}

// acknowledge sends a speech provider's acknowledgement of the session
// set-up through send, under wmu, now or, with Config.HoldAck, once
// Sim.Acknowledge releases it.
func (c *call) acknowledge(send func() error) error {
	c.ackMu.Lock()
	if c.sim.cfg.HoldAck && !c.ackReleased {
		c.ackPending = send
		c.ackMu.Unlock()
		return nil
	}
	c.ackMu.Unlock()
	return c.sendAck(send)
}

// release lets the acknowledgement go, the pending one now.
func (c *call) release() error {
	c.ackMu.Lock()
	c.ackReleased = true
	send := c.ackPending
	c.ackPending = nil
	c.ackMu.Unlock()
	if send == nil {
		return nil
	}
	return c.sendAck(send)
}

// sendAck sends the acknowledgement. Audio is taken from the moment it is
// sent, before the write returns: a client that waited for it answers as
// soon as it arrives, perhaps before this goroutine runs again.
func (c *call) sendAck(send func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.acked.Store(true)
	if err := send(); err != nil {
		return err
	}
	c.record(func(r *Call) { r.Acknowledged = true })
	return nil
}

// interrupt barges in: the utterance being spoken stops and the dialect
// says so.
func (c *call) interrupt() error {
	if c.ended.Load() {
		return errors.New("botsim: the call has ended")
	}
	c.utterance.Add(1)
	c.record(func(r *Call) { r.Interrupts++ })
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.d.interrupt(c)
}

// speak sends the recording now and, with Config.Repeat, again and again.
func (c *call) speak() {
	cfg := &c.sim.cfg
	for {
		t0 := time.Now()
		if err := c.utter(); err != nil || cfg.Repeat <= 0 {
			return
		}
		if !c.sleepUntil(t0.Add(cfg.Repeat)) {
			return
		}
	}
}

// utter sends the recording once, in chunks, paced by Config.Speed, and
// ends it with the dialect's end; a barge-in cuts it short.
func (c *call) utter() error {
	cfg := &c.sim.cfg
	f := c.outFormat()
	audio, name := c.sim.speechIn(f)
	chunk := int(cfg.Chunk/time.Millisecond) * f.BytesPerMs()
	n := c.utterance.Load()
	c.wmu.Lock()
	err := c.d.begin(c)
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	t0 := time.Now()
	cut := false
	for off := 0; off < len(audio); off += chunk {
		if cfg.Speed > 0 {
			at := time.Duration(float64(off/f.BytesPerMs()) * float64(time.Millisecond) / cfg.Speed)
			if !c.sleepUntil(t0.Add(at)) {
				return errors.New("ended")
			}
		}
		c.wmu.Lock()
		if c.utterance.Load() != n {
			c.wmu.Unlock()
			cut = true
			break
		}
		err := c.sendAudio(audio[off:min(off+chunk, len(audio))])
		c.wmu.Unlock()
		if err != nil {
			return err
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.d.end(c, name, cut)
}

// sleepUntil waits for t and reports whether the call is still on.
func (c *call) sleepUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return !c.ended.Load()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-c.done:
		return false
	}
}

// eventName reads the "event" (or OpenAI's "type") member of a text
// message the sessions do not decode; "" when there is none.
func eventName(msg []byte) string {
	var m struct {
		Event string `json:"event"`
		Type  string `json:"type"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return ""
	}
	if m.Event != "" {
		return m.Event
	}
	return m.Type
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
