package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/transport"
)

// pending is an event a plugin emitted during the current frame, sent to
// the client once the frame is done. Label is its name as
// voxhost_plugin_events_total counts it (see eventLabel).
type pending struct {
	plugin, name, label string
	data                []byte
}

// call is one live call: its socket, protocol session, pipeline and the
// buffers its frames reuse.
type call struct {
	s     *Server
	conn  *websocket.Conn
	proto transport.Protocol
	sess  transport.Session
	log   *slog.Logger

	id           string
	pipelineName string
	params       map[string]string
	p            *pipeline.Pipeline

	readBuf []byte
	ulawOut []byte
	src     codec.UlawSource
	in      transport.Inbound
	events  []pending
	faults  []pipeline.Fault

	framesIn, framesOut prometheus.Counter
	frameSeconds        prometheus.Observer

	frames  uint64
	audioMs int64
	started time.Time
	idle    *time.Timer

	endOnce sync.Once
	outcome string
	reason  string

	// setupHeld says the call holds a set-up slot: from before the
	// upgrade (raw) or the start message (Twilio) until its pipeline is
	// built.
	setupHeld bool
}

// ctx is the context of every socket read and write. It never ends: a
// context that can end costs an allocation per call in coder/websocket, so
// timeouts close the socket from a timer instead.
var ctx = context.Background()

// newCall makes the call of request r; its conn is set once the upgrade
// succeeds.
func (s *Server) newCall(proto transport.Protocol, pipelineName string, r *http.Request) *call {
	maxAudio := s.opts.MaxFrameMs * abi.TelephonyRate / 1000
	c := &call{
		s:            s,
		proto:        proto,
		sess:         proto.NewSession(maxAudio),
		id:           fmt.Sprintf("%s-%d", proto.Name(), s.nextID.Add(1)),
		pipelineName: pipelineName,
		readBuf:      make([]byte, min(initialReadBuffer, s.opts.MaxMessageBytes+1)),
		ulawOut:      make([]byte, maxAudio),
		started:      time.Now(),
		framesIn:     s.metrics.framesIn.WithLabelValues(proto.Name()),
		framesOut:    s.metrics.framesOut.WithLabelValues(proto.Name()),
	}
	if id := r.URL.Query().Get("call_id"); id != "" {
		c.id = id // handleCall has refused one that breaks transport.CheckID
	}
	c.log = s.log.With("call", c.id, "protocol", proto.Name(), "remote", r.RemoteAddr)
	return c
}

// run is the call loop: one goroutine reads, processes and writes.
func (c *call) run() {
	c.idle = time.AfterFunc(c.s.opts.IdleTimeout, func() {
		c.end(websocket.StatusPolicyViolation, fmt.Sprintf("idle timeout: no audio for %v", c.s.opts.IdleTimeout), "idle")
	})
	defer c.idle.Stop()
	defer c.finish()

	if c.proto.StartsOnConnect() {
		if err := c.startPipeline(nil); err != nil {
			return
		}
	}
	for {
		typ, msg, err := c.read()
		if err != nil {
			c.readFailed(err)
			return
		}
		if err := c.sess.Decode(transport.MessageType(typ), msg, &c.in); err != nil {
			c.malformed(err)
			return
		}
		if !c.handle() {
			return
		}
	}
}

// handle acts on one decoded message; false ends the call.
func (c *call) handle() bool {
	switch c.in.Kind {
	case transport.KindAudio:
		c.idle.Reset(c.s.opts.IdleTimeout)
		return c.frame()
	case transport.KindStart:
		if c.p != nil {
			c.end(websocket.StatusPolicyViolation, "a second start message on one stream", "malformed")
			return false
		}
		return c.startPipeline(c.in.Start) == nil
	case transport.KindDTMF:
		if c.p == nil {
			return true
		}
		if err := c.p.Event(abi.EventDTMF, int32(c.in.Digit), nil); err != nil {
			c.pluginFailed(err)
			return false
		}
		return c.flushEvents()
	case transport.KindMark:
		// Echo mode answers each frame before reading the next message, so
		// all audio sent before the mark has already gone out.
		if typ, msg, ok := c.sess.Mark(c.in.Mark); ok {
			return c.write(typ, msg)
		}
	case transport.KindStop:
		c.stop()
		return false
	}
	return true
}

