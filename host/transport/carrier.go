package transport

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/voxhost/voxhost/host/codec"
)

// What the JSON carriers that copied Twilio's message shapes share
// (telnyx.go, plivo.go, exotel.go): an "event" member to dispatch on,
// base64 audio in media.payload, DTMF in dtmf.digit, a start message with
// ids and custom parameters. Their media messages are read by Twilio's
// scanner (twilioMedia in twilio.go), which picks out event,
// media.payload and media.track and nothing else; what differs is the
// start message, the names of the ids and what the host sends back.

// carrierOverhead bounds what an outbound media message of these carriers
// holds besides its base64 payload: event and member names, a stream id of
// MaxIDBytes quoted, counters of 19 digits and a timestamp. Buffers sized
// with it never grow on the audio path.
const carrierOverhead = 320 + MaxIDBytes

// carrierStream is the part of a carrier's server-role session that reads
// its audio: the stream's format, fixed at start, and the buffers a media
// message is decoded into. Its methods make the protocol's errors.
type carrierStream struct {
	protocol string // its name in errors, e.g. "telnyx"
	carrier  string // the carrier as people write it, e.g. "Telnyx"
	cfg      SessionConfig
	format   codec.Format
	started  bool
	maxAudio int
	audio    []byte // the decoded payload of the last media message
	scratch  []byte // a payload with its JSON escapes resolved
	out      []byte // the last rendered message
}

// begin starts the stream in format f and sizes the buffers for it, once.
func (c *carrierStream) begin(f codec.Format) {
	c.format, c.started = f, true
	c.maxAudio = c.cfg.maxAudio(f)
	c.audio = payloadBuffer(c.maxAudio)
	c.out = make([]byte, 0, carrierOverhead+base64.StdEncoding.EncodedLen(c.maxAudio))
}

// scan reads msg as one of the carrier's text messages, for dispatch on
// its event.
func (c *carrierStream) scan(typ MessageType, msg []byte) (twilioMedia, error) {
	return scanCarrier(c.protocol, c.carrier+" sends", typ, msg)
}

// scanCarrier reads msg, a message of protocol's carrier or bot (from says
// who, as in "Telnyx sends"), for dispatch on its event: these carriers
// send JSON text only.
func scanCarrier(protocol, from string, typ MessageType, msg []byte) (twilioMedia, error) {
	var f twilioMedia
	if typ != Text {
		return f, &ProtocolError{Protocol: protocol, Reason: "binary message: " + from + " JSON text messages only", Unsupported: true}
	}
	reason := f.scan(msg)
	return f, dispatchError(protocol, reason, "event", `message without an "event" member`, f.hasEvent, f.event)
}

// media decodes the payload of the media message f into the stream's
// buffer: the caller's audio, or nothing for the far end's own track on a
// stream that sends both.
func (c *carrierStream) media(f *twilioMedia, in *Inbound) error {
	if !c.started {
		return protocolErrorf(c.protocol, "media before start: %s sends a start message first", c.carrier)
	}
	if f.isObject && f.track != nil && textIs(f.track, "outbound") {
		return nil
	}
	n, err := mediaPayload(c.protocol, f, c.audio, &c.scratch, c.maxAudio)
	if err == nil {
		err = checkAudio(c.protocol, n, c.maxAudio, c.format)
	}
	if err != nil {
		return err
	}
	in.Kind, in.Audio = KindAudio, c.audio[:n]
	return nil
}

// mediaPayload decodes media.payload of f into dst and returns its length,
// or says why the message carries no audio.
func mediaPayload(protocol string, f *twilioMedia, dst []byte, scratch *[]byte, maxAudio int) (int, error) {
	switch {
	case !f.isObject:
		return 0, protocolErrorf(protocol, "media message without a media object")
	case f.payload == nil:
		return 0, protocolErrorf(protocol, "media message without a string media.payload")
	}
	return decodeBase64Token(protocol, "media payload", f.payload, dst, scratch, maxAudio)
}

// carrierBot is the part of a carrier's client-role session that reads a
// bot's audio and counts what it sends.
type carrierBot struct {
	protocol string
	format   codec.Format
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
}

// newCarrierBot sizes a bot session's buffers for cfg; idKey is the name
// of the carrier's stream id member, e.g. "stream_sid".
func newCarrierBot(protocol, idKey string, cfg BotConfig) carrierBot {
	checkMaxAudio(cfg.MaxAudio)
	sid := appendQuoted(nil, cfg.Call.streamID())
	return carrierBot{
		protocol: protocol,
		format:   cfg.Format,
		maxAudio: cfg.MaxAudio,
		call:     cfg.Call,
		sid:      sid,
		idMember: append([]byte(`,"`+idKey+`":`), sid...),
		audio:    payloadBuffer(cfg.MaxAudio),
		out:      make([]byte, 0, carrierOverhead+len(sid)+base64.StdEncoding.EncodedLen(cfg.MaxAudio)),
	}
}

