package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/transport"
)

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
	if c.in.WantsReference() || route.Recording.Records(recording.Reference) {
		c.far = newFarEnd(c.format, c.s.metrics.farEnd)
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
	if c.rec != nil {
		for _, st := range route.Recording.Recorded() {
			v.recorded = append(v.recorded, st.String())
		}
		v.recordingID = c.id
	}
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
	c.setupFrom = time.Now()
	c.s.metrics.setupWait.Observe(c.setupFrom.Sub(t0).Seconds())
	return c.setupHeld
}

// releaseSetup gives the call's set-up slot back, if it holds one. While
// other calls run, the slot is given back only after a pause as long as
// it was held (up to maxSetupPause): set-ups then take at most about half
// of a core while a burst of them queues, and the calls in progress get
// the rest. Back to back, each set-up's goroutine hands the core straight
// to the next, Go's scheduler looks at the network only when nothing else
// is runnable, and the frames of the calls already admitted waited
// behind the whole queue (RATIONALE.md, "A surge refused at the door").
func (c *call) releaseSetup() {
	if !c.setupHeld {
		return
	}
	c.setupHeld = false
	if c.s.active.Load() > 1 {
		if pause := min(time.Since(c.setupFrom), maxSetupPause); pause > 0 {
			time.AfterFunc(pause, c.s.setups.release)
			return
		}
	}
	c.s.setups.release()
}

// maxSetupPause bounds the pause after a set-up: a slow one (a Go guest,
// the race detector) would otherwise halve how many calls set up within
// the set-up wait, where a millisecond already lets the network in.
const maxSetupPause = time.Millisecond