// frame runs one audio frame through the pipeline and sends the result.
func (c *call) frame() bool {
	if c.p == nil {
		c.malformed(&transport.ProtocolError{Protocol: c.proto.Name(), Reason: "audio before the stream started"})
		return false
	}
	c.framesIn.Inc()
	t0 := time.Now()
	c.src.Frame = c.in.Audio
	pcm, err := c.p.Process(&c.src)
	if err != nil {
		c.pluginFailed(err)
		return false
	}
	n := codec.EncodeUlaw(c.ulawOut, pcm)
	c.frameSeconds.Observe(time.Since(t0).Seconds())
	c.frames++
	c.audioMs += int64(len(c.in.Audio) * 1000 / abi.TelephonyRate)
	if len(c.events) > 0 || len(c.faults) > 0 {
		if !c.flushEvents() {
			return false
		}
	}
	if n == 0 {
		return true // a plugin swallowed the frame
	}
	typ, msg := c.sess.Audio(c.ulawOut[:n])
	if !c.write(typ, msg) {
		return false
	}
	c.framesOut.Inc()
	return true
}

// startPipeline instantiates the call's pipeline when the stream starts:
// at connect (raw) or at the start message (Twilio, whose custom parameter
// "pipeline" may pick one).
func (c *call) startPipeline(start *transport.Start) error {
	name := c.pipelineName
	meta := map[string]any{"protocol": c.proto.Name(), "sample_rate": abi.TelephonyRate}
	if start != nil {
		if p := start.Params["pipeline"]; p != "" {
			name = p
		}
		if start.CallID != "" {
			c.id = start.CallID
			c.log = c.log.With("call", c.id, "stream", start.StreamID)
		}
		meta["stream_id"] = start.StreamID
		meta["params"] = start.Params
		c.params = start.Params
	}
	route, ok := c.s.route(name)
	if !ok {
		err := fmt.Errorf("unknown pipeline %q", name)
		c.end(websocket.StatusPolicyViolation, err.Error(), "unknown_pipeline")
		return err
	}
	name = route.Name
	def := route.Inbound
	c.pipelineName = name
	meta["call_id"], meta["pipeline"] = c.id, name
	if !c.setupHeld && !c.awaitSetup(nil) {
		c.s.metrics.shed.WithLabelValues(shedSetup).Inc()
		reason := c.s.setupRefusal()
		c.log.Warn("call refused", "reason", reason)
		c.end(websocket.StatusTryAgainLater, reason, "shed")
		return errors.New(reason)
	}
	p, err := def.Instantiate(ctx, pipeline.CallConfig{
		MaxFrameMs: c.s.opts.MaxFrameMs,
		Sink:       c,
		Logger:     c.log,
		OnFault:    func(f pipeline.Fault) { c.faults = append(c.faults, f) },
	})
	c.releaseSetup()
	if err != nil {
		c.log.Error("pipeline failed to start", "pipeline", name, "err", err)
		c.end(websocket.StatusInternalError, "pipeline failed to start", "start_failed")
		return err
	}
	c.p = p
	c.frameSeconds = c.s.metrics.frameSeconds.WithLabelValues(name)
	c.log.Info("call started", "pipeline", name)
	js, _ := json.Marshal(meta)
	if err := p.Event(abi.EventCallStart, 0, js); err != nil {
		c.pluginFailed(err)
		return err
	}
	if !c.flushEvents() {
		return errors.New("write failed")
	}
	return nil
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

// Emit implements plugin.Sink: events wait until the frame is done.
func (c *call) Emit(plugin, name string, data []byte) {
	c.events = append(c.events, pending{plugin: plugin, name: name, label: eventLabel(name), data: data})
}

// flushEvents sends the events and fault notices of the last frame.
func (c *call) flushEvents() bool {
	for _, f := range c.faults {
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
		c.events = append(c.events, pending{plugin: f.Name, name: faultEvent, label: faultEvent, data: data})
	}
	c.faults = c.faults[:0]
	for _, e := range c.events {
		c.s.metrics.pluginEvents.WithLabelValues(e.plugin, e.label).Inc()
		var typ transport.MessageType
		var msg []byte
		var ok bool
		if e.name == abi.EmitClear {
			typ, msg, ok = c.sess.Clear()
		} else {
			typ, msg, ok = c.sess.Event(e.plugin, e.name, e.data, c.audioMs)
		}
		if !ok {
			c.log.Debug("plugin event", "plugin", e.plugin, "name", e.name, "data", string(e.data))
			continue
		}
		if !c.write(typ, msg) {
			return false
		}
	}
	c.events = c.events[:0]
	return true
}

// read reads one whole message into the call's buffer.
func (c *call) read() (websocket.MessageType, []byte, error) {
	typ, r, err := c.conn.Reader(ctx)
	if err != nil {
		return 0, nil, err
	}
	n := 0
	for {
		m, err := r.Read(c.readBuf[n:])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, err
		}
		if n == len(c.readBuf) {
			// One byte past the limit means too big; below it, grow. Calls
			// that send 20 ms frames never get here, so they keep a few KiB.
			if n > c.s.opts.MaxMessageBytes {
				return 0, nil, errTooBig
			}
			c.readBuf = append(c.readBuf, make([]byte, min(n, c.s.opts.MaxMessageBytes+1-n))...)
		}
	}
	return typ, c.readBuf[:n], nil
}

