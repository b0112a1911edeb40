package transport

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
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
func Plivo() Protocol { return plivo{} }

func init() {
	RegisterProtocol(plivo{})
	RegisterDialect(plivoDialect{})
}

type plivo struct{}

func (plivo) Name() string { return plivoName }

func (plivo) Path() string { return "/plivo" }

func (plivo) StartsOnConnect() bool { return false }

// Buffers is true: Plivo queues what it is sent and answers a checkpoint
// with playedStream once the audio before it has played.
func (plivo) Buffers() bool { return true }

// ClearDropsMarks is true: "playedStream will only be emitted if the
// preceding events were played successfully", so checkpoints queued
// behind a clearAudio never come back.
func (plivo) ClearDropsMarks() bool { return true }

// NewSession makes a session whose format comes with the start message.
func (plivo) NewSession(cfg SessionConfig) (Session, error) {
	cfg.maxAudio(codec.Telephony) // a limit no frame could pass is caught here
	return &plivoSession{
		carrierStream: carrierStream{protocol: plivoName, carrier: "Plivo", cfg: cfg, format: codec.Telephony},
		sid:           []byte(`""`),
	}, nil
}

type plivoSession struct {
	noHangup
	carrierStream
	sid []byte // the streamId as a JSON string
}

func (p *plivoSession) Format() codec.Format { return p.format }

func (p *plivoSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	f, err := p.scan(typ, msg)
	if err != nil {
		return err
	}
	switch {
	case textIs(f.event, "media"):
		return p.media(&f, in)
	case textIs(f.event, "start"):
		return p.start(msg, in)
	case textIs(f.event, "dtmf"):
		return decodeCarrierDTMF(plivoName, msg, in)
	case textIs(f.event, "playedStream"):
		return decodeNamed(plivoName, "playedStream", msg, in)
	case textIs(f.event, "stop"):
		in.Kind = KindStop // not in Plivo's pages, but as plainly meant
	}
	return nil
}

// decodeNamed reads the top-level name of Plivo's playedStream or
// checkpoint as a KindMark.
func decodeNamed(protocol, event string, msg []byte, in *Inbound) error {
	var m struct {
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return protocolErrorf(protocol, "bad %s message: %v", event, err)
	}
	if m.Name == nil {
		return protocolErrorf(protocol, "%s message without a string name", event)
	}
	return markInbound(protocol, "name", *m.Name, in)
}

// plivoStart is what the host reads of a start message.
type plivoStart struct {
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

func (p *plivoSession) start(msg []byte, in *Inbound) error {
	var m plivoStart
	if err := json.Unmarshal(msg, &m); err != nil {
		return protocolErrorf(plivoName, "bad start message: %v", err)
	}
	st := m.Start
	switch {
	case st == nil:
		return protocolErrorf(plivoName, "start message without a start object")
	case st.StreamID == "":
		return protocolErrorf(plivoName, "start message without start.streamId")
	}
	params, err := rawParams(m.ExtraHeaders, ";,")
	if err != nil {
		return protocolErrorf(plivoName, "bad extra_headers: %v", err)
	}
	if err := checkCarrierStart(plivoName, params, "extra_headers",
		[2]string{"start.streamId", st.StreamID}, [2]string{"start.callId", st.CallID}, [2]string{"start.accountId", st.AccountID}); err != nil {
		return err
	}
	if err := checkTracks(plivoName, st.Tracks); err != nil {
		return err
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
			return unsupportedFormat(plivoName, "unsupported mediaFormat %s at %d Hz; voxhost takes audio/x-mulaw at 8000 Hz or audio/x-l16 at 8000 or 16000 Hz",
				excerpt(mf.Encoding), f.Rate)
		}
	}
	p.begin(f)
	p.sid = appendQuoted(nil, st.StreamID)
	in.Kind = KindStart
	in.Start = &Start{StreamID: st.StreamID, CallID: st.CallID, AccountID: st.AccountID, Tracks: st.Tracks, Params: params}
	return nil
}

// checkTracks bounds the tracks a start message lists.
func checkTracks(protocol string, tracks []string) error {
	if len(tracks) > MaxTracks {
		return limitError(protocol, fmt.Errorf("start.tracks lists %d tracks, more than %d", len(tracks), MaxTracks))
	}
	for i, tr := range tracks {
		if err := CheckID("start.tracks["+strconv.Itoa(i)+"]", tr); err != nil {
			return limitError(protocol, err)
		}
	}
	return nil
}

// plivoContentType names a format as Plivo's contentType does.
func plivoContentType(f codec.Format) string {
	if f.Encoding == codec.L16 {
		return "audio/x-l16"
	}
	return EncodingMulaw
}

// Audio renders a playAudio message in the stream's format.
func (p *plivoSession) Audio(frame []byte) (MessageType, []byte) {
	b := append(p.out[:0], `{"event":"playAudio","media":{"contentType":"`...)
	b = append(b, plivoContentType(p.format)...)
	b = append(b, `","sampleRate":`...)
	b = strconv.AppendInt(b, int64(p.format.Rate), 10)
	b = append(b, `,"payload":"`...)
	b = base64.StdEncoding.AppendEncode(b, frame)
	b = append(b, `"},"streamId":`...)
	b = append(b, p.sid...)
	p.out = append(b, '}')
	return Text, p.out
}

