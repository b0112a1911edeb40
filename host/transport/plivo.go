package transport

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/voxhost/voxhost/host/codec"
)

const plivoName = "plivo"

// Plivo returns the Plivo audio streaming protocol of a bidirectional
// <Stream> (bidirectional="true"), as documented at
// https://www.plivo.com/docs/voice/audio-streaming/audio-streaming (the
// "Stream Event Protocol") and https://plivo.com/docs/voice/xml/the-stream-element.
// Plivo sends JSON text messages only: start (streamId, callId,
// accountId, tracks and mediaFormat inside; extra_headers beside it), then
// media (base64 audio in the stream's contentType), dtmf, playedStream (a
// checkpoint the host sent, once the audio before it has played) and
// clearedAudio (the acknowledgement of a clearAudio). The stream ends with
// the socket's close; there is no stop message. The host answers with
// playAudio (contentType and sampleRate of the stream), checkpoint and
// clearAudio, each with the streamId; Plivo has no message for plugin
// events and hangs up with its REST API, so Event and Hangup render
// nothing.
//
// The stream's format is mediaFormat's: audio/x-mulaw at 8 kHz or
// audio/x-l16 at 8 or 16 kHz (little-endian, as "raw audio" is), μ-law
// when the start has none. Custom parameters come from extra_headers, the
// <Stream> element's extraHeaders: "k1=v1;k2=v2" (or with commas, as older
// pages write it), or a JSON object of strings; "pipeline=NAME" picks a
// route.
func Plivo() Protocol { return plivo }

// plivo is Twilio's shape with Plivo's names: playAudio, checkpoint and
// clearAudio to Plivo, playedStream and clearedAudio back, a mark's name
// at the top level and numbers as numbers.
var plivo = newJSONCarrier(jsonCarrier{
	// Plivo queues what it is sent and answers a checkpoint with
	// playedStream once the audio before it has played; "playedStream will
	// only be emitted if the preceding events were played successfully",
	// so checkpoints queued behind a clearAudio never come back.
	endpoint:        endpoint{name: plivoName, path: "/plivo", buffers: true},
	carrier:         "Plivo",
	clearDropsMarks: true,
	sends:           jsonEvents{media: "media", mark: "playedStream"},
	takes:           jsonEvents{media: "playAudio", mark: "checkpoint", clear: "clearAudio"},
	cleared:         "clearedAudio",
	flatMark:        true,
	id:              "streamId",
	seqNumber:       true,
	format:          codec.Telephony,
	checkFormat:     checkPlivoFormat,
	start:           plivoStart,
	mediaMembers:    appendPlivoMedia,
	newBot:          func(b carrierBot) BotSession { return &plivoBot{carrierBot: b} },
})

func init() {
	RegisterProtocol(plivo)
	RegisterDialect(plivo)
}

// plivoStart is what the host reads of a start message.
type plivoStartMsg struct {
	Start *struct {
		CallID      string   `json:"callId"`
		StreamID    string   `json:"streamId"`
		AccountID   string   `json:"accountId"`
		Tracks      []string `json:"tracks"`
		MediaFormat *struct {
			Encoding   string  `json:"encoding"`
			SampleRate jsonInt `json:"sampleRate"`
		} `json:"mediaFormat"`
	} `json:"start"`
	ExtraHeaders json.RawMessage `json:"extra_headers"`
}

func plivoStart(s *jsonSession, msg []byte) (*Start, error) {
	var m plivoStartMsg
	if err := decodeMessage(plivoName, "start", msg, &m); err != nil {
		return nil, err
	}
	st := m.Start
	switch {
	case st == nil:
		return nil, protocolErrorf(plivoName, "start message without a start object")
	case st.StreamID == "":
		return nil, protocolErrorf(plivoName, "start message without start.streamId")
	}
	params, err := rawParams(m.ExtraHeaders, ";,")
	if err != nil {
		return nil, protocolErrorf(plivoName, "bad extra_headers: %v", err)
	}
	if err := checkCarrierStart(plivoName, params, "extra_headers", st.Tracks,
		[2]string{"start.streamId", st.StreamID}, [2]string{"start.callId", st.CallID}, [2]string{"start.accountId", st.AccountID}); err != nil {
		return nil, err
	}
	f := codec.Telephony
	if mf := st.MediaFormat; mf != nil {
		typ, rate := mediaType(mf.Encoding)
		f.Rate = mf.SampleRate.or(max(rate, 8000))
		known := true
		switch typ {
		case "audio/x-mulaw":
		case "audio/x-l16":
			f.Encoding = codec.L16
		default:
			known = false
		}
		if !known || f.Check() != nil {
			return nil, unsupportedFormat(plivoName, "unsupported mediaFormat %s at %d Hz; voxhost takes audio/x-mulaw at 8000 Hz or audio/x-l16 at 8000 or 16000 Hz",
				excerpt(mf.Encoding), f.Rate)
		}
	}
	s.begin(st.StreamID, f, f)
	return &Start{StreamID: st.StreamID, CallID: st.CallID, AccountID: st.AccountID, Tracks: st.Tracks, Params: params}, nil
}

