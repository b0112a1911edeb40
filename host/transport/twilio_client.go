package transport

import (
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
// anything else is ignored, as Twilio ignores it, but for one addition of
// voxhost's: a dtmf message shaped as Twilio's own
// ({"event":"dtmf","dtmf":{"digit":"5"}}) is a key the bot presses, which
// a caller whose protocol carries keys (SIP) gets after the audio sent
// before it. The bot's streamSid is not checked: a bot serves the one
// stream its socket carries.
//
// The bot learns of a barge-in the host detects only as Twilio would tell
// it: by its marks coming back early, which the call loop sends through
// MarkPlayed. Twilio carries μ-law at 8 kHz only. The dialect is the value
// twilio (twilio.go), which is the protocol too.

// checkTwilioFormat takes μ-law at 8 kHz only.
func checkTwilioFormat(f codec.Format) error {
	if f != codec.Telephony {
		return errFormat(twilioName, f, "μ-law at 8000 Hz only (Twilio's audio/x-mulaw)")
	}
	return nil
}

// twilioBot renders what only Twilio sends; the skeleton renders its mark
// and reads what the bot sends.
type twilioBot struct{ carrierBot }

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
	t.out = append(append(append(b, '}'), t.idMember...), '}')
	return send(Text, t.out)
}

// Audio renders a media message of the inbound track.
func (t *twilioBot) Audio(ulaw []byte) (MessageType, []byte) { return t.trackedMedia(ulaw) }

// DTMF renders a dtmf message; there is none for a byte that is not a key.
func (t *twilioBot) DTMF(digit byte) (MessageType, []byte, bool) {
	if !validDigit(digit) {
		return 0, nil, false
	}
	// Twilio's own order: streamSid before sequenceNumber.
	t.seq++
	b := append(t.out[:0], `{"event":"dtmf","streamSid":`...)
	b = append(b, t.sid...)
	b = append(b, `,"sequenceNumber":`...)
	b = appendCount(b, t.seq)
	b = append(b, `,"dtmf":{"track":"inbound_track","digit":"`...)
	t.out = append(b, digit, '"', '}', '}')
	return Text, t.out, true
}

// Stop renders stop, with the ids of start.
func (t *twilioBot) Stop() (MessageType, []byte, bool) {
	b := t.open("stop")
	b = append(b, `,"stop":{"accountSid":`...)
	b = appendQuoted(b, t.call.AccountID)
	b = append(b, `,"callSid":`...)
	b = appendQuoted(b, t.call.CallID)
	t.out = append(append(append(b, '}'), t.idMember...), '}')
	return Text, t.out, true
}
