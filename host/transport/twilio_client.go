package transport

import (
	"encoding/base64"
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

// The twilio dialect: voxhost speaks Twilio Media Streams to the bot
// exactly as Twilio speaks to the WebSocket server of a bidirectional
// <Connect><Stream>, as documented at
// https://www.twilio.com/docs/voice/media-streams/websocket-messages, so a
// bot written for Twilio (pipecat's TwilioFrameSerializer, jargo's
// wsserver/twilio) runs behind voxhost unchanged.
//
// To the bot: connected, start, then media (the caller's μ-law, after the
// inbound pipeline), dtmf, mark (the answer to each of the bot's marks,
// once the audio before it has played to the caller or was cleared) and
// stop. Every message but connected counts up in sequenceNumber from "1",
// as Twilio's do; media counts its chunks from "1" and stamps each with
// the ms of audio sent before it. From the bot: media, mark and clear;
// anything else is ignored, as Twilio ignores it. The bot's streamSid is
// not checked: a bot serves the one stream its socket carries.
//
// The bot learns of a barge-in the host detects only as Twilio would tell
// it: by its marks coming back early, which the call loop sends through
// MarkPlayed. Twilio carries μ-law at 8 kHz only.
func init() { RegisterDialect(twilioDialect{}) }

type twilioDialect struct{}

func (twilioDialect) Name() string { return twilioName }

func (twilioDialect) CheckFormat(f codec.Format) error {
	if f != codec.Telephony {
		return errFormat(twilioName, f, "μ-law at 8000 Hz only (Twilio's audio/x-mulaw)")
	}
	return nil
}

func (twilioDialect) NewBotSession(cfg BotConfig) BotSession {
	checkMaxAudio(cfg.MaxAudio)
	sid := appendQuoted(nil, cfg.Call.streamID())
	return &twilioBot{
		maxAudio: cfg.MaxAudio,
		call:     cfg.Call,
		sid:      sid,
		audio:    payloadBuffer(cfg.MaxAudio),
		// Room for a media message of MaxAudio bytes with counters of any
		// size, so rendering audio never grows the buffer.
		out: make([]byte, 0, twilioBotMediaBytes+len(sid)+base64.StdEncoding.EncodedLen(cfg.MaxAudio)),
	}
}

// twilioBotMediaBytes bounds a media message but for its streamSid and
// payload: 117 bytes of members and three int64 counters of 19 digits.
const twilioBotMediaBytes = 117 + 3*19

type twilioBot struct {
	maxAudio int
	call     CallInfo
	sid      []byte // the streamSid as a JSON string

	// The reading goroutine's.
	audio   []byte // the decoded payload of the bot's last media message
	scratch []byte // a payload with its JSON escapes resolved

	// The writing goroutine's.
	seq   int64  // the last sequenceNumber sent
	chunk int64  // the last media chunk sent
	sent  int64  // bytes of audio sent, 8 a millisecond
	out   []byte // the last rendered message
}

// open begins a message that carries a sequenceNumber: its event member,
// then the next number.
func (t *twilioBot) open(event string) []byte {
	t.seq++
	b := append(t.out[:0], `{"event":"`...)
	b = append(b, event...)
	b = append(b, `","sequenceNumber":"`...)
	b = strconv.AppendInt(b, t.seq, 10)
	return append(b, '"')
}

// Open sends connected, then start with the call's ids and custom
// parameters; the streamSid is the call id when the caller leg has none.
// The account id is sent as given, empty when unknown.
func (t *twilioBot) Open(send func(MessageType, []byte) error) error {
	t.out = append(t.out[:0], `{"event":"connected","protocol":"Call","version":"1.0.0"}`...)
	if err := send(Text, t.out); err != nil {
		return err
	}
	b := t.open("start")
	b = append(b, `,"start":{"accountSid":`...)
	b = appendQuoted(b, t.call.AccountID)
	b = append(b, `,"streamSid":`...)
	b = append(b, t.sid...)
	b = append(b, `,"callSid":`...)
	b = appendQuoted(b, t.call.CallID)
	b = append(b, `,"tracks":["inbound"],"mediaFormat":{"encoding":"`+EncodingMulaw+`","sampleRate":8000,"channels":1},"customParameters":`...)
	b = appendParams(b, t.call.Params)
	b = append(b, `},"streamSid":`...)
	b = append(b, t.sid...)
	t.out = append(b, '}')
	return send(Text, t.out)
}

// Audio renders a media message of the inbound track.
func (t *twilioBot) Audio(ulaw []byte) (MessageType, []byte) {
	t.chunk++
	b := t.open("media")
	b = append(b, `,"media":{"track":"inbound","chunk":"`...)
	b = strconv.AppendInt(b, t.chunk, 10)
	b = append(b, `","timestamp":"`...)
	b = strconv.AppendInt(b, t.sent/8, 10)
	b = append(b, `","payload":"`...)
	b = base64.StdEncoding.AppendEncode(b, ulaw)
	b = append(b, `"},"streamSid":`...)
	b = append(b, t.sid...)
	t.out = append(b, '}')
	t.sent += int64(len(ulaw))
	return Text, t.out
}

// DTMF renders a dtmf message; there is none for a byte that is not a key.
func (t *twilioBot) DTMF(digit byte) (MessageType, []byte, bool) {
	if !validDigit(digit) {
		return 0, nil, false
	}
	// Twilio's own order: streamSid before sequenceNumber.
	t.seq++
	b := append(t.out[:0], `{"event":"dtmf","streamSid":`...)
	b = append(b, t.sid...)
	b = append(b, `,"sequenceNumber":"`...)
	b = strconv.AppendInt(b, t.seq, 10)
	b = append(b, `","dtmf":{"track":"inbound_track","digit":"`...)
	t.out = append(b, digit, '"', '}', '}')
	return Text, t.out, true
}

// MarkPlayed renders the mark message Twilio returns for the bot's mark.
func (t *twilioBot) MarkPlayed(name string) (MessageType, []byte, bool) {
	return t.mark(name)
}

func (t *twilioBot) mark(name string) (MessageType, []byte, bool) {
	b := t.open("mark")
	b = append(b, `,"streamSid":`...)
	b = append(b, t.sid...)
	b = append(b, `,"mark":{"name":`...)
	b = appendQuoted(b, name)
	t.out = append(b, "}}"...)
	return Text, t.out, true
}

// Interrupted sends nothing: Twilio has no message for a barge-in. A bot
// learns of it as from Twilio, by the marks the clear returned.
func (t *twilioBot) Interrupted(int64, bool, func(MessageType, []byte) error) error { return nil }

// Event renders a plugin's event as a mark named "voxhost:PLUGIN:NAME",
// the only message Twilio sends that can carry a name. Its data and time
// are dropped: a mark has a name only. A Twilio bot looks up a returned
// mark among those it sent, so it passes over these unless it was written
// to read them.
func (t *twilioBot) Event(plugin, name string, _ []byte, _ int64) (MessageType, []byte, bool) {
	return t.mark("voxhost:" + plugin + ":" + name)
}

// Stop renders stop, with the ids of start.
func (t *twilioBot) Stop() (MessageType, []byte, bool) {
	b := t.open("stop")
	b = append(b, `,"stop":{"accountSid":`...)
	b = appendQuoted(b, t.call.AccountID)
	b = append(b, `,"callSid":`...)
	b = appendQuoted(b, t.call.CallID)
	b = append(b, `},"streamSid":`...)
	b = append(b, t.sid...)
	t.out = append(b, '}')
	return Text, t.out, true
}

// Decode reads what a bot sends Twilio: media, mark and clear. Media is
// read by the scanner the server role uses, without allocating.
func (t *twilioBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	if typ != Text {
		return &ProtocolError{Protocol: twilioName, Reason: "binary message from a Twilio bot: Twilio takes JSON text messages only", Unsupported: true}
	}
	var f twilioMedia
	if err := f.dispatchError(f.scan(msg)); err != nil {
		return err
	}
	switch {
	case textIs(f.event, "media"):
		if !f.isObject {
			return protocolErrorf(twilioName, "media message without a media object")
		}
		if f.payload == nil {
			return protocolErrorf(twilioName, "media message without a string media.payload")
		}
		n, err := decodeBase64Token(twilioName, "media payload", f.payload, t.audio, &t.scratch, t.maxAudio)
		if err == nil {
			err = checkBotAudio(twilioName, n, t.maxAudio, codec.Telephony)
		}
		if err != nil {
			return err
		}
		in.Kind, in.Audio = KindAudio, t.audio[:n]
	case textIs(f.event, "mark"):
		return decodeCarrierMark(twilioName, msg, in)
	case textIs(f.event, "clear"):
		in.Kind = KindClear
	}
	return nil
}
