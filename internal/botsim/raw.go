package botsim

import (
	"encoding/json"
	"fmt"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// rawBot is the bot's side of the raw dialect: the raw protocol's carrier
// session decodes binary audio and the dtmf, mark and stop events, and
// renders marks and clears; the host's start message, which that session
// ignores, is read here for the leg's format. Until it comes the audio is
// μ-law at 8 kHz, the protocol's own default.
type rawBot struct {
	dec, enc transport.Session
	in       transport.Inbound
	begun    bool // the stream has started, by its start message or its first audio
}

func newRawBot(maxMessage int) *rawBot {
	return &rawBot{dec: newSession(transport.Raw(), maxMessage), enc: newSession(transport.Raw(), maxMessage)}
}

// newSession makes a session of a server-role protocol that takes audio
// payloads of up to maxBytes, counted as μ-law (a byte a sample: L16
// frames of that many bytes pass too).
func newSession(p transport.Protocol, maxBytes int) transport.Session {
	s, err := p.NewSession(transport.SessionConfig{MaxFrameMs: max(maxBytes/8, 1)})
	if err != nil {
		panic(err) // neither raw nor twilio refuses an empty query
	}
	return s
}

// open sends nothing: the host starts the stream.
func (b *rawBot) open(*call) error { return nil }

func (b *rawBot) handle(c *call, typ websocket.MessageType, msg []byte) error {
	if err := b.dec.Decode(transport.MessageType(typ), msg, &b.in); err != nil {
		return err
	}
	switch {
	case b.in.Kind == transport.KindAudio && !b.begun:
		// Audio before any start: the stream is the protocol's default.
		b.begun = true
		c.started(nil, codec.Telephony, codec.Telephony)
	case b.in.Kind == transport.KindIgnore && eventName(msg) == "start":
		f, err := rawStartFormat(msg)
		if err != nil {
			return err
		}
		b.begun = true
		c.event("start", fmt.Sprint(f), nil)
		c.started(msg, f, f)
		return nil
	}
	return handleCommon(c, &b.in, msg, nil)
}

// rawStartFormat reads the format of a raw start message:
// {"event":"start",…,"codec":"l16","rate":16000}.
func rawStartFormat(msg []byte) (codec.Format, error) {
	var m struct {
		Codec string `json:"codec"`
		Rate  int    `json:"rate"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return codec.Format{}, &transport.ProtocolError{Protocol: ProtocolRaw, Reason: "bad start message: " + err.Error()}
	}
	f, err := codec.ParseFormat(m.Codec, m.Rate)
	if err != nil {
		return codec.Format{}, &transport.ProtocolError{Protocol: ProtocolRaw, Reason: "start: " + err.Error(), Unsupported: true}
	}
	return f, nil
}

func (b *rawBot) audio(_ *call, chunk []byte) (websocket.MessageType, []byte) {
	typ, msg := b.enc.Audio(chunk)
	return websocket.MessageType(typ), msg
}

func (b *rawBot) begin(*call) error { return nil }

func (b *rawBot) end(c *call, name string, cut bool) error { return sendMark(c, b.enc, name, cut) }

func (b *rawBot) interrupt(c *call) error { return sendClear(c, b.enc) }