// Mark renders a checkpoint, which Plivo answers with playedStream once
// the audio before it has played. There is none before start.
func (p *plivoSession) Mark(name string) (MessageType, []byte, bool) {
	if !p.started {
		return 0, nil, false
	}
	p.out = appendStreamName(append(p.out[:0], `{"event":"checkpoint",`...), p.sid, name)
	return Text, p.out, true
}

// appendStreamName ends a message of Plivo's checkpoint and playedStream:
// `"streamId":S,"name":N}`.
func appendStreamName(dst, sid []byte, name string) []byte {
	dst = append(dst, `"streamId":`...)
	dst = append(dst, sid...)
	dst = append(dst, `,"name":`...)
	dst = appendQuoted(dst, name)
	return append(dst, '}')
}

// Clear renders clearAudio: Plivo drops the audio it has queued, and the
// checkpoints behind it. There is none before start.
func (p *plivoSession) Clear() (MessageType, []byte, bool) {
	if !p.started {
		return 0, nil, false
	}
	b := append(p.out[:0], `{"event":"clearAudio","streamId":`...)
	b = append(b, p.sid...)
	p.out = append(b, '}')
	return Text, p.out, true
}

// Event renders nothing: Plivo takes playAudio, checkpoint, clearAudio and
// sendDTMF only.
func (p *plivoSession) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
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
type plivoDialect struct{}

func (plivoDialect) Name() string { return plivoName }

// CheckFormat takes Plivo's formats: μ-law at 8 kHz, L16 at 8 or 16 kHz.
func (plivoDialect) CheckFormat(f codec.Format) error {
	if f != codec.Telephony && (f.Encoding != codec.L16 || f.Rate != 8000 && f.Rate != 16000) {
		return errFormat(plivoName, f, "μ-law at 8000 Hz (audio/x-mulaw) or L16 at 8000 or 16000 Hz (audio/x-l16)")
	}
	return nil
}

func (plivoDialect) NewBotSession(cfg BotConfig) BotSession {
	return &plivoBot{carrierBot: newCarrierBot(plivoName, "streamId", cfg)}
}

type plivoBot struct {
	carrierBot
	epochMs int64 // the Unix ms the stream opened at
}

// open begins a message of the event with the next sequenceNumber, a
// number as Plivo sends it.
func (p *plivoBot) open(event string) []byte {
	p.seq++
	b := append(p.out[:0], `{"event":"`...)
	b = append(b, event...)
	b = append(b, `","sequenceNumber":`...)
	b = strconv.AppendInt(b, p.seq, 10)
	return append(b, ',')
}

// Open sends start.
func (p *plivoBot) Open(send func(MessageType, []byte) error) error {
	p.epochMs = time.Now().UnixMilli()
	b := p.open("start")
	b = append(b, `"start":{"callId":`...)
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
	b := p.open("media")
	b = append(b, `"streamId":`...)
	b = append(b, p.sid...)
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
	b := p.open("dtmf")
	b = append(b, `"streamId":`...)
	b = append(b, p.sid...)
	b = append(b, `,"dtmf":{"digit":"`...)
	p.out = append(b, digit, '"', '}', '}')
	return Text, p.out, true
}

// MarkPlayed renders playedStream for the bot's checkpoint.
func (p *plivoBot) MarkPlayed(name string) (MessageType, []byte, bool) {
	p.out = appendStreamName(p.open("playedStream"), p.sid, name)
	return Text, p.out, true
}

// Interrupted answers the bot's clearAudio with clearedAudio, as Plivo
// does; a barge-in the host detects has no message at Plivo, and a bot
// learns of it by its checkpoints being answered.
func (p *plivoBot) Interrupted(_ int64, byBot bool, send func(MessageType, []byte) error) error {
	if !byBot {
		return nil
	}
	b := p.open("clearedAudio")
	b = append(b, `"streamId":`...)
	b = append(b, p.sid...)
	p.out = append(b, '}')
	return send(Text, p.out)
}

// Event renders a plugin's event as a playedStream named
// "voxhost:PLUGIN:NAME", as the twilio dialect renders one as a mark: the
// only message Plivo sends that carries a name.
func (p *plivoBot) Event(plugin, name string, _ []byte, _ int64) (MessageType, []byte, bool) {
	return p.MarkPlayed("voxhost:" + plugin + ":" + name)
}

// Stop renders nothing: Plivo ends a stream by closing the socket.
func (p *plivoBot) Stop() (MessageType, []byte, bool) { return 0, nil, false }

// Decode reads what a bot sends Plivo: playAudio, checkpoint and
// clearAudio.
func (p *plivoBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	f, err := scanCarrier(plivoName, "Plivo takes", typ, msg)
	if err != nil {
		return err
	}
	switch {
	case textIs(f.event, "playAudio"):
		return p.media(&f, in)
	case textIs(f.event, "checkpoint"):
		return decodeNamed(plivoName, "checkpoint", msg, in)
	case textIs(f.event, "clearAudio"):
		in.Kind = KindClear
	}
	return nil
}
