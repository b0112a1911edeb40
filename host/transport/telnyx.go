package transport

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/codec"
)

const telnyxName = "telnyx"

// telnyxCodecQuery is the query parameter of the stream_url that says what
// the stream was started with as stream_bidirectional_codec, the codec
// Telnyx takes back; Telnyx's own name, so that one value is copied to
// both places.
const telnyxCodecQuery = "stream_bidirectional_codec"

// Telnyx returns the Telnyx media streaming protocol of a bidirectional
// stream (stream_bidirectional_mode "rtp"), as documented at
// https://developers.telnyx.com/docs/voice/programmable-voice/media-streaming
// and in the AsyncAPI page "Stream call media over WebSocket". Telnyx
// sends JSON text messages only: connected, then start (stream_id at the
// top level, call_control_id, from, to, custom_parameters and
// media_format inside), media (base64 RTP payloads without headers), dtmf,
// mark (a mark the host sent, once the media before it has played, or at
// once when none is queued; a clear returns the queued ones), error and
// stop. The host answers with media, mark and clear, which carry no
// stream id; Telnyx has no message for plugin events or for hanging up
// (that is its REST API), so Event and Hangup render nothing.
//
// The stream's format is media_format's: PCMU or PCMA at 8 kHz, or L16 at
// 8, 16 or 24 kHz, whose RTP payload is in network byte order (RFC 3551)
// and is swapped to and from the host's little-endian samples. Telnyx
// takes back what the stream was started with as
// stream_bidirectional_codec, PCMU unless set: the host sends PCMU when
// the stream is at 8 kHz and L16 at the stream's rate otherwise, unless
// the stream_url says ?stream_bidirectional_codec=PCMU|PCMA|L16. A call
// that arrives in PCMA (Europe) and takes PCMU back is transcoded sample
// for sample; the rate is the same both ways.
func Telnyx() Protocol { return telnyx }

// telnyx is Twilio's shape with Telnyx's names: no stream id in what the
// host sends (so a mark or clear may go before start), L16 in network byte
// order, a send codec of its own and an error message.
var telnyx = newJSONCarrier(jsonCarrier{
	// Telnyx plays what it is sent in order and returns each mark once the
	// media before it has finished; a clear returns the queued ones.
	endpoint:    endpoint{name: telnyxName, path: "/telnyx", buffers: true},
	carrier:     "Telnyx",
	id:          "stream_id",
	bareTakes:   true,
	seqKey:      "sequence_number",
	format:      codec.Telephony,
	networkL16:  true,
	checkFormat: codec.Format.Check, // PCMU and PCMA at 8 kHz, L16 at 8, 16 and 24 kHz
	connect:     telnyxConnect,
	start:       telnyxStart,
	events:      []jsonEvent{{event: "error", decode: decodeTelnyxError}},
	newBot:      func(b carrierBot) BotSession { return &telnyxBot{b} },
})

func init() {
	RegisterProtocol(telnyx)
	RegisterDialect(telnyx)
}

// telnyxConnect reads ?stream_bidirectional_codec=; the stream's own
// format comes with its start message.
func telnyxConnect(s *jsonSession) error {
	if q := s.cfg.Query.Get(telnyxCodecQuery); q != "" {
		enc, ok := telnyxEncoding(q)
		if !ok {
			return fmt.Errorf("telnyx: %s=%s is not a codec voxhost sends (want PCMU, PCMA or L16)", telnyxCodecQuery, excerpt(q))
		}
		s.sendSet, s.send.Encoding = true, enc
	}
	return nil
}

// telnyxEncoding reads a codec as Telnyx names it.
func telnyxEncoding(s string) (codec.Encoding, bool) {
	switch strings.ToUpper(s) {
	case "PCMU":
		return codec.Mulaw, true
	case "PCMA":
		return codec.Alaw, true
	case "L16":
		return codec.L16, true
	}
	return 0, false
}

