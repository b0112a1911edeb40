package transport

import (
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

// The raw dialect: the raw protocol's client role, for a bot that takes
// bare audio. Binary messages carry audio in the route's format both ways
// (μ-law at 8 kHz, or L16 at 8, 16 or 24 kHz), any whole number of
// samples; text messages are JSON events. To the bot:
//
//	{"event":"start","call_id":C,"stream_id":S,"account_id":A,"route":R,
//	 "params":{...},"codec":"mulaw"|"l16","rate":N}   first, once
//	{"event":"dtmf","digit":"5"}                       a key the caller pressed
//	{"event":"mark","name":"x"}                        the bot's mark, once the audio before it has played
//	{"event":"clear","heard_ms":N}                     the caller barged in; N ms of the bot's audio were heard
//	{"event":"plugin","plugin":P,"name":N,"data":D,"t_ms":T}  a plugin's event, as the server role sends it
//	{"event":"stop"}                                   the caller hung up
//
// From the bot: audio, {"event":"mark","name":"x"}, {"event":"clear"}
// (drop the audio queued for the caller), {"event":"dtmf","digit":"5"}
// (a key the bot presses: the caller gets it after the audio the bot sent
// before it, where the caller's protocol carries keys, as SIP's RFC 4733
// telephone-events do) and {"event":"stop"}; other events are ignored.
// The stream id is the call id when the caller leg has none.
func init() { RegisterDialect(rawDialect{}) }

type rawDialect struct{}

func (rawDialect) Name() string { return rawName }

// CheckFormat takes every format a leg can carry.
func (rawDialect) CheckFormat(f codec.Format) error { return f.Check() }

func (rawDialect) NewBotSession(cfg BotConfig) BotSession {
	return &rawBot{newBinaryBot(cfg)}
}

type rawBot struct{ binaryBot }

func (r *rawBot) Open(send func(MessageType, []byte) error) error {
	c := r.cfg.Call
	b := append(r.out[:0], `{"event":"start","call_id":`...)
	b = appendQuoted(b, c.CallID)
	b = append(b, `,"stream_id":`...)
	b = appendQuoted(b, c.streamID())
	b = append(b, `,"account_id":`...)
	b = appendQuoted(b, c.AccountID)
	b = append(b, `,"route":`...)
	b = appendQuoted(b, c.Route)
	b = append(b, `,"params":`...)
	b = appendParams(b, c.Params)
	b = append(b, `,"codec":"`...)
	b = append(b, r.cfg.Format.Encoding.String()...)
	b = append(b, `","rate":`...)
	b = strconv.AppendInt(b, int64(r.cfg.Format.Rate), 10)
	r.out = append(b, '}')
	return send(Text, r.out)
}

// DTMF renders a dtmf event; there is none for a byte that is not a key.
func (r *rawBot) DTMF(digit byte) (MessageType, []byte, bool) {
	return textDigit(&r.out, `{"event":"dtmf","digit":"`, digit)
}

func (r *rawBot) MarkPlayed(name string) (MessageType, []byte, bool) {
	r.out = appendRawMark(r.out[:0], name)
	return Text, r.out, true
}

// Interrupted sends a clear with what the caller heard, unless the bot
// asked for the clear: it then knows already, and what it was told of its
// own audio (its marks) says what was heard.
func (r *rawBot) Interrupted(heardMs int64, byBot bool, send func(MessageType, []byte) error) error {
	if byBot {
		return nil
	}
	b := append(r.out[:0], `{"event":"clear","heard_ms":`...)
	b = strconv.AppendInt(b, heardMs, 10)
	r.out = append(b, '}')
	return send(Text, r.out)
}

func (r *rawBot) Event(plugin, name string, data []byte, tMs int64) (MessageType, []byte, bool) {
	r.out = appendRawEvent(r.out[:0], plugin, name, data, tMs)
	return Text, r.out, true
}

func (r *rawBot) Stop() (MessageType, []byte, bool) {
	r.out = append(r.out[:0], `{"event":"stop"}`...)
	return Text, r.out, true
}

// Decode reads the bot's audio as it is, and its events with the server
// role's reader: mark, clear, dtmf and stop.
func (r *rawBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	switch typ {
	case Binary:
		return binaryBotAudio(rawName, msg, r.cfg.MaxAudio, r.cfg.Format, in)
	case Text:
		return decodeRawControl(msg, in)
	}
	return protocolErrorf(rawName, "message of unknown WebSocket type %d", int(typ))
}