// media decodes the payload of a bot's media message f: any whole number
// of samples in the leg's format.
func (b *carrierBot) media(f *twilioMedia, in *Inbound) error {
	n, err := mediaPayload(b.protocol, f, b.audio, &b.scratch, b.maxAudio)
	if err == nil {
		err = checkBotAudio(b.protocol, n, b.maxAudio, b.format)
	}
	if err != nil {
		return err
	}
	in.Kind, in.Audio = KindAudio, b.audio[:n]
	return nil
}

// open begins a message of event with the next sequence_number, a string
// as Telnyx and Exotel send it: `{"event":"E","sequence_number":"N"`.
func (b *carrierBot) open(event string) []byte {
	b.seq++
	dst := append(b.out[:0], `{"event":"`...)
	dst = append(dst, event...)
	dst = append(dst, `","sequence_number":`...)
	return appendCount(dst, b.seq)
}

// mark renders the mark message these carriers return for a bot's mark:
// Twilio's shape with a sequence_number and the stream id.
func (b *carrierBot) mark(name string) (MessageType, []byte, bool) {
	dst := append(b.open("mark"), b.idMember...)
	b.out = appendMarkMember(dst, name)
	return Text, b.out, true
}

// MarkPlayed renders the mark message Telnyx and Exotel return for a
// bot's mark, once the audio before it has played.
func (b *carrierBot) MarkPlayed(name string) (MessageType, []byte, bool) {
	return b.mark(name)
}

// Interrupted sends nothing: Telnyx and Exotel, like Twilio, have no
// message for a barge-in, and a bot learns of one by its marks coming
// back.
func (b *carrierBot) Interrupted(int64, bool, func(MessageType, []byte) error) error { return nil }

// Event renders a plugin's event as a mark named "voxhost:PLUGIN:NAME", as
// the twilio dialect does: a mark is the only message these carriers send
// that can carry a name.
func (b *carrierBot) Event(plugin, name string, _ []byte, _ int64) (MessageType, []byte, bool) {
	return b.mark("voxhost:" + plugin + ":" + name)
}

// decode reads what a bot sends a carrier of Twilio's shape (Telnyx,
// Exotel): media, mark and clear; anything else is ignored. From names
// the carrier in errors, as in "Telnyx takes".
func (b *carrierBot) decode(from string, typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	f, err := scanCarrier(b.protocol, from, typ, msg)
	if err != nil {
		return err
	}
	switch {
	case textIs(f.event, "media"):
		return b.media(&f, in)
	case textIs(f.event, "mark"):
		return decodeCarrierMark(b.protocol, msg, in)
	case textIs(f.event, "clear"):
		in.Kind = KindClear
	}
	return nil
}

// sentMs is the audio sent so far, in ms: the timestamp of the next media
// message.
func (b *carrierBot) sentMs() int64 { return b.sent / int64(b.format.BytesPerMs()) }

// appendCount appends n as a JSON string, as these carriers send their
// counters.
func appendCount(dst []byte, n int64) []byte {
	dst = append(dst, '"')
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '"')
}

// decodeCarrierDTMF reads the dtmf.digit of a dtmf message of protocol:
// Twilio's shape, which Telnyx, Plivo and Exotel keep.
func decodeCarrierDTMF(protocol string, msg []byte, in *Inbound) error {
	var m struct {
		DTMF *struct {
			Digit string `json:"digit"`
		} `json:"dtmf"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return protocolErrorf(protocol, "bad dtmf message: %v", err)
	}
	if m.DTMF == nil {
		return protocolErrorf(protocol, "dtmf message without a dtmf object")
	}
	if d := m.DTMF.Digit; len(d) != 1 || !validDigit(d[0]) {
		return protocolErrorf(protocol, "dtmf.digit %s is not one of 0-9 * # A-D", excerpt(d))
	}
	in.Kind, in.Digit = KindDTMF, m.DTMF.Digit[0]
	return nil
}

// decodeCarrierMark reads the mark.name of a mark message of protocol:
// Twilio's shape, which Telnyx and Exotel keep.
func decodeCarrierMark(protocol string, msg []byte, in *Inbound) error {
	var m struct {
		Mark *struct {
			Name string `json:"name"`
		} `json:"mark"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return protocolErrorf(protocol, "bad mark message: %v", err)
	}
	if m.Mark == nil {
		return protocolErrorf(protocol, "mark message without a mark object")
	}
	return markInbound(protocol, "mark.name", m.Mark.Name, in)
}