// telnyxEncodingName names an encoding as Telnyx does.
func telnyxEncodingName(e codec.Encoding) string {
	switch e {
	case codec.Alaw:
		return "PCMA"
	case codec.L16:
		return "L16"
	}
	return "PCMU"
}

// telnyxStart is what the host reads of a start message.
type telnyxStartMsg struct {
	StreamID string `json:"stream_id"`
	Start    *struct {
		UserID           string             `json:"user_id"`
		CallControlID    string             `json:"call_control_id"`
		From             string             `json:"from"`
		To               string             `json:"to"`
		CustomParameters map[string]string  `json:"custom_parameters"`
		MediaFormat      *telnyxMediaFormat `json:"media_format"`
	} `json:"start"`
}

func telnyxStart(s *jsonSession, msg []byte) (*Start, error) {
	var m telnyxStartMsg
	if err := decodeMessage(telnyxName, "start", msg, &m); err != nil {
		return nil, err
	}
	st := m.Start
	switch {
	case st == nil:
		return nil, protocolErrorf(telnyxName, "start message without a start object")
	case m.StreamID == "":
		return nil, protocolErrorf(telnyxName, "start message without stream_id")
	}
	params := withFromTo(st.CustomParameters, st.From, st.To)
	if err := checkCarrierStart(telnyxName, params, "start.custom_parameters", nil,
		[2]string{"stream_id", m.StreamID}, [2]string{"start.call_control_id", st.CallControlID}, [2]string{"start.user_id", st.UserID}); err != nil {
		return nil, err
	}
	f, err := telnyxFormat(st.MediaFormat)
	if err != nil {
		return nil, err
	}
	send := s.send
	if !s.sendSet {
		send.Encoding = codec.Mulaw // Telnyx's default, at 8 kHz
		if f.Rate != 8000 {
			send.Encoding = codec.L16
		}
	}
	send.Rate = f.Rate
	if send.Check() != nil {
		return nil, unsupportedFormat(telnyxName, "the stream is %s, but %s=%s is carried at 8000 Hz only and voxhost sends at the stream's rate: start the stream with stream_bidirectional_codec L16 and ?%s=L16 on its stream_url",
			f, telnyxCodecQuery, telnyxEncodingName(send.Encoding), telnyxCodecQuery)
	}
	s.begin(m.StreamID, f, send)
	return &Start{StreamID: m.StreamID, CallID: st.CallControlID, AccountID: st.UserID, Params: params}, nil
}

// telnyxMediaFormat is a start's media_format.
type telnyxMediaFormat struct {
	Encoding   string  `json:"encoding"`
	SampleRate jsonInt `json:"sample_rate"`
	Channels   jsonInt `json:"channels"`
}

// telnyxFormat reads a start's media_format: PCMU when it has none, as
// Telnyx streams by default.
func telnyxFormat(mf *telnyxMediaFormat) (codec.Format, error) {
	if mf == nil {
		return codec.Telephony, nil
	}
	enc, ok := telnyxEncoding(mf.Encoding)
	f := codec.Format{Encoding: enc, Rate: mf.SampleRate.or(8000)}
	if channels := mf.Channels.or(1); !ok || channels != 1 || f.Check() != nil {
		return f, unsupportedFormat(telnyxName, "unsupported media_format %s at %d Hz, %d channel(s); voxhost takes PCMU or PCMA at 8000 Hz, or L16 at 8000, 16000 or 24000 Hz, 1 channel",
			excerpt(mf.Encoding), f.Rate, channels)
	}
	return f, nil
}

