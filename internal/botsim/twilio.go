package botsim

import (
	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// twilioMaxAudio bounds the audio of one Twilio media message either
// way: a second of μ-law, five times Twilio's own longest. Each session
// sizes its buffers from it, and a load test holds a thousand calls.
const twilioMaxAudio = 8000

// twilioBot is the bot's side of the twilio dialect, which is the
// carrier side voxhost serves Twilio with: the same messages decoded
// (connected, start, media, dtmf, mark, stop) and rendered (media, mark,
// clear). The reader decodes with one session and the writers render
// with another, since a session is one goroutine's; the start message
// goes to both, as the renderer needs its streamSid.
type twilioBot struct {
	dec, enc transport.Session
	in, scr  transport.Inbound
}

func newTwilioBot() *twilioBot {
	return &twilioBot{dec: newSession(transport.Twilio(), twilioMaxAudio), enc: newSession(transport.Twilio(), twilioMaxAudio)}
}

// open sends nothing: Twilio speaks first.
func (t *twilioBot) open(*call) error { return nil }

func (t *twilioBot) handle(c *call, typ websocket.MessageType, msg []byte) error {
	if err := t.dec.Decode(transport.MessageType(typ), msg, &t.in); err != nil {
		return err
	}
	return handleCommon(c, &t.in, msg, func() error {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return t.enc.Decode(transport.Text, msg, &t.scr)
	})
}

// handleCommon records and answers what the Twilio and raw sessions
// decode alike. onStart runs before a KindStart is recorded.
func handleCommon(c *call, in *transport.Inbound, msg []byte, onStart func() error) error {
	switch in.Kind {
	case transport.KindStart:
		if onStart != nil {
			if err := onStart(); err != nil {
				return err
			}
		}
		st := in.Start
		c.event("start", st.StreamID, func(r *Call) { r.Start = st })
		c.started(msg, codec.Telephony, codec.Telephony)
	case transport.KindAudio:
		c.received(in.Audio, c.outFormat())
		return c.echo(in.Audio)
	case transport.KindDTMF:
		d := in.Digit
		c.event("dtmf", string(d), func(r *Call) {
			if len(r.DTMF) < c.sim.cfg.RecordItems {
				r.DTMF += string(d)
			} else {
				r.Dropped++
			}
		})
	case transport.KindMark:
		name := in.Mark
		c.event("mark", name, func(r *Call) { r.MarksAcked = appendCapped(c, r, r.MarksAcked, name) })
	case transport.KindStop:
		c.event("stop", "", func(r *Call) { r.Stopped = true })
		return errStopped
	case transport.KindClear:
		c.event("clear", "", func(r *Call) { r.Clears++ })
	default:
		name := eventName(msg)
		var f func(r *Call)
		if name == "clear" {
			f = func(r *Call) { r.Clears++ }
		}
		c.event(name, truncate(string(msg), 200), f)
	}
	return nil
}

func (t *twilioBot) audio(_ *call, chunk []byte) (websocket.MessageType, []byte) {
	typ, msg := t.enc.Audio(chunk)
	return websocket.MessageType(typ), msg
}

func (t *twilioBot) begin(*call) error { return nil }

func (t *twilioBot) end(c *call, name string, cut bool) error { return sendMark(c, t.enc, name, cut) }

func (t *twilioBot) interrupt(c *call) error { return sendClear(c, t.enc) }

// sendMark sends the mark that follows an utterance, unless it was cut
// short: a bot that barged in on itself has nothing to sync with. wmu is
// held.
func sendMark(c *call, enc transport.Session, name string, cut bool) error {
	if cut {
		return nil
	}
	typ, msg, ok := enc.Mark(name)
	if !ok {
		return nil
	}
	// Recorded before the write: the host may acknowledge the mark as soon
	// as it is on the wire, and its reader records the acknowledgement on
	// another goroutine, which could otherwise get there first (a record of
	// a mark acked but never sent). A write that fails takes it back out.
	recorded := false
	c.record(func(r *Call) {
		n := len(r.MarksSent)
		r.MarksSent = appendCapped(c, r, r.MarksSent, name)
		recorded = len(r.MarksSent) > n
	})
	if err := c.write(websocket.MessageType(typ), msg); err != nil {
		if recorded {
			c.record(func(r *Call) { r.MarksSent = r.MarksSent[:len(r.MarksSent)-1] })
		}
		return err
	}
	return nil
}

// sendClear sends the protocol's clear; wmu is held.
func sendClear(c *call, enc transport.Session) error {
	typ, msg, ok := enc.Clear()
	if !ok {
		return nil
	}
	return c.write(websocket.MessageType(typ), msg)
}
