package transport

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

const exotelName = "exotel"

// exotelRateQuery is the query parameter of the Voicebot applet's URL that
// picks the stream's rate, as Exotel documents it: ?sample-rate=16000.
const exotelRateQuery = "sample-rate"

// Exotel returns the Exotel AgentStream protocol of a Voicebot applet (the
// bidirectional stream), as documented at
// https://developer.exotel.com/docs/agentstream/websocket-protocol and
// https://developer.exotel.com/docs/agentstream/stream-voicebot-applet.
// Exotel sends JSON text messages only: connected, then start (stream_sid
// at the top level and inside, with call_sid, account_sid, from, to,
// custom_parameters and media_format), media (base64 16-bit little-endian
// PCM, about every 100 ms), dtmf (digit and duration), mark (a mark the
// host sent, "when audio you previously sent has finished playing") and
// stop. The host answers with media, mark and clear, each with the
// stream_sid; Exotel has no message for plugin events or for hanging up
// (the stream ends when the bot closes it), so Event and Hangup render
// nothing.
//
// The stream's format is L16 at the applet URL's ?sample-rate= (8000 by
// default, 16000 or 24000), or what the start's media_format says:
// "audio/x-raw" at its sample_rate with bit_rate 16, or μ-law at 8 kHz
// where an applet streams audio/x-mulaw. Exotel asks for audio sent back
// in chunks of 3,200 to 100,000 bytes, a multiple of 320: the host's
// 20 ms frames are multiples of 320 bytes at every rate (320, 640, 960)
// but under the minimum, so they want batching (AudioChunker).
func Exotel() Protocol { return exotelProtocol{exotel} }

// exotel is Twilio's shape with Exotel's names and L16 by default.
var exotel = newJSONCarrier(jsonCarrier{
	// Exotel plays what it is sent in order and returns each mark once the
	// audio before it has played. Its pages do not say that a clear returns
	// the marks queued behind it, and taking them as cleared is the safe
	// reading (one returned after all is ignored).
	endpoint:        endpoint{name: exotelName, path: "/exotel", buffers: true},
	carrier:         "Exotel",
	clearDropsMarks: true,
	id:              "stream_sid",
	seqKey:          "sequence_number",
	format:          codec.Format{Encoding: codec.L16, Rate: 8000},
	checkFormat:     checkExotelFormat,
	connect:         exotelConnect,
	start:           exotelStart,
	newBot:          func(b carrierBot) BotSession { return &exotelBot{b} },
})

// exotelProtocol is the server role, with Exotel's rule for the audio it
// takes.
type exotelProtocol struct{ *jsonCarrier }

// AudioChunk is Exotel's rule for the audio sent to it: messages of at
// least 3,200 bytes, a multiple of 320, at every rate.
func (exotelProtocol) AudioChunk(codec.Format) (minBytes, multiple int) { return 3200, 320 }

func init() {
	RegisterProtocol(exotelProtocol{exotel})
	RegisterDialect(exotel)
}

// exotelConnect takes the stream's default rate from ?sample-rate=: 8000,
// 16000 or 24000, 8000 without one.
func exotelConnect(s *jsonSession) error {
	if q := s.cfg.Query.Get(exotelRateQuery); q != "" {
		r, err := strconv.Atoi(q)
		if s.format.Rate = r; err != nil || r != 8000 && r != 16000 && r != 24000 {
			return fmt.Errorf("exotel: %s=%s is not a rate Exotel streams (want 8000, 16000 or 24000)", exotelRateQuery, excerpt(q))
		}
	}
	return nil
}

// exotelStart is what the host reads of a start message. The top-level
// stream_sid stands in if start.stream_sid is absent.
type exotelStartMsg struct {
	StreamSid string `json:"stream_sid"`
	Start     *struct {
		StreamSid        string          `json:"stream_sid"`
		CallSid          string          `json:"call_sid"`
		AccountSid       string          `json:"account_sid"`
		From             string          `json:"from"`
		To               string          `json:"to"`
		CustomParameters json.RawMessage `json:"custom_parameters"`
		MediaFormat      *struct {
			Encoding   string  `json:"encoding"`
			SampleRate jsonInt `json:"sample_rate"`
			BitRate    jsonInt `json:"bit_rate"`
		} `json:"media_format"`
	} `json:"start"`
}