// decodeTelnyxError reads an error frame: Telnyx's report of a problem with
// what it was sent (malformed_frame, invalid_media, rate_limit_reached),
// which does not end the stream.
func decodeTelnyxError(msg []byte, in *Inbound) error {
	var m struct {
		Payload *struct {
			Code   jsonInt `json:"code"`
			Title  string  `json:"title"`
			Detail string  `json:"detail"`
		} `json:"payload"`
	}
	if err := decodeMessage(telnyxName, "error", msg, &m); err != nil {
		return err
	}
	if m.Payload == nil {
		return protocolErrorf(telnyxName, "error message without a payload object")
	}
	p := m.Payload
	in.Kind, in.Text = KindError, cutText(fmt.Sprintf("error %d %s: %s", p.Code.n, p.Title, p.Detail), maxBotErrorText)
	return nil
}

// The telnyx dialect: voxhost speaks Telnyx media streaming to the bot as
// Telnyx speaks it to a stream_url, so a bot written for Telnyx (pipecat's
// TelnyxFrameSerializer) runs behind voxhost unchanged.
//
// To the bot: connected, start (stream_id, call_control_id = the call's
// id, user_id = its account, from and to and custom_parameters from the
// call's parameters, media_format of the leg), media (track "inbound",
// counted chunks, the ms of audio before each as timestamp), dtmf, mark
// (the bot's marks, once played or cleared) and stop; every message but
// connected counts up in sequence_number from "1", as Telnyx's do. From
// the bot: media, mark and clear; anything else is ignored. L16 goes both
// ways in network byte order. As with Twilio, a bot learns of a barge-in
// the host detects only by its marks coming back.
type telnyxBot struct{ carrierBot }

// Open sends connected, then start.
func (t *telnyxBot) Open(send func(MessageType, []byte) error) error {
	t.out = append(t.out[:0], `{"event":"connected","version":"1.0.0"}`...)
	if err := send(Text, t.out); err != nil {
		return err
	}
	from, to, params := splitFromTo(t.call.Params)
	b := append(t.open("start"), t.idMember...)
	b = append(b, `,"start":{"user_id":`...)
	b = appendQuoted(b, t.call.AccountID)
	b = append(b, `,"call_control_id":`...)
	b = appendQuoted(b, t.call.CallID)
	b = append(b, `,"from":`...)
	b = appendQuoted(b, from)
	b = append(b, `,"to":`...)
	b = appendQuoted(b, to)
	b = append(b, `,"custom_parameters":`...)
	b = appendParams(b, params)
	b = append(b, `,"media_format":{"encoding":"`...)
	b = append(b, telnyxEncodingName(t.format.Encoding)...)
	b = append(b, `","sample_rate":`...)
	b = strconv.AppendInt(b, int64(t.format.Rate), 10)
	t.out = append(b, `,"channels":1}}}`...)
	return send(Text, t.out)
}

// Audio renders a media message of the inbound track, as Twilio's.
func (t *telnyxBot) Audio(audio []byte) (MessageType, []byte) { return t.trackedMedia(t.wire(audio)) }

// DTMF renders a dtmf message, stamped with occurred_at as Telnyx does;
// there is none for a byte that is not a key.
func (t *telnyxBot) DTMF(digit byte) (MessageType, []byte, bool) {
	if !validDigit(digit) {
		return 0, nil, false
	}
	t.seq++
	b := append(t.out[:0], `{"event":"dtmf","stream_id":`...)
	b = append(b, t.sid...)
	b = append(b, `,"occurred_at":"`...)
	b = time.Now().UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
	b = append(b, `","sequence_number":`...)
	b = appendCount(b, t.seq)
	b = append(b, `,"dtmf":{"digit":"`...)
	t.out = append(b, digit, '"', '}', '}')
	return Text, t.out, true
}

// Stop renders stop, with the ids of start.
func (t *telnyxBot) Stop() (MessageType, []byte, bool) {
	b := t.open("stop")
	b = append(b, `,"stop":{"user_id":`...)
	b = appendQuoted(b, t.call.AccountID)
	b = append(b, `,"call_control_id":`...)
	b = appendQuoted(b, t.call.CallID)
	b = append(append(b, '}'), t.idMember...)
	t.out = append(b, '}')
	return Text, t.out, true
}
