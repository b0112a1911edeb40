package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/sched"
)

// call is one live call. Its caller leg (the socket a carrier or client
// opened, its protocol session) is read by the goroutine that serves the
// request, which runs the inbound pipeline; a relayed call also has a bot
// leg (bot.go) with a goroutine reading the bot and one pacing the caller's
// playout (playout.go).
type call struct {
	s     *Server
	conn  legConn
	proto transport.Protocol
	sess  transport.Session
	log   *slog.Logger

	id           string
	pipelineName string
	params       map[string]string
	route        *Route
	// in and out are the inbound and outbound pipelines; out is nil when
	// the route has no outbound stages.
	in, out *pipeline.Pipeline
	// cpu is the call's account and leases in the server's scheduler,
	// from when its route is known.
	cpu *callCPU
	// cpuLive holds cpu too, for the sampler, which does not run the call.
	cpuLive atomic.Pointer[callCPU]
	// bot is the bot leg; nil for an echo. It is set while the call
	// starts, before the bot reader and the playout exist; botLive holds
	// it too, for the goroutines that do not run the call (the watchdog,
	// and whoever ends it).
	bot     *botLeg
	botLive atomic.Pointer[botLeg]

	// format is the caller leg's audio, known once the stream starts.
	format codec.Format
	// maxFrameMs is the longest frame of the call: the server's limit, or
	// more for a protocol whose carrier sends longer (transport.FrameFloor).
	maxFrameMs int
	// orderedReplies says replies are decoded and written under callerMu
	// (transport.OrderedReplies).
	orderedReplies bool
	// callerPaused is set while the caller has paused its audio (Genesys's
	// hold): the watchdog does not count it idle meanwhile.
	callerPaused atomic.Bool
	readBuf      []byte
	frameOut     []byte // a frame for the caller, in its format
	// far is the far-end reference, for an inbound pipeline that asks for
	// it (ABI §11) or a recording of it, and farFrame the reference of one
	// caller frame; nil otherwise.
	far      *farEnd
	farFrame []byte
	src      codec.Source
	pcmSrc   pipeline.PCM
	msg      transport.Inbound
	inEvents eventQueue
	// outEvents are the outbound pipeline's, drained by whoever runs it:
	// this goroutine in an echo, the bot reader in a relay.
	outEvents eventQueue
	// rec records the call; nil when its route records nothing.
	rec *recording.Recorder
	// taps are the viewers the call feeds its frames to (tap.go), nil
	// while there are none; tapMu serializes their changes.
	taps  atomic.Pointer[[]*Tap]
	tapMu sync.Mutex

	// callerMu serializes what is rendered for and written to the caller:
	// in a relay three goroutines write to it (frames from the playout,
	// clears and events from the others), and a session renders into one
	// buffer.
	callerMu     sync.Mutex
	callerWrites writeGauge

	framesIn, framesOut prometheus.Counter
	// frameTimer times the caller's frames: voxhost_frame_processing_seconds
	// in an echo, the inbound voxhost_relay_frame_seconds in a relay.
	frameTimer frameTimer

	// frames counts the caller's audio frames; the watchdog reads it to
	// tell an idle caller, so the frame path reads no clock for it.
	frames atomic.Uint64
	// view is what Calls shows once the stream started; summaryID is the
	// call's id when it came in (the start message may rename it).
	view      atomic.Pointer[callView]
	summaryID string
	audioMs   int64
	started   time.Time
	watch     *watchdog

	// done is closed when the call ends; the relay's goroutines watch it.
	done    chan struct{}
	workers sync.WaitGroup

	endOnce sync.Once
	outcome string
	reason  string

	// setupHeld says the call holds a set-up slot: from before the
	// upgrade (raw) or the start message (Twilio) until its pipelines are
	// built.
	setupHeld bool
	// setupFrom is when the call took its set-up slot.
	setupFrom time.Time
}

// ctx is the context of every socket read and write. It never ends: a
// context that can end costs an allocation per call in coder/websocket, so
// timeouts close the socket from the watchdog instead.
var ctx = context.Background()