// plivoContentType names a format as Plivo's contentType does.
func plivoContentType(f codec.Format) string {
	if f.Encoding == codec.L16 {
		return "audio/x-l16"
	}
	return EncodingMulaw
}

// appendPlivoMedia appends the members of playAudio's media before its
// payload: the stream's contentType and sampleRate.
func appendPlivoMedia(b []byte, f codec.Format) []byte {
	b = append(b, `"contentType":"`...)
	b = append(b, plivoContentType(f)...)
	b = append(b, `","sampleRate":`...)
	b = strconv.AppendInt(b, int64(f.Rate), 10)
	return append(b, ',')
}

// The plivo dialect: voxhost speaks Plivo's stream event protocol to the
// bot as Plivo speaks it to a <Stream> URL, so a bot written for Plivo
// (pipecat's PlivoFrameSerializer) runs behind voxhost unchanged.
//
// To the bot: start (callId = the call's id, streamId, accountId, tracks
// ["inbound"], mediaFormat of the leg; extra_headers of the call's
// parameters as "k=v;k2=v2", escaped as a query is), media (track
// "inbound", chunk counted from 1, timestamp the Unix ms the audio starts
// at), dtmf, playedStream (the bot's checkpoints, once played or cleared)
// and clearedAudio (after the bot's clearAudio); every message counts up
// in sequenceNumber from 1, a number as Plivo's are. The caller's hang-up
// is the socket's close: Plivo sends no stop. From the bot: playAudio
// (its audio in the leg's format; its contentType is not checked),
// checkpoint and clearAudio; anything else, sendDTMF among them, is
// ignored.

// checkPlivoFormat takes Plivo's formats: μ-law at 8 kHz, L16 at 8 or 16 kHz.
func checkPlivoFormat(f codec.Format) error {
	if f != codec.Telephony && (f.Encoding != codec.L16 || f.Rate != 8000 && f.Rate != 16000) {
		return errFormat(plivoName, f, "μ-law at 8000 Hz (audio/x-mulaw) or L16 at 8000 or 16000 Hz (audio/x-l16)")
	}
	return nil
}

type plivoBot struct {
	carrierBot
	epochMs int64 // the Unix ms the stream opened at
}

// Open sends start.
func (p *plivoBot) Open(send func(MessageType, []byte) error) error {
	p.epochMs = time.Now().UnixMilli()
	b := p.open("start")
	b = append(b, `,"start":{"callId":`...)
	b = appendQuoted(b, p.call.CallID)
	b = append(b, `,"streamId":`...)
	b = append(b, p.sid...)
	b = append(b, `,"accountId":`...)
	b = appendQuoted(b, p.call.AccountID)
	b = append(b, `,"tracks":["inbound"],"mediaFormat":{"encoding":"`...)
	b = append(b, plivoContentType(p.format)...)
	b = append(b, `","sampleRate":`...)
	b = strconv.AppendInt(b, int64(p.format.Rate), 10)
	b = append(b, `}},"extra_headers":`...)
	b = appendQuoted(b, plivoExtraHeaders(p.call.Params))
	p.out = append(b, '}')
	return send(Text, p.out)
}

// plivoExtraHeaders writes params as extraHeaders arrive: "k=v;k2=v2", in
// key order, each escaped as in a query.
func plivoExtraHeaders(params map[string]string) string {
	var b []byte
	for i, k := range slices.Sorted(maps.Keys(params)) {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, url.QueryEscape(k)...)
		b = append(b, '=')
		b = append(b, url.QueryEscape(params[k])...)
	}
	return string(b)
}

// Audio renders a media message of the inbound track.
func (p *plivoBot) Audio(audio []byte) (MessageType, []byte) {
	p.chunk++
	b := append(p.openMedia(), p.idMember...)
	b = append(b, `,"media":{"track":"inbound","timestamp":`...)
	b = appendCount(b, p.epochMs+p.sentMs())
	b = append(b, `,"chunk":`...)
	b = strconv.AppendInt(b, p.chunk, 10)
	b = append(b, `,"payload":"`...)
	b = base64.StdEncoding.AppendEncode(b, audio)
	p.out = append(b, `"}}`...)
	p.sent += int64(len(audio))
	return Text, p.out
}

// DTMF renders a dtmf message; there is none for a byte that is not a key.
func (p *plivoBot) DTMF(digit byte) (MessageType, []byte, bool) {
	if !validDigit(digit) {
		return 0, nil, false
	}
	b := append(p.open("dtmf"), p.idMember...)
	b = append(b, `,"dtmf":{"digit":"`...)
	p.out = append(b, digit, '"', '}', '}')
	return Text, p.out, true
}

// Stop renders nothing: Plivo ends a stream by closing the socket.
func (p *plivoBot) Stop() (MessageType, []byte, bool) { return 0, nil, false }
