package server

import (
	"encoding/json"
	"errors"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/transport"
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