// newCall makes a call of proto from the query and the remote address it
// came with; its conn is set once the connection is up. An error is a
// query the protocol cannot start a stream from.
func (s *Server) newCall(proto transport.Protocol, pipelineName string, query url.Values, remote string) (*call, error) {
	maxFrameMs := s.opts.MaxFrameMs
	if ff, ok := proto.(transport.FrameFloor); ok {
		maxFrameMs = max(maxFrameMs, ff.MinFrameMs())
	}
	sess, err := proto.NewSession(transport.SessionConfig{MaxFrameMs: maxFrameMs, Query: query})
	if err != nil {
		return nil, err
	}
	or, _ := proto.(transport.OrderedReplies)
	c := &call{
		maxFrameMs:     maxFrameMs,
		orderedReplies: or != nil && or.RepliesInOrder(),
		s:              s,
		proto:          proto,
		sess:           sess,
		id:             fmt.Sprintf("%s-%d", proto.Name(), s.nextID.Add(1)),
		pipelineName:   pipelineName,
		readBuf:        make([]byte, min(initialReadBuffer, s.opts.MaxMessageBytes+1)),
		started:        time.Now(),
		done:           make(chan struct{}),
		framesIn:       s.metrics.framesIn.WithLabelValues(proto.Name()),
		framesOut:      s.metrics.framesOut.WithLabelValues(proto.Name()),
	}
	if id := query.Get("call_id"); id != "" {
		c.id = id // handleCall has refused one that breaks transport.CheckID
	}
	c.summaryID = c.id
	if proto.StartsOnConnect() {
		// A protocol without a start message carries the call's custom
		// parameters in its URL (handleCall bounded them).
		c.params = queryParams(query)
	}
	c.log = s.log.With("call", c.id, "protocol", proto.Name(), "remote", remote)
	return c, nil
}

// run is the caller's loop: it reads, runs the inbound pipeline and sends
// the result on (to the caller in an echo, to the bot in a relay).
func (c *call) run() {
	c.watch = startWatchdog(c)
	defer c.finish()

	if c.proto.StartsOnConnect() {
		if err := c.start(nil); err != nil {
			return
		}
	}
	for {
		typ, msg, err := c.conn.read(&c.readBuf, c.s.opts.MaxMessageBytes)
		if err != nil {
			c.readFailed(err)
			return
		}
		t0 := c.frameTimer.start()
		if !c.decode(typ, msg) {
			return
		}
		if !c.handle(t0) {
			return
		}
	}
}

// decode decodes one message from the caller and writes the reply the
// protocol answers it with, if any; false ends the call. Where replies are
// numbered, both happen under callerMu, so that no message rendered on
// another goroutine can come between.
func (c *call) decode(typ transport.MessageType, msg []byte) bool {
	if c.orderedReplies {
		c.callerMu.Lock()
	}
	err := c.sess.Decode(typ, msg, &c.msg)
	ok := err == nil
	if ok && c.msg.Reply != nil {
		if c.orderedReplies {
			ok = c.writeCallerLocked(c.msg.ReplyType, c.msg.Reply)
		} else {
			ok = c.writeCaller(c.msg.ReplyType, c.msg.Reply)
		}
	}
	if c.orderedReplies {
		c.callerMu.Unlock()
	}
	if err != nil {
		c.malformed(err)
	}
	return ok
}

// detected switches the call to the protocol an auto-detecting session
// recognised: what the call asks of its protocol from now on (pacing,
// marks, chunks) and its labels are the carrier's.
func (c *call) detected() {
	d, ok := c.sess.(transport.Detector)
	if !ok || d.Detected() == nil {
		return
	}
	p := d.Detected()
	c.proto = p
	c.framesIn = c.s.metrics.framesIn.WithLabelValues(p.Name())
	c.framesOut = c.s.metrics.framesOut.WithLabelValues(p.Name())
	c.log = c.log.With("protocol", p.Name())
}

// handle acts on one decoded message read at t0 (zero when the message
// is not timed); false ends the call.
func (c *call) handle(t0 time.Time) bool {
	switch c.msg.Kind {
	case transport.KindAudio:
		return c.frame(t0)
	case transport.KindStart:
		if c.in != nil {
			c.end(websocket.StatusPolicyViolation, "a second start message on one stream", "malformed")
			return false
		}
		c.detected()
		return c.start(c.msg.Start) == nil
	case transport.KindDTMF:
		if c.in == nil {
			return true
		}
		c.cpu.in.Acquire(sched.Now() + int64(c.s.rt.deadline))
		err := c.in.Event(abi.EventDTMF, int32(c.msg.Digit), nil)
		c.cpu.in.Release()
		if err != nil {
			c.pluginFailed(err)
			return false
		}
		if b := c.bot; b != nil {
			if typ, msg, ok := b.sess.DTMF(c.msg.Digit); ok && !b.write(typ, msg) {
				return false
			}
		}
		return c.flushInbound()
	case transport.KindMark:
		if b := c.bot; b != nil {
			// The caller played the audio before one of the bot's marks.
			b.callerPlayed(c.msg.Mark)
			return true
		}
		// An echo answers each frame before reading the next message, so
		// all audio sent before the mark has already gone out.
		if typ, msg, ok := c.sess.Mark(c.msg.Mark); ok {
			return c.writeCaller(typ, msg)
		}
	case transport.KindStop:
		c.stop()
		return false
	case transport.KindError:
		c.log.Warn("the caller reported an error", "error", c.msg.Text)
	case transport.KindPause, transport.KindResume:
		// A caller on hold sends no audio and is not idle. Only a relay
		// queues audio for the caller; an echo answers frame for frame,
		// which a caller's queue keeps up with.
		paused := c.msg.Kind == transport.KindPause
		c.callerPaused.Store(paused)
		if b := c.bot; b != nil {
			b.queue.pause(paused)
		}
	}
	return true
}

