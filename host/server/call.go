package server

import (
	"context"
	"encoding/json"
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
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/sched"
)

// pending is an event a plugin emitted during the current frame, sent on
// once the frame is done. Label is its name as voxhost_plugin_events_total
// counts it (see eventLabel).
type pending struct {
	plugin, name, label string
	data                []byte
}

// eventQueue collects what one pipeline's plugins emitted and how they
// failed during a frame. It is the pipeline's plugin.Sink; the goroutine
// that runs the pipeline drains it.
type eventQueue struct {
	events []pending
	faults []pipeline.Fault
}

// Emit implements plugin.Sink: events wait until the frame is done.
func (q *eventQueue) Emit(plugin, name string, data []byte) {
	q.events = append(q.events, pending{plugin: plugin, name: name, label: eventLabel(name), data: data})
}

func (q *eventQueue) fault(f pipeline.Fault) { q.faults = append(q.faults, f) }

func (q *eventQueue) empty() bool { return len(q.events) == 0 && len(q.faults) == 0 }

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
	// it (ABI §11), and farFrame the reference of one caller frame; nil
	// otherwise.
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
	deadline := sched.Now() + int64(rt.deadline)
	lease.Acquire(deadline)
	if c.far != nil {
		ref := c.farFrame[:min(len(c.msg.Audio)/c.format.SampleBytes()*abi.SampleBytes, len(c.farFrame))]
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
	c.rec.Caller(c.msg.Audio)
	c.rec.Processed(pcm)
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

// start instantiates the call's pipelines when the stream starts: at
// connect (raw) or at the start message (Twilio, whose custom parameter
// "pipeline" may pick a route); a relay then dials its bot.
func (c *call) start(start *transport.Start) error {
	name := c.pipelineName
	info := transport.CallInfo{Params: c.params}
	if start != nil {
		if p := start.Params["pipeline"]; p != "" {
			name = p
		}
		if start.CallID != "" {
			// The host's id stays the log's "call"; the caller's own id
			// goes under a key of its own, or a JSON line would carry
			// "call" twice and parsers that keep the last key would log
			// the caller's value alone.
			c.log = c.log.With("caller_call", start.CallID, "stream", start.StreamID)
			c.id = start.CallID
		}
		c.params = start.Params
		info = transport.CallInfo{StreamID: start.StreamID, AccountID: start.AccountID, Params: start.Params}
	}
	c.format = c.sess.Format()
	route, unfit := c.s.route(name, c.format.Rate)
	if route == nil {
		err := fmt.Errorf("unknown pipeline %q", name)
		c.end(websocket.StatusPolicyViolation, err.Error(), "unknown_pipeline")
		return err
	}
	c.route, c.pipelineName = route, route.Name
	if unfit != nil {
		c.log.Warn("route cannot take the caller's audio", "format", c.format.String(), "err", unfit)
		c.end(websocket.StatusUnsupportedData, unfit.Error(), "unsupported_format")
		return unfit
	}
	c.src.Format = c.format
	c.frameOut = make([]byte, c.maxFrameMs*c.format.BytesPerMs())
	info.CallID, info.Route = c.id, route.Name
	if info.StreamID == "" {
		info.StreamID = c.id
	}
	if !c.setupHeld && !c.awaitSetup(nil) {
		c.s.metrics.shed.WithLabelValues(shedSetup).Inc()
		reason := c.s.setupRefusal()
		c.log.Warn("call refused", "reason", reason)
		c.end(websocket.StatusTryAgainLater, reason, "shed")
		return errors.New(reason)
	}
	err := c.instantiate(route)
	c.releaseSetup()
	if err != nil {
		c.log.Error("pipeline failed to start", "pipeline", route.Name, "err", err)
		c.end(websocket.StatusInternalError, "pipeline failed to start", "start_failed")
		return err
	}
	if c.in.WantsReference() {
		c.far = newFarEnd(c.format)
		c.farFrame = make([]byte, c.maxFrameMs*c.format.Rate/1000*abi.SampleBytes)
	}
	c.openRecording()
	frameSeconds := c.s.metrics.frameSeconds.WithLabelValues(route.Name)
	if route.Upstream != nil {
		frameSeconds = c.s.metrics.relayFrame.WithLabelValues(DirectionInbound)
	}
	c.frameTimer = newFrameTimer(c.s.opts.SampleEvery, frameSeconds)
	if u := route.Upstream; u != nil {
		if err := c.connectBot(u, info); err != nil {
			return err
		}
	}
	mode := "echo"
	if c.bot != nil {
		mode = "relay to " + c.bot.u.Dialect.Name()
	}
	c.log.Info("call started", "pipeline", route.Name, "mode", mode)
	c.sample(c.in, DirectionInbound)
	c.sample(c.out, DirectionOutbound)
	v := &callView{route: route.Name, format: c.format.String(), in: c.in, out: c.out}
	if c.bot != nil {
		v.upstream = c.bot.u.Dialect.Name()
	}
	c.view.Store(v)
	if err := c.announce(start, info); err != nil {
		return err
	}
	if c.bot != nil {
		c.bot.run()
	}
	return nil
}

// instantiate makes the route's pipelines for the call: the inbound one
// at the caller's rate, the outbound one at the rate it is fed (the bot
// leg's, or in an echo where the inbound one ends).
func (c *call) instantiate(route *Route) error {
	c.openCPU(route)
	cfg := pipeline.CallConfig{InputRate: c.format.Rate, MaxFrameMs: c.maxFrameMs, Sink: &c.inEvents, Logger: c.log, OnFault: c.inEvents.fault,
		Yield: c.cpu.in}
	p, err := route.Inbound.Instantiate(ctx, cfg)
	if err != nil {
		return err
	}
	c.in = p
	if route.Outbound == nil {
		return nil
	}
	cfg.InputRate = p.OutputRate()
	cfg.Sink, cfg.OnFault = &c.outEvents, c.outEvents.fault
	if route.Upstream != nil {
		cfg.Yield = c.cpu.out // the bot reader runs it; an echo's runs on the caller's goroutine
	}
	c.out, err = route.Outbound.Instantiate(ctx, cfg)
	return err
}

// announce tells the plugins of each pipeline that the call started,
// with the call's metadata.
func (c *call) announce(start *transport.Start, info transport.CallInfo) error {
	meta := map[string]any{"protocol": c.proto.Name(), "call_id": c.id, "pipeline": c.route.Name, "route": c.route.Name}
	if start != nil {
		meta["stream_id"] = start.StreamID
		meta["params"] = start.Params
	} else if len(c.params) > 0 {
		meta["params"] = c.params
	}
	if c.bot != nil {
		meta["upstream"] = c.bot.u.Dialect.Name()
	}
	for _, p := range []struct {
		p         *pipeline.Pipeline
		direction string
		rate      int
	}{{c.in, DirectionInbound, c.format.Rate}, {c.out, DirectionOutbound, c.outRate()}} {
		if p.p == nil {
			continue
		}
		meta["direction"], meta["sample_rate"] = p.direction, p.rate
		js, _ := json.Marshal(meta)
		if err := p.p.Event(abi.EventCallStart, 0, js); err != nil {
			c.pluginFailed(err)
			return err
		}
	}
	if !c.flushInbound() || !c.flushOutbound() {
		return errors.New("write failed")
	}
	return nil
}

// outRate is the rate the outbound pipeline is fed at.
func (c *call) outRate() int {
	if c.out == nil {
		return 0
	}
	return c.out.InputRate()
}

// awaitSetup takes a set-up slot for the call, waiting up to the set-up
// wait or until done is closed, and says whether it got one.
func (c *call) awaitSetup(done <-chan struct{}) bool {
	t0 := time.Now()
	c.setupHeld = c.s.setups.acquire(c.s.opts.SetupWait, done)
	c.s.metrics.setupWait.Observe(time.Since(t0).Seconds())
	return c.setupHeld
}

// releaseSetup gives the call's set-up slot back, if it holds one.
func (c *call) releaseSetup() {
	if c.setupHeld {
		c.setupHeld = false
		c.s.setups.release()
	}
}

// flushInbound sends on what the inbound plugins emitted: a clear is a
// barge-in, other events go to the caller (when its protocol carries them)
// and to the bot.
func (c *call) flushInbound() bool {
	return c.flushEvents(&c.inEvents, func(e *pending) bool {
		if e.name == abi.EmitClear {
			return c.pluginClear()
		}
		if b := c.bot; b != nil {
			if typ, msg, ok := b.sess.Event(e.plugin, e.name, e.data, c.audioMs); ok && !b.write(typ, msg) {
				return false
			}
		}
		return c.callerEvent(e, c.audioMs)
	})
}

// flushOutbound sends on what the outbound plugins emitted: a clear
// empties the playout queue as the bot's would, other events go to the
// caller.
func (c *call) flushOutbound() bool {
	return c.flushEvents(&c.outEvents, func(e *pending) bool {
		if e.name == abi.EmitClear {
			return c.pluginClear()
		}
		tMs := c.audioMs
		if c.bot != nil {
			tMs = c.bot.audioMs
		}
		return c.callerEvent(e, tMs)
	})
}

// pluginClear acts on a plugin's clear, from either direction: a barge-in
// in a relay, the caller protocol's clear in an echo.
func (c *call) pluginClear() bool {
	if c.bot != nil {
		c.bargeIn(bargeInPlugin)
		return true
	}
	return c.renderCaller(c.sess.Clear)
}

// callerEvent sends a plugin event to the caller, at tMs of the audio of
// the plugin's direction, or logs it when the caller's protocol has no
// place for it.
func (c *call) callerEvent(e *pending, tMs int64) bool {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	typ, msg, ok := c.sess.Event(e.plugin, e.name, e.data, tMs)
	if !ok {
		c.log.Debug("plugin event", "plugin", e.plugin, "name", e.name, "data", string(e.data))
		return true
	}
	return c.writeCallerLocked(typ, msg)
}

// renderCaller writes what render makes for the caller, if anything.
func (c *call) renderCaller(render func() (transport.MessageType, []byte, bool)) bool {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	typ, msg, ok := render()
	if !ok {
		return true
	}
	return c.writeCallerLocked(typ, msg)
}

// flushEvents reports q's faults (metrics, a log line and a plugin_error
// event) and hands every event to send.
func (c *call) flushEvents(q *eventQueue, send func(*pending) bool) bool {
	for _, f := range q.faults {
		kind := "error"
		var perr *plugin.Error
		if errors.As(f.Err, &perr) {
			kind = perr.Kind.String()
		}
		c.s.metrics.pluginErrors.WithLabelValues(f.Name, kind).Inc()
		action := "bypassed for the rest of the call"
		if !f.Bypassed {
			action = "call ended"
		}
		c.log.Warn("plugin failed", "plugin", f.Name, "kind", kind, "action", action, "err", f.Err)
		data, _ := json.Marshal(map[string]string{"error": f.Err.Error(), "action": action})
		q.events = append(q.events, pending{plugin: f.Name, name: faultEvent, label: faultEvent, data: data})
	}
	q.faults = q.faults[:0]
	ok := true
	for i := range q.events {
		e := &q.events[i]
		c.s.metrics.pluginEvents.WithLabelValues(e.plugin, e.label).Inc()
		if ok && !send(e) {
			ok = false
		}
	}
	q.events = q.events[:0]
	return ok
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
	if c.far != nil {
		if n := c.far.droppedSamples(); n > 0 {
			attrs = append(attrs, "far_end_dropped_ms", n*1000/int64(c.format.Rate))
		}
	}
	c.log.Info("call ended", attrs...)
}
