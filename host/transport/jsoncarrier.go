package transport

import (
	"bytes"
	"encoding/base64"
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

// The JSON-carrier skeleton. Twilio's Media Streams set a shape that
// Telnyx, Exotel and Plivo copied: JSON text messages dispatched on an
// "event" member, base64 audio in media.payload (media.track saying whose
// audio it is), a start message with the stream's ids, format and custom
// parameters, dtmf in dtmf.digit, and marks that come back once the audio
// before them has played. A jsonCarrier is one such carrier as data: its
// names for the messages and the members, its codec rules, its mark and
// clear semantics, and a few hooks for what really is its own (the start
// message, the client role's renderings). From it come both roles: the
// server session a caller's carrier talks to (jsonSession) and the client
// session the host talks to a bot with (carrierBot). A new carrier of this
// shape is one value and its start message: see telnyx.go, or the README's
// "Adding a carrier".

// carrierOverhead bounds what an outbound media message of these carriers
// holds besides its base64 payload: event and member names, a stream id of
// MaxIDBytes quoted, counters of 19 digits and a timestamp. Buffers sized
// with it never grow on the audio path.
const carrierOverhead = 320 + MaxIDBytes

// jsonFields says where a dialect's messages keep what the media path
// reads, so that the scanner picks out those members and no others.
type jsonFields struct {
	kind    string // the member dispatched on, e.g. "event"
	object  string // the object that holds the audio, e.g. "media"
	payload string // its member of base64 audio, e.g. "payload"
	track   string // its member naming whose audio it is, e.g. "track"
}

// twilioFields are Twilio's, which its followers kept.
var twilioFields = jsonFields{kind: "event", object: "media", payload: "payload", track: "track"}

// jsonEvents names the three messages one side of a stream sends on its
// media path, as the value of jsonFields.kind.
type jsonEvents struct {
	media string // audio, e.g. "media" (Plivo's playAudio)
	mark  string // a mark, e.g. "mark" (Plivo's checkpoint, and its playedStream back); "" for none
	clear string // drop the queued audio, e.g. "clear"; "" for none
}

// jsonEvent is a message a carrier sends that the skeleton does not know,
// with what reads it (Telnyx's error).
type jsonEvent struct {
	event  string
	decode func(msg []byte, in *Inbound) error
}

// jsonCarrier is one JSON carrier of Twilio's shape. It is both the
// Protocol of its server role and the Dialect of its client role.
type jsonCarrier struct {
	// endpoint names the carrier in errors, logs, metrics and configs
	// (e.g. "telnyx") and its path (e.g. "/telnyx"); buffers says it plays
	// what it is sent in order and returns each mark once the audio before
	// it has played (Protocol.Buffers). It starts with a start message.
	endpoint
	carrier string // the carrier as people write it, in errors, e.g. "Telnyx"
	// clearDropsMarks: its clear discards the marks queued behind the
	// audio instead of returning them (MarkDropper).
	clearDropsMarks bool

	// fields are where the messages keep their kind and audio; Twilio's
	// (twilioFields) when not set.
	fields jsonFields
	// sends are the carrier's messages, takes the ones it takes: a mark in
	// sends is a mark of takes coming back. Its start, dtmf and stop are
	// "start", "dtmf" and "stop". Twilio's media, mark and clear when not
	// set.
	sends, takes jsonEvents
	// cleared, when set, is the carrier's answer to a clear (Plivo's
	// clearedAudio), which the client role sends a bot after its own.
	cleared string
	// flatMark: a mark's name is a top-level "name" member (Plivo's
	// checkpoint), not Twilio's mark.name.
	flatMark bool
	// id names the stream id member of the carrier's messages and of the
	// host's, unless bareTakes: the host's carry none (Telnyx), and a mark
	// or clear may go before start.
	id        string
	bareTakes bool
	// seqKey names the counter of the carrier's messages,
	// "sequenceNumber" when not set; seqNumber sends it as a JSON number,
	// not a string of digits.
	seqKey    string
	seqNumber bool
	// kindOpen and seqMember are what the client role's messages begin
	// with around their kind: `{"event":"` and `","sequenceNumber":`;
	// mediaOpen is the three with its media message's kind between.
	kindOpen, seqMember, mediaOpen string

	// format is the stream's before start: what connect or the start
	// message may change.
	format codec.Format
	// networkL16: L16 travels in network byte order (RFC 3551), and is
	// swapped to and from the host's little-endian samples both ways.
	networkL16 bool
	// checkFormat says why the client role cannot carry f, or nil.
	checkFormat func(f codec.Format) error

	// binaryOnStream and binaryFromBot replace "binary message" in the
	// reason a binary message is refused with, where the carrier's tests
	// know it in other words (Twilio's).
	binaryOnStream, binaryFromBot string

	// connect reads the query the caller connected with, before any
	// message (Exotel's rate, Telnyx's send codec); nil reads none.
	connect func(s *jsonSession) error
	// start reads a start message: the stream it describes, which it
	// begins with s.begin.
	start func(s *jsonSession, msg []byte) (*Start, error)
	// mediaMembers appends what a media message the host sends holds
	// before the payload, each member ending in a comma (Plivo's
	// contentType and sampleRate); nil for none.
	mediaMembers func(dst []byte, f codec.Format) []byte
	// events are the carrier's further messages, botEvents those it takes
	// beyond media, mark and clear (Twilio's dtmf, a bot's key press).
	events, botEvents []jsonEvent
	// newBot makes the client role's session around the skeleton's.
	newBot func(b carrierBot) BotSession
}

// newJSONCarrier returns c with Twilio's names where it sets none.
func newJSONCarrier(c jsonCarrier) *jsonCarrier {
	if c.fields == (jsonFields{}) {
		c.fields = twilioFields
	}
	if c.sends == (jsonEvents{}) {
		c.sends = jsonEvents{media: "media", mark: "mark"}
	}
	if c.takes == (jsonEvents{}) {
		c.takes = jsonEvents{media: "media", mark: "mark", clear: "clear"}
	}
	if c.seqKey == "" {
		c.seqKey = "sequenceNumber"
	}
	c.kindOpen = `{"` + c.fields.kind + `":"`
	c.seqMember = `","` + c.seqKey + `":`
	c.mediaOpen = c.kindOpen + c.sends.media + c.seqMember
	return &c
}

// ClearDropsMarks reports whether the carrier's clear discards the marks
// queued behind it.
func (c *jsonCarrier) ClearDropsMarks() bool { return c.clearDropsMarks }

// CheckFormat says why the client role cannot carry f.
func (c *jsonCarrier) CheckFormat(f codec.Format) error { return c.checkFormat(f) }

// NewSession makes the state of one call; the stream's format is the
// carrier's default, or what connect read, until its start message.
func (c *jsonCarrier) NewSession(cfg SessionConfig) (Session, error) {
	s := &jsonSession{c: c, cfg: cfg, format: c.format, send: c.format}
	if c.connect != nil {
		if err := c.connect(s); err != nil {
			return nil, err
		}
	}
	s.name("")
	cfg.maxAudio(s.format) // a limit no frame could pass is caught here
	return s, nil
}

// NewBotSession makes the client state of one relayed call.
func (c *jsonCarrier) NewBotSession(cfg BotConfig) BotSession {
	return c.newBot(newCarrierBot(c, cfg))
}

// read clears in and reads msg for dispatch on its kind. These carriers
// send and take JSON text only: verb is "sends" for a caller's message,
// "takes" for a bot's, and what, when set, replaces "binary message" in
// the refusal of a binary one.
func (c *jsonCarrier) read(typ MessageType, msg []byte, in *Inbound, verb, what string) (carrierMessage, error) {
	*in = Inbound{}
	f := carrierMessage{fields: &c.fields}
	if typ != Text {
		if what == "" {
			what = "binary message"
		}
		return f, &ProtocolError{Protocol: c.name, Reason: what + ": " + c.carrier + " " + verb + " JSON text messages only", Unsupported: true}
	}
	if reason := f.scan(msg); reason != "" || f.kind == nil {
		return f, dispatchError(c.name, reason, c.fields.kind, `message without an "`+c.fields.kind+`" member`, f.hasKind, f.kind)
	}
	return f, nil
}

// decodeMark reads a mark message of event, nested or flat.
func (c *jsonCarrier) decodeMark(event string, msg []byte, in *Inbound) error {
	if c.flatMark {
		return decodeNamed(c.name, event, msg, in)
	}
	return decodeCarrierMark(c.name, msg, in)
}

// appendMark ends a mark message: Twilio's `,"mark":{"name":N}}`, or
// Plivo's `,"name":N}`.
func (c *jsonCarrier) appendMark(dst []byte, name string) []byte {
	if c.flatMark {
		dst = append(dst, `,"name":`...)
		dst = appendQuoted(dst, name)
		return append(dst, '}')
	}
	return appendMarkMember(dst, name)
}

// carrierMessage is what the scanner picks out of a message: string tokens
// viewing the message, nil when the member is absent or not a string. A
// repeated member counts once, the last time, as with encoding/json.
type carrierMessage struct {
	fields   *jsonFields
	hasKind  bool
	kind     []byte
	isObject bool // the audio's object is an object
	payload  []byte
	track    []byte
}

// scan walks msg, which must be one JSON object, and returns why it is
// not, or "".
func (f *carrierMessage) scan(msg []byte) (reason string) {
	s := scanner{buf: msg}
	return s.finish(s.members(func(key []byte) { f.member(&s, key) }))
}

func (f *carrierMessage) member(s *scanner, key []byte) {
	switch {
	case textIs(key, f.fields.kind):
		f.hasKind = true
		f.kind, _ = s.text()
	case textIs(key, f.fields.object):
		f.payload, f.track = nil, nil
		f.isObject = s.members(func(key []byte) {
			switch {
			case textIs(key, f.fields.payload):
				f.payload, _ = s.text()
			case textIs(key, f.fields.track):
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

// audio decodes the payload of the media message f into dst and returns
// its length, or says why the message carries no audio.
func (f *carrierMessage) audio(protocol string, dst []byte, scratch *[]byte, maxAudio int) (int, error) {
	switch {
	case !f.isObject:
		return 0, protocolErrorf(protocol, "media message without a %s object", f.fields.object)
	case f.payload == nil:
		return 0, protocolErrorf(protocol, "media message without a string %s.%s", f.fields.object, f.fields.payload)
	}
	return decodeBase64Token(protocol, "media payload", f.payload, dst, scratch, maxAudio)
}

// jsonSession is the server role of a jsonCarrier: one call's stream.
type jsonSession struct {
	noHangup
	c         *jsonCarrier
	cfg       SessionConfig
	format    codec.Format // the stream's, as the carrier sends it
	send      codec.Format // what the carrier takes back, at the same rate
	sendSet   bool         // send was chosen on connect, before start
	started   bool
	maxAudio  int
	sid       []byte // the stream id as a JSON string
	idMember  []byte // the stream id as a member, or nothing (bareTakes)
	mediaHead []byte // a media message up to its payload
	audio     []byte // the decoded payload of the last media message
	scratch   []byte // a payload with its JSON escapes resolved
	out       []byte // the last rendered message
	pcm       []byte // a frame decoded for transcoding
	conv      []byte // a frame in the send format
}

// begin starts the stream of id in format f, sent back in send, and sizes
// the buffers for them, once.
func (s *jsonSession) begin(id string, f, send codec.Format) {
	s.format, s.send, s.started = f, send, true
	s.maxAudio = s.cfg.maxAudio(f)
	s.audio = payloadBuffer(s.maxAudio)
	maxSend := max(s.maxAudio, s.maxAudio/f.SampleBytes()*send.SampleBytes())
	s.out = make([]byte, 0, carrierOverhead+base64.StdEncoding.EncodedLen(maxSend))
	if send != f || s.swaps(f) {
		s.pcm = make([]byte, 2*s.maxAudio)
		s.conv = make([]byte, 2*s.maxAudio)
	}
	s.name(id)
}

// name sets the stream's id, and with it the start of every media message
// the host sends: `{"event":"media","streamSid":S,"media":{"payload":"`,
// rendered once rather than member by member for each frame.
func (s *jsonSession) name(id string) {
	s.sid = appendQuoted(nil, id)
	if !s.c.bareTakes {
		s.idMember = append([]byte(`,"`+s.c.id+`":`), s.sid...)
	}
	b := append([]byte(s.c.kindOpen), s.c.takes.media...)
	b = append(append(b, '"'), s.idMember...)
	b = append(b, `,"`...)
	b = append(b, s.c.fields.object...)
	b = append(b, `":{`...)
	if s.c.mediaMembers != nil {
		b = s.c.mediaMembers(b, s.send)
	}
	b = append(b, '"')
	b = append(b, s.c.fields.payload...)
	s.mediaHead = append(b, `":"`...)
}

// swaps reports whether audio in f changes byte order on the wire.
func (s *jsonSession) swaps(f codec.Format) bool {
	return s.c.networkL16 && f.Encoding == codec.L16
}

func (s *jsonSession) Format() codec.Format { return s.format }

func (s *jsonSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	f, err := s.c.read(typ, msg, in, "sends", s.c.binaryOnStream)
	if err != nil {
		return err
	}
	switch {
	case textIs(f.kind, s.c.sends.media):
		return s.media(&f, in)
	case textIs(f.kind, "start"):
		st, err := s.c.start(s, msg)
		if err != nil {
			return err
		}
		in.Kind, in.Start = KindStart, st
	case textIs(f.kind, "dtmf"):
		return decodeCarrierDTMF(s.c.name, msg, in)
	case s.c.sends.mark != "" && textIs(f.kind, s.c.sends.mark):
		return s.c.decodeMark(s.c.sends.mark, msg, in)
	case textIs(f.kind, "stop"):
		in.Kind = KindStop
	default:
		for _, e := range s.c.events {
			if textIs(f.kind, e.event) {
				return e.decode(msg, in)
			}
		}
	}
	return nil
}

// media decodes the payload of the media message f into the stream's
// buffer: the caller's audio, or nothing for the far end's own track on a
// stream that sends both.
func (s *jsonSession) media(f *carrierMessage, in *Inbound) error {
	if !s.started {
		return protocolErrorf(s.c.name, "media before start: %s sends a start message first", s.c.carrier)
	}
	if f.isObject && f.track != nil && textIs(f.track, "outbound") {
		return nil
	}
	n, err := f.audio(s.c.name, s.audio, &s.scratch, s.maxAudio)
	if err == nil {
		err = checkAudio(s.c.name, n, s.maxAudio, s.format)
	}
	if err != nil {
		return err
	}
	in.Kind, in.Audio = KindAudio, s.audio[:n]
	if s.swaps(s.format) {
		swap16(in.Audio, in.Audio) // network byte order to the host's
	}
	return nil
}

// Audio renders a media message in what the carrier takes back.
func (s *jsonSession) Audio(frame []byte) (MessageType, []byte) {
	b := append(s.out[:0], s.mediaHead...)
	b = base64.StdEncoding.AppendEncode(b, s.outbound(frame))
	s.out = append(b, `"}}`...)
	return Text, s.out
}

// outbound converts a frame in the stream's format into the send format:
// G.711 to the other law through PCM, anything to L16 in network order.
func (s *jsonSession) outbound(frame []byte) []byte {
	if s.send == s.format && !s.swaps(s.send) {
		return frame
	}
	pcm := frame
	if s.format.Encoding != codec.L16 {
		s.pcm = grown(s.pcm, 2*len(frame))
		pcm = s.pcm[:s.format.Decode(s.pcm, frame)]
	}
	s.conv = grown(s.conv, len(pcm))
	switch {
	case s.send.Encoding != codec.L16:
		return s.conv[:s.send.Encode(s.conv, pcm)]
	case s.swaps(s.send):
		return swap16(s.conv, pcm)
	}
	return pcm
}

// open begins a message of event the host sends, with the stream id
// member: `{"event":"E","streamSid":S`. There is none before start when
// the message needs the id.
func (s *jsonSession) open(event string) ([]byte, bool) {
	if event == "" || !s.started && !s.c.bareTakes {
		return nil, false
	}
	b := append(append(s.out[:0], s.c.kindOpen...), event...)
	return append(append(b, '"'), s.idMember...), true
}

// Mark renders a mark; the carrier returns it once the audio sent before
// it has played.
func (s *jsonSession) Mark(name string) (MessageType, []byte, bool) {
	b, ok := s.open(s.c.takes.mark)
	if !ok {
		return 0, nil, false
	}
	s.out = s.c.appendMark(b, name)
	return Text, s.out, true
}

// Clear renders a clear: the carrier drops the audio it has queued, and
// returns or drops the marks behind it as ClearDropsMarks says.
func (s *jsonSession) Clear() (MessageType, []byte, bool) {
	b, ok := s.open(s.c.takes.clear)
	if !ok {
		return 0, nil, false
	}
	s.out = append(b, '}')
	return Text, s.out, true
}

// Event renders nothing: these carriers take media, mark and clear only,
// so the server logs plugin events instead.
func (s *jsonSession) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// carrierBot is the client role of a jsonCarrier: what a bot hears of one
// relayed call. A carrier's own bot type embeds it and renders Open,
// Audio, DTMF and Stop, whose members and their order are the carrier's.
type carrierBot struct {
	c        *jsonCarrier
	format   codec.Format
	perMs    int64 // bytes of audio a millisecond
	maxAudio int
	call     CallInfo
	sid      []byte // the stream id as a JSON string
	idMember []byte // the stream id as a member, e.g. `,"stream_sid":"MZ1"`

	// The reading goroutine's.
	audio   []byte
	scratch []byte

	// The writing goroutine's.
	seq   int64  // the last sequence number sent
	chunk int64  // the last media chunk sent
	sent  int64  // bytes of audio sent
	out   []byte // the last rendered message
	be    []byte // L16 in network byte order
}

// newCarrierBot sizes a bot session's buffers for cfg.
func newCarrierBot(c *jsonCarrier, cfg BotConfig) carrierBot {
	checkMaxAudio(cfg.MaxAudio)
	sid := appendQuoted(nil, cfg.Call.streamID())
	b := carrierBot{
		c:        c,
		format:   cfg.Format,
		perMs:    int64(cfg.Format.BytesPerMs()),
		maxAudio: cfg.MaxAudio,
		call:     cfg.Call,
		sid:      sid,
		idMember: append([]byte(`,"`+c.id+`":`), sid...),
		audio:    payloadBuffer(cfg.MaxAudio),
		out:      make([]byte, 0, carrierOverhead+len(sid)+base64.StdEncoding.EncodedLen(cfg.MaxAudio)),
	}
	if b.swaps() {
		b.be = make([]byte, cfg.MaxAudio)
	}
	return b
}

func (b *carrierBot) swaps() bool { return b.c.networkL16 && b.format.Encoding == codec.L16 }

// open begins a message of event with the next sequence number:
// `{"event":"E","sequenceNumber":"N"`.
func (b *carrierBot) open(event string) []byte {
	dst := append(b.out[:0], b.c.kindOpen...)
	return b.count(append(append(dst, event...), b.c.seqMember...))
}

// openMedia is open of the carrier's media message, whose start is made
// once.
func (b *carrierBot) openMedia() []byte { return b.count(append(b.out[:0], b.c.mediaOpen...)) }

// count appends the next sequence number.
func (b *carrierBot) count(dst []byte) []byte {
	b.seq++
	if b.c.seqNumber {
		return strconv.AppendInt(dst, b.seq, 10)
	}
	return appendCount(dst, b.seq)
}

// wire returns the caller's audio as the carrier sends it.
func (b *carrierBot) wire(audio []byte) []byte {
	if !b.swaps() {
		return audio
	}
	b.be = grown(b.be, len(audio))
	return swap16(b.be, audio)
}

// trackedMedia renders Twilio's media message to a bot, which Telnyx
// copied: the inbound track, its chunks counted from "1" and the ms of
// audio before each as its timestamp, then the stream id.
func (b *carrierBot) trackedMedia(audio []byte) (MessageType, []byte) {
	b.chunk++
	dst := b.openMedia()
	dst = append(dst, `,"media":{"track":"inbound","chunk":"`...)
	dst = strconv.AppendInt(dst, b.chunk, 10)
	dst = append(dst, `","timestamp":"`...)
	dst = strconv.AppendInt(dst, b.sentMs(), 10)
	dst = append(dst, `","payload":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, audio)
	dst = append(append(dst, `"}`...), b.idMember...)
	b.out = append(dst, '}')
	b.sent += int64(len(audio))
	return Text, b.out
}

// mark renders the carrier's mark message named name, with a sequence
// number and the stream id.
func (b *carrierBot) mark(name string) (MessageType, []byte, bool) {
	b.out = b.c.appendMark(append(b.open(b.c.sends.mark), b.idMember...), name)
	return Text, b.out, true
}

// MarkPlayed renders the mark the carrier returns for a bot's mark, once
// the audio before it has played.
func (b *carrierBot) MarkPlayed(name string) (MessageType, []byte, bool) {
	return b.mark(name)
}

// Interrupted answers the bot's clear as the carrier does (Plivo's
// clearedAudio), or sends nothing: these carriers have no message for a
// barge-in the host detects, and a bot learns of one by its marks coming
// back.
func (b *carrierBot) Interrupted(_ int64, byBot bool, send func(MessageType, []byte) error) error {
	if !byBot || b.c.cleared == "" {
		return nil
	}
	b.out = append(append(b.open(b.c.cleared), b.idMember...), '}')
	return send(Text, b.out)
}

// Event renders a plugin's event as a mark named "voxhost:PLUGIN:NAME": a
// mark is the only message these carriers send that can carry a name. Its
// data and time are dropped; a bot looks up a returned mark among those it
// sent, so it passes over these unless it was written to read them.
func (b *carrierBot) Event(plugin, name string, _ []byte, _ int64) (MessageType, []byte, bool) {
	return b.mark("voxhost:" + plugin + ":" + name)
}

// Decode reads what a bot sends the carrier: media, mark and clear;
// anything else is ignored, as the carrier ignores it.
func (b *carrierBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	f, err := b.c.read(typ, msg, in, "takes", b.c.binaryFromBot)
	if err != nil {
		return err
	}
	switch {
	case textIs(f.kind, b.c.takes.media):
		return b.media(&f, in)
	case b.c.takes.mark != "" && textIs(f.kind, b.c.takes.mark):
		return b.c.decodeMark(b.c.takes.mark, msg, in)
	case b.c.takes.clear != "" && textIs(f.kind, b.c.takes.clear):
		in.Kind = KindClear
	default:
		for _, e := range b.c.botEvents {
			if textIs(f.kind, e.event) {
				return e.decode(msg, in)
			}
		}
	}
	return nil
}

// media decodes the payload of a bot's media message f: any whole number
// of samples in the leg's format.
func (b *carrierBot) media(f *carrierMessage, in *Inbound) error {
	n, err := f.audio(b.c.name, b.audio, &b.scratch, b.maxAudio)
	if err == nil {
		err = checkBotAudio(b.c.name, n, b.maxAudio, b.format)
	}
	if err != nil {
		return err
	}
	in.Kind, in.Audio = KindAudio, b.audio[:n]
	if b.swaps() {
		swap16(in.Audio, in.Audio)
	}
	return nil
}

// sentMs is the audio sent so far, in ms: the timestamp of the next media
// message.
func (b *carrierBot) sentMs() int64 { return b.sent / b.perMs }

// decodeBase64Token decodes the base64 text of the JSON string token q into
// dst and returns the bytes written, without allocating: dst holds any
// payload of maxAudio bytes (payloadBuffer), and scratch keeps the text of
// a token whose JSON escapes must be resolved first. What names the member
// in errors, e.g. "media payload". The carriers' media and OpenAI's audio
// deltas both carry audio this way.
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

// swap16 writes the 16-bit samples of src into dst with their two bytes
// swapped, between little-endian and network byte order, and returns the
// samples written; dst may be src. A trailing odd byte is left out.
func swap16(dst, src []byte) []byte {
	n := len(src) &^ 1
	dst = dst[:n]
	for i := 0; i < n; i += 2 {
		dst[i], dst[i+1] = src[i+1], src[i]
	}
	return dst
}

// grown returns b with length n, reallocated only when its capacity is
// short: the audio path's buffers are sized at start and keep their size.
func grown(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
