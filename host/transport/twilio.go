package transport

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/voxhost/voxhost/host/codec"
)

const twilioName = "twilio"

// Twilio returns the Twilio Media Streams protocol of a bidirectional
// stream (<Connect><Stream>), as documented at
// https://www.twilio.com/docs/voice/media-streams/websocket-messages.
// Twilio sends only JSON text messages: connected, then start, then media
// (base64 μ-law, 20 ms each), dtmf, mark and finally stop. The host answers
// with media, mark and clear messages addressed by the stream's streamSid;
// Twilio accepts nothing else, so Event renders nothing.
func Twilio() Protocol { return twilio{} }

func init() { RegisterProtocol(twilio{}) }

type twilio struct{}

func (twilio) Name() string { return twilioName }

func (twilio) StartsOnConnect() bool { return false }

func (twilio) Buffers() bool { return true }

func (twilio) Path() string { return "/twilio" }

// NewSession makes a session for μ-law at 8 kHz, Twilio's only format.
func (twilio) NewSession(cfg SessionConfig) (Session, error) {
	maxAudio := cfg.maxAudio(codec.Telephony)
	enc := base64.StdEncoding.EncodedLen(maxAudio)
	return &twilioSession{
		maxAudio: maxAudio,
		sid:      []byte(`""`),
		audio:    payloadBuffer(maxAudio),
		// Room for a full frame and the longest streamSid start accepts,
		// quoted, so rendering media never grows the buffer.
		out: make([]byte, 0, len(twilioMediaHead)+MaxIDBytes+2+len(twilioMediaMid)+enc+len(twilioMediaTail)),
	}, nil
}

// The parts of an outbound media message around its streamSid and payload.
// Twilio's docs give these members only: no sequenceNumber, chunk or
// timestamp is sent back.
const (
	twilioMediaHead = `{"event":"media","streamSid":`
	twilioMediaMid  = `,"media":{"payload":"`
	twilioMediaTail = `"}}`
)

type twilioSession struct {
	noHangup
	maxAudio int
	started  bool
	sid      []byte // the stream's streamSid as a JSON string
	audio    []byte // the decoded payload of the last media message
	scratch  []byte // a payload with its JSON escapes resolved
	out      []byte // the last rendered message
}

// twilioMedia is what the scanner picks out of a message: string tokens
// viewing the message, nil when the member is absent or not a string. A
// repeated member counts once, the last time, as with encoding/json.
type twilioMedia struct {
	hasEvent bool
	event    []byte
	isObject bool // the media member is an object
	payload  []byte
	track    []byte
}

// scan walks msg, which must be one JSON object, and returns why it is
// not, or "".
func (f *twilioMedia) scan(msg []byte) (reason string) {
	s := scanner{buf: msg}
	return s.finish(s.members(func(key []byte) { f.member(&s, key) }))
}

// dispatchError says why a scanned message is not one to dispatch on its
// event.
func (f *twilioMedia) dispatchError(reason string) error {
	return dispatchError(twilioName, reason, "event", `message without an "event" member`, f.hasEvent, f.event)
}

func (f *twilioMedia) member(s *scanner, key []byte) {
	switch {
	case textIs(key, "event"):
		f.hasEvent = true
		f.event, _ = s.text()
	case textIs(key, "media"):
		f.payload, f.track = nil, nil
		f.isObject = s.members(func(key []byte) {
			switch {
			case textIs(key, "payload"):
				f.payload, _ = s.text()
			case textIs(key, "track"):
				f.track, _ = s.text()
			default:
				s.skip()
			}
		})
		if !f.isObject {
			s.skip()
		}
	default:
		s.skip()
	}
}

func (t *twilioSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	if typ != Text {
		return &ProtocolError{Protocol: twilioName, Reason: "binary message on a Twilio stream: Twilio sends JSON text messages only", Unsupported: true}
	}
	var f twilioMedia
	if err := f.dispatchError(f.scan(msg)); err != nil {
		return err
	}
	switch {
	case textIs(f.event, "media"):
		return t.media(&f, in)
	case textIs(f.event, "start"):
		return t.start(msg, in)
	case textIs(f.event, "dtmf"):
		return decodeCarrierDTMF(twilioName, msg, in)
	case textIs(f.event, "mark"):
		return decodeCarrierMark(twilioName, msg, in)
	case textIs(f.event, "stop"):
		in.Kind = KindStop
	}
	return nil
}