// markInbound makes in the KindMark of name, within MaxMarkBytes.
func markInbound(protocol, what, name string, in *Inbound) error {
	if err := CheckMark(what, name); err != nil {
		return limitError(protocol, err)
	}
	in.Kind, in.Mark = KindMark, name
	return nil
}

// appendMarkMember appends the mark member of Twilio's mark message,
// which Telnyx and Exotel keep, and closes the message:
// `,"mark":{"name":N}}`.
func appendMarkMember(dst []byte, name string) []byte {
	dst = append(dst, `,"mark":{"name":`...)
	dst = appendQuoted(dst, name)
	return append(dst, "}}"...)
}

// jsonInt is an integer a carrier writes as a JSON number or as a string
// of digits (Exotel's "8000", Plivo's 8000).
type jsonInt struct {
	set bool
	n   int
}

// UnmarshalJSON reads a number or a string of one.
func (j *jsonInt) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%s is not an integer", excerpt(s))
	}
	j.set, j.n = true, n
	return nil
}

// or returns the integer, or def when the member was absent.
func (j jsonInt) or(def int) int {
	if !j.set {
		return def
	}
	return j.n
}

// mediaType splits a content type such as "audio/x-mulaw;rate=8000" into
// its type, lower case, and its rate parameter (0 without one).
func mediaType(s string) (string, int) {
	typ, params, _ := strings.Cut(s, ";")
	rate := 0
	for _, p := range strings.Split(params, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "rate") {
			rate, _ = strconv.Atoi(v)
		}
	}
	return strings.ToLower(strings.TrimSpace(typ)), rate
}

// unsupportedFormat is a start message's refusal of its audio format.
func unsupportedFormat(protocol, format string, args ...any) *ProtocolError {
	err := protocolErrorf(protocol, format, args...)
	err.Unsupported = true
	return err
}

// withFromTo returns params with the call's from and to numbers added as
// "from" and "to", which the host passes on to plugins and bots as it
// does custom parameters; a custom parameter of the same name wins. The
// result is a fresh map when anything is added.
func withFromTo(params map[string]string, from, to string) map[string]string {
	if from == "" && to == "" {
		return params
	}
	out := make(map[string]string, len(params)+2)
	for _, kv := range [][2]string{{"from", from}, {"to", to}} {
		if kv[1] != "" {
			out[kv[0]] = kv[1]
		}
	}
	for k, v := range params {
		out[k] = v
	}
	return out
}

// splitFromTo is withFromTo undone for a client role: the "from" and "to"
// parameters, and the others.
func splitFromTo(params map[string]string) (from, to string, rest map[string]string) {
	from, to = params["from"], params["to"]
	if from == "" && to == "" {
		return "", "", params
	}
	rest = make(map[string]string, len(params))
	for k, v := range params {
		if k != "from" && k != "to" {
			rest[k] = v
		}
	}
	return from, to, rest
}

// checkCarrierStart applies the bounds of limits.go to the ids and
// parameters the host keeps of a start message; ids names each id as the
// carrier spells it.
func checkCarrierStart(protocol string, params map[string]string, paramsWhat string, ids ...[2]string) error {
	for _, id := range ids {
		if err := CheckID(id[0], id[1]); err != nil {
			return limitError(protocol, err)
		}
	}
	if err := CheckParams(paramsWhat, params); err != nil {
		return limitError(protocol, err)
	}
	return nil
}

// rawParams reads custom parameters a carrier sends as a JSON object of
// strings or as a string of pairs split by sep (parseQueryParams); null or
// absent is none.
func rawParams(raw json.RawMessage, sep string) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return parseQueryParams(s, sep)
	}
	var m map[string]string
	err := json.Unmarshal(raw, &m)
	return m, err
}

// parseQueryParams reads custom parameters a carrier passes as one string
// of key=value pairs (Plivo's extra_headers, Exotel's custom_parameters
// when it is not an object): a JSON object of strings, or pairs split by
// sep, with %-escapes resolved where they are well formed.
func parseQueryParams(s string, sep string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if s[0] == '{' {
		var m map[string]string
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, err
		}
		return m, nil
	}
	m := map[string]string{}
	for _, kv := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(sep, r) }) {
		k, v, _ := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
		if k != "" {
			m[k] = v
		}
	}
	return m, nil
}

// MarkDropper is implemented by a Protocol whose clear discards the marks
// queued behind the audio it drops instead of returning them, as Plivo's
// clearAudio does with pending checkpoints (no playedStream follows), where
// Twilio's and Telnyx's clear send the queued marks back. The host must
// then take every mark it sent such a caller and has not had back as
// cleared when it sends the clear, or a relayed bot waits for them for
// the rest of the call; one that comes back after all is ignored.
type MarkDropper interface {
	// ClearDropsMarks reports whether the clear discards queued marks.
	ClearDropsMarks() bool
}