var errTooBig = errors.New("message too big")

// initialReadBuffer holds any 20 ms frame of either protocol with room to
// spare (a Twilio media message of 160 bytes of audio is about 420 bytes).
const initialReadBuffer = 4 << 10

func (c *call) write(typ transport.MessageType, msg []byte) bool {
	if err := c.conn.Write(ctx, websocket.MessageType(typ), msg); err != nil {
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
	case websocket.CloseStatus(err) == websocket.StatusNormalClosure || websocket.CloseStatus(err) == websocket.StatusGoingAway:
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

func (c *call) pluginFailed(err error) {
	c.flushEvents()
	c.end(websocket.StatusInternalError, "plugin failed: "+err.Error(), "plugin_error")
}

// stop ends a stream the client closed in order: plugins flush what they
// hold, and the tail goes out before the close.
func (c *call) stop() {
	c.flush()
	c.end(websocket.StatusNormalClosure, "stream stopped", "completed")
}

func (c *call) flush() {
	if c.p == nil {
		return
	}
	err := c.p.Flush(func(pcm []byte) error {
		n := codec.EncodeUlaw(c.ulawOut, pcm)
		typ, msg := c.sess.Audio(c.ulawOut[:n])
		return c.conn.Write(ctx, websocket.MessageType(typ), msg)
	})
	if err != nil {
		c.log.Info("flush failed", "err", err)
	}
	c.flushEvents()
}

// end closes the call once, with a close code and reason for the client;
// outcome labels it in metrics and logs. Safe from any goroutine.
func (c *call) end(status websocket.StatusCode, reason, outcome string) {
	c.endOnce.Do(func() {
		c.outcome, c.reason = outcome, reason
		if status == websocket.StatusAbnormalClosure {
			_ = c.conn.CloseNow()
			return
		}
		go func() { _ = c.conn.Close(status, closeReason(reason)) }()
		// Close waits for the peer's close frame; the read loop must not
		// block on it, so it is given a moment and then the socket goes.
		time.AfterFunc(2*time.Second, func() { _ = c.conn.CloseNow() })
	})
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

// finish releases the call's instances and records how it ended.
func (c *call) finish() {
	c.end(websocket.StatusNormalClosure, "", "completed")
	if c.p != nil {
		if err := c.p.Close(ctx); err != nil {
			c.log.Info("closing plugins", "err", err)
		}
	}
	c.s.metrics.calls.WithLabelValues(c.proto.Name(), c.outcome).Inc()
	c.s.metrics.callSeconds.WithLabelValues(c.proto.Name()).Observe(time.Since(c.started).Seconds())
	attrs := []any{"pipeline", c.pipelineName, "frames", c.frames, "audio_ms", c.audioMs,
		"duration", time.Since(c.started).Round(time.Millisecond), "outcome", c.outcome}
	if c.reason != "" {
		attrs = append(attrs, "reason", c.reason)
	}
	c.log.Info("call ended", attrs...)
}