func exotelStart(s *jsonSession, msg []byte) (*Start, error) {
	var m exotelStartMsg
	if err := decodeMessage(exotelName, "start", msg, &m); err != nil {
		return nil, err
	}
	st := m.Start
	if st == nil {
		return nil, protocolErrorf(exotelName, "start message without a start object")
	}
	sid := st.StreamSid
	if sid == "" {
		sid = m.StreamSid
	}
	if sid == "" {
		return nil, protocolErrorf(exotelName, "start message without start.stream_sid")
	}
	custom, err := rawParams(st.CustomParameters, "&")
	if err != nil {
		return nil, protocolErrorf(exotelName, "bad start.custom_parameters: %v", err)
	}
	params := withFromTo(custom, st.From, st.To)
	if err := checkCarrierStart(exotelName, params, "start.custom_parameters", nil,
		[2]string{"start.stream_sid", sid}, [2]string{"start.call_sid", st.CallSid}, [2]string{"start.account_sid", st.AccountSid}); err != nil {
		return nil, err
	}
	f := s.format
	if mf := st.MediaFormat; mf != nil {
		typ, rate := mediaType(mf.Encoding)
		if rate == 0 {
			rate = f.Rate
		}
		f.Rate = mf.SampleRate.or(rate)
		bits := mf.BitRate.or(16)
		known := true
		switch typ {
		case "audio/x-raw", "audio/l16", "audio/x-l16", "":
			f.Encoding = codec.L16
			known = bits == 16
		case "audio/x-mulaw":
			f.Encoding = codec.Mulaw
		default:
			known = false
		}
		if !known || f.Check() != nil {
			return nil, unsupportedFormat(exotelName, "unsupported media_format %s at %d Hz, %d bits; voxhost takes audio/x-raw of 16 bits at 8000, 16000 or 24000 Hz, or audio/x-mulaw at 8000 Hz",
				excerpt(mf.Encoding), f.Rate, bits)
		}
	}
	s.begin(sid, f, f)
	return &Start{StreamID: sid, CallID: st.CallSid, AccountID: st.AccountSid, Params: params}, nil
}

// The exotel dialect: voxhost speaks AgentStream to the bot as Exotel's
// Voicebot applet speaks it, so a bot written for Exotel (pipecat's
// ExotelFrameSerializer) runs behind voxhost unchanged.
//
// To the bot: connected, start (stream_sid, call_sid = the call's id,
// account_sid, from and to and custom_parameters from the call's
// parameters, media_format audio/x-raw at the leg's rate, as strings),
// media (chunk counted from "1", timestamp the ms of audio before it),
// dtmf (without a duration, which the host does not know), mark (the bot's
// marks, once played or cleared) and stop (reason "callended"); every
// message but connected counts up in sequence_number from "1". From the
// bot: media (any whole number of samples: Exotel's chunk rules are for
// what Exotel is sent, and the host re-frames a bot's audio), mark and
// clear; anything else is ignored.

// checkExotelFormat takes L16 at 8, 16 or 24 kHz, the rates Exotel streams.
func checkExotelFormat(f codec.Format) error {
	if f.Encoding != codec.L16 || f.Check() != nil {
		return errFormat(exotelName, f, "L16 at 8000, 16000 or 24000 Hz (Exotel's audio/x-raw)")
	}
	return nil
}

type exotelBot struct{ carrierBot }

// Open sends connected, then start.
func (e *exotelBot) Open(send func(MessageType, []byte) error) error {
	e.out = append(e.out[:0], `{"event":"connected"}`...)
	if err := send(Text, e.out); err != nil {
		return err
	}
	from, to, params := splitFromTo(e.call.Params)
	b := append(e.open("start"), e.idMember...)
	b = append(b, `,"start":{"stream_sid":`...)
	b = append(b, e.sid...)
	b = append(b, `,"call_sid":`...)
	b = appendQuoted(b, e.call.CallID)
	b = append(b, `,"account_sid":`...)
	b = appendQuoted(b, e.call.AccountID)
	b = append(b, `,"from":`...)
	b = appendQuoted(b, from)
	b = append(b, `,"to":`...)
	b = appendQuoted(b, to)
	b = append(b, `,"custom_parameters":`...)
	b = appendParams(b, params)
	b = append(b, `,"media_format":{"encoding":"audio/x-raw","sample_rate":`...)
	b = appendCount(b, int64(e.format.Rate))
	e.out = append(b, `,"bit_rate":"16"}}}`...)
	return send(Text, e.out)
}

// Audio renders a media message.
func (e *exotelBot) Audio(audio []byte) (MessageType, []byte) {
	e.chunk++
	b := append(e.openMedia(), e.idMember...)
	b = append(b, `,"media":{"chunk":`...)
	b = appendCount(b, e.chunk)
	b = append(b, `,"timestamp":`...)
	b = appendCount(b, e.sentMs())
	b = append(b, `,"payload":"`...)
	b = base64.StdEncoding.AppendEncode(b, audio)
	e.out = append(b, `"}}`...)
	e.sent += int64(len(audio))
	return Text, e.out
}

// DTMF renders a dtmf message; there is none for a byte that is not a key.
func (e *exotelBot) DTMF(digit byte) (MessageType, []byte, bool) {
	if !validDigit(digit) {
		return 0, nil, false
	}
	b := append(e.open("dtmf"), e.idMember...)
	b = append(b, `,"dtmf":{"digit":"`...)
	e.out = append(b, digit, '"', '}', '}')
	return Text, e.out, true
}

// Stop renders stop: the caller hung up ("callended").
func (e *exotelBot) Stop() (MessageType, []byte, bool) {
	b := append(e.open("stop"), e.idMember...)
	b = append(b, `,"stop":{"call_sid":`...)
	b = appendQuoted(b, e.call.CallID)
	b = append(b, `,"account_sid":`...)
	b = appendQuoted(b, e.call.AccountID)
	e.out = append(b, `,"reason":"callended"}}`...)
	return Text, e.out, true
}