// media decodes the payload of a media message into the session's buffer.
func (t *twilioSession) media(f *twilioMedia, in *Inbound) error {
	switch {
	case !t.started:
		return protocolErrorf(twilioName, "media before start: Twilio sends a start message first")
	case !f.isObject:
		return protocolErrorf(twilioName, "media message without a media object")
	case f.track != nil && textIs(f.track, "outbound"):
		return nil // the far end's own audio, on a stream that sends both tracks
	case f.payload == nil:
		return protocolErrorf(twilioName, "media message without a string media.payload")
	}
	n, err := decodeBase64Token(twilioName, "media payload", f.payload, t.audio, &t.scratch, t.maxAudio)
	if err != nil {
		return err
	}
	if err := checkAudio(twilioName, n, t.maxAudio, codec.Telephony); err != nil {
		return err
	}
	in.Kind, in.Audio = KindAudio, t.audio[:n]
	return nil
}

// decodeBase64Token decodes the base64 text of the JSON string token q into
// dst and returns the bytes written, without allocating: dst holds any
// payload of maxAudio bytes (payloadBuffer), and scratch keeps the text of
// a token whose JSON escapes must be resolved first. What names the member
// in errors, e.g. "media payload". Twilio's media and OpenAI's audio deltas
// both carry audio this way.
func decodeBase64Token(protocol, what string, q, dst []byte, scratch *[]byte, maxAudio int) (int, error) {
	b64 := q[1 : len(q)-1]
	if bytes.IndexByte(b64, '\\') >= 0 {
		*scratch = appendText((*scratch)[:0], q)
		b64 = *scratch
	}
	if base64.StdEncoding.DecodedLen(len(b64)) > len(dst) {
		// Too long to decode into the buffer, which holds any allowed frame;
		// the size is what well-formed base64 of this length decodes to.
		size := len(b64) / 4 * 3
		for _, c := range b64[len(b64)-2:] {
			if c == '=' {
				size--
			}
		}
		return 0, tooLong(protocol, size, maxAudio)
	}
	n, err := base64.StdEncoding.Decode(dst, b64)
	if err != nil {
		at, _ := err.(base64.CorruptInputError) // the only error Decode returns
		return 0, protocolErrorf(protocol, "bad base64 in %s at byte %d", what, int64(at))
	}
	return n, nil
}

// payloadBuffer makes the buffer decodeBase64Token decodes into: a payload
// that encodes at most maxAudio bytes decodes into this many at most, so
// canonical base64 of an allowed frame always fits.
func payloadBuffer(maxAudio int) []byte {
	return make([]byte, base64.StdEncoding.DecodedLen(base64.StdEncoding.EncodedLen(maxAudio)))
}

// twilioStart is what the host reads of a start message. Twilio repeats
// streamSid at the top level, which stands in if start.streamSid is absent.
type twilioStart struct {
	StreamSid string `json:"streamSid"`
	Start     *struct {
		StreamSid        string            `json:"streamSid"`
		AccountSid       string            `json:"accountSid"`
		CallSid          string            `json:"callSid"`
		Tracks           []string          `json:"tracks"`
		CustomParameters map[string]string `json:"customParameters"`
		MediaFormat      *struct {
			Encoding   string `json:"encoding"`
			SampleRate int    `json:"sampleRate"`
			Channels   int    `json:"channels"`
		} `json:"mediaFormat"`
	} `json:"start"`
}