// frame runs one caller frame through the inbound pipeline and sends the
// result on.
func (c *call) frame(t0 time.Time) bool {
	if c.in == nil {
		c.malformed(&transport.ProtocolError{Protocol: c.proto.Name(), Reason: "audio before the stream started"})
		return false
	}
	c.framesIn.Inc()
	c.src.Frame = c.msg.Audio
	rt, lease := c.s.rt, c.cpu.in
	now := sched.Now()
	deadline := now + int64(rt.deadline)
	lease.AcquireAt(now, deadline)
	var ref []byte
	if c.far != nil {
		ref = c.farFrame[:min(len(c.msg.Audio)/c.format.SampleBytes()*abi.SampleBytes, len(c.farFrame))]
		c.far.next(ref)
		c.in.SetReference(ref)
	}
	pcm, err := c.in.Process(&c.src)
	if err != nil {
		lease.Release()
		c.pluginFailed(err)
		return false
	}
	c.frames.Add(1)
	c.audioMs += int64(len(c.msg.Audio) / c.format.BytesPerMs())
	c.rec.Caller(c.msg.Audio, ref)
	c.rec.Processed(pcm)
	c.tap(c.msg.Audio, ref, pcm)
	if b := c.bot; b != nil {
		lease.Release()
		ok := b.sendAudio(pcm)
		c.frameTimer.done(t0)
		rt.onTime(deadline, rt.lateIn)
		if !ok || !c.inEvents.empty() && !c.flushInbound() {
			return false
		}
		return c.overQuota(c.in)
	}
	if c.out != nil && len(pcm) > 0 {
		c.pcmSrc.Frame = pcm
		if pcm, err = c.out.Process(&c.pcmSrc); err != nil {
			lease.Release()
			c.outboundFailed(err)
			return false
		}
	}
	lease.Release()
	n := c.format.Encode(c.frameOut, pcm)
	c.frameTimer.done(t0)
	if !c.inEvents.empty() && !c.flushInbound() || !c.outEvents.empty() && !c.flushOutbound() {
		return false
	}
	if n > 0 { // else a plugin swallowed the frame
		if !c.sendCallerAudio(c.frameOut[:n]) {
			return false
		}
		if c.far != nil {
			c.far.wrotePCM(pcm)
		}
		c.framesOut.Inc()
	}
	rt.onTime(deadline, rt.lateIn)
	return c.overQuota(c.in, c.out)
}

// sendCallerAudio renders and writes a frame to the caller.
func (c *call) sendCallerAudio(frame []byte) bool {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	typ, msg := c.sess.Audio(frame)
	if !c.writeCallerLocked(typ, msg) {
		return false
	}
	c.rec.Heard(frame)
	return true
}

// readMessage reads one whole message into *buf, growing it up to limit
// bytes; a longer message is errTooBig.
func readMessage(conn *websocket.Conn, buf *[]byte, limit int) (websocket.MessageType, []byte, error) {
	typ, r, err := conn.Reader(ctx)
	if err != nil {
		return 0, nil, err
	}
	b := *buf
	n := 0
	for {
		m, err := r.Read(b[n:])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, err
		}
		if n == len(b) {
			// One byte past the limit means too big; below it, grow. Calls
			// that send 20 ms frames never get here, so they keep a few KiB.
			if n > limit {
				return 0, nil, errTooBig
			}
			b = append(b, make([]byte, min(n, limit+1-n))...)
			*buf = b
		}
	}
	return typ, b[:n], nil
}

var errTooBig = errors.New("message too big")

// initialReadBuffer holds a 20 ms frame of every protocol in its default
// codec, and of L16 up to 24 kHz, binary or base64 in JSON (a Twilio media
// message of 160 bytes of audio is about 420 bytes, 20 ms of 24 kHz L16 in
// base64 about 1,450); a longer message grows it once.
const initialReadBuffer = 1536

// writeCaller writes one message to the caller.
func (c *call) writeCaller(typ transport.MessageType, msg []byte) bool {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	return c.writeCallerLocked(typ, msg)
}

// writeCallerLocked writes one message to the caller; callerMu is held.
func (c *call) writeCallerLocked(typ transport.MessageType, msg []byte) bool {
	c.callerWrites.begin()
	err := c.conn.write(typ, msg)
	c.callerWrites.end()
	if err != nil {
		c.end(websocket.StatusAbnormalClosure, "", "write_failed")
		return false
	}
	return true
}