func (t *twilioSession) start(msg []byte, in *Inbound) error {
	var m twilioStart
	if err := json.Unmarshal(msg, &m); err != nil {
		return protocolErrorf(twilioName, "bad start message: %v", err)
	}
	st := m.Start
	if st == nil {
		return protocolErrorf(twilioName, "start message without a start object")
	}
	sid := st.StreamSid
	if sid == "" {
		sid = m.StreamSid
	}
	if sid == "" {
		return protocolErrorf(twilioName, "start message without start.streamSid")
	}
	if err := checkStart(sid, st.CallSid, st.AccountSid, st.Tracks, st.CustomParameters); err != nil {
		return limitError(twilioName, err)
	}
	mf := st.MediaFormat
	if mf == nil {
		return protocolErrorf(twilioName, "start message without start.mediaFormat")
	}
	if mf.Encoding != EncodingMulaw || mf.SampleRate != codec.Telephony.Rate || mf.Channels != 1 {
		err := protocolErrorf(twilioName, "unsupported media format %s at %d Hz, %d channel(s); voxhost takes %q at %d Hz, 1 channel",
			excerpt(mf.Encoding), mf.SampleRate, mf.Channels, EncodingMulaw, codec.Telephony.Rate)
		err.Unsupported = true
		return err
	}
	t.started, t.sid = true, appendQuoted(nil, sid)
	in.Kind = KindStart
	in.Start = &Start{
		StreamID:  sid,
		CallID:    st.CallSid,
		AccountID: st.AccountSid,
		Tracks:    st.Tracks,
		Params:    st.CustomParameters,
	}
	return nil
}

// checkStart applies the bounds of limits.go to what the host keeps of a
// start message.
func checkStart(streamSid, callSid, accountSid string, tracks []string, params map[string]string) error {
	for _, id := range []struct{ what, id string }{
		{"start.streamSid", streamSid}, {"start.callSid", callSid}, {"start.accountSid", accountSid},
	} {
		if err := CheckID(id.what, id.id); err != nil {
			return err
		}
	}
	if len(tracks) > MaxTracks {
		return fmt.Errorf("start.tracks lists %d tracks, more than %d", len(tracks), MaxTracks)
	}
	for i, tr := range tracks {
		if err := CheckID(fmt.Sprintf("start.tracks[%d]", i), tr); err != nil {
			return err
		}
	}
	return CheckParams("start.customParameters", params)
}

// Format is μ-law at 8 kHz: Twilio carries nothing else.
func (t *twilioSession) Format() codec.Format { return codec.Telephony }

// Audio renders a media message. Before start its streamSid is empty,
// which Twilio would drop, but the call loop only answers audio, and Decode
// accepts none before start.
func (t *twilioSession) Audio(ulaw []byte) (MessageType, []byte) {
	n := base64.StdEncoding.EncodedLen(len(ulaw))
	b := append(t.out[:0], twilioMediaHead...)
	b = append(b, t.sid...)
	b = append(b, twilioMediaMid...)
	b = slices.Grow(b, n+len(twilioMediaTail))
	base64.StdEncoding.Encode(b[len(b):len(b)+n], ulaw)
	b = append(b[:len(b)+n], twilioMediaTail...)
	t.out = b
	return Text, b
}

// Mark renders a mark message; Twilio returns it once the audio sent before
// it has played. There is none before start.
func (t *twilioSession) Mark(name string) (MessageType, []byte, bool) {
	if !t.started {
		return 0, nil, false
	}
	b := append(t.out[:0], `{"event":"mark","streamSid":`...)
	b = append(b, t.sid...)
	b = append(b, `,"mark":{"name":`...)
	b = appendQuoted(b, name)
	t.out = append(b, "}}"...)
	return Text, t.out, true
}

// Clear renders a clear message, which makes Twilio drop the audio it has
// buffered and return the marks queued behind it. There is none before
// start.
func (t *twilioSession) Clear() (MessageType, []byte, bool) {
	if !t.started {
		return 0, nil, false
	}
	b := append(t.out[:0], `{"event":"clear","streamSid":`...)
	b = append(b, t.sid...)
	t.out = append(b, '}')
	return Text, t.out, true
}

// Event renders nothing: Twilio rejects messages other than media, mark and
// clear, so the server logs plugin events instead.
func (t *twilioSession) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}
