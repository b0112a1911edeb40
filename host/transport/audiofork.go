package transport

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

// The FreeSWITCH media-bug modules that fork a call's audio to a
// WebSocket server, and jambonz's listen verb, which is one of them
// (jambonz.go): the module connects, sends one text frame of metadata,
// then the call's audio as binary L16 mono frames; text the server sends
// back asks the module to play audio, stop playing it, or let go. They
// share the server role here and differ in what the host sends back.
//
// The metadata is a JSON object for the ones the host knows: its string,
// number and boolean members become the stream's custom parameters
// ("pipeline" picks a route), objects, arrays and nulls are left out;
// callSid and accountSid, where present (jambonz), are the call's and the
// account's ids; sampleRate, where present, is the audio's rate, else the
// URL's ?rate= (8000, 16000 or 24000; 8k and 16k as the fork command
// writes them); mixType "stereo" (two channels interleaved) is refused,
// "mono" and "mixed" are one channel. mod_audio_fork and mod_audio_stream
// take any text as metadata: a frame that is not a JSON object is kept
// whole as the parameter "metadata". A stream without metadata cannot
// start: the fork command's metadata argument must be given ({} will do).
//
// After the metadata, a JSON text frame {"event":"dtmf","dtmf":"5",...}
// is a key (jambonz's passDtmf form, which an application can send
// through the fork's send_text); other text (send_text is any text) is
// ignored. An empty binary frame is mod_audio_fork's graceful shutdown:
// the stream's end.

const (
	audioforkName   = "audiofork"
	audiostreamName = "audiostream"
)

// mod_audio_fork, as TopCS/freeswitch-modules mod_audio_fork/README.md
// documents it: "uuid_audio_fork <uuid> start <wss-url> <mix-type>
// <sampling-rate> <metadata>", its client offering the subprotocol
// audio.drachtio.org (MOD_AUDIO_FORK_SUBPROTOCOL_NAME changes it). The
// host sends killAudio to clear (the module breaks the channel's
// playback), disconnect to hang up (the module raises
// mod_audio_fork::disconnect; ending the call is the application's), and
// plugin events as {"type":"json",...}, which the module raises as
// mod_audio_fork::json.
//
// What the host cannot do through mod_audio_fork is play a bot's speech
// well: the module discards binary frames, and a playAudio message, the
// one way to send audio, is written to a temporary file and announced in
// a mod_audio_fork::play_audio event; nothing plays it unless the
// FreeSWITCH application does, file by file. The host sends each 20 ms
// frame as one playAudio (raw L16 at the stream's rate), so an application
// that plays them hears it, with a gap per file. For a voice bot behind
// FreeSWITCH use jambonz's module (bidirectional streaming) or Asterisk;
// mod_audio_fork suits listening: transcription and analysis on the
// inbound pipeline.
var audiofork = &forkFlavor{
	name: audioforkName, path: "/audiofork", module: "mod_audio_fork",
	subprotocols: []string{"audio.drachtio.org"},
	play:         &forkPlay{typ: "playAudio", contentType: "audioContentType", content: "audioContent", what: "playAudio data.audioContent"},
	clear:        true, hangup: true, events: true,
}

// mod_audio_stream, as amigniter/mod_audio_stream's README documents it:
// "uuid_audio_stream <uuid> start <wss-url> <mix-type> <sampling-rate>
// <metadata>", metadata optional. Its community edition plays nothing
// either: a streamAudio message is written to a file and announced in
// mod_audio_stream::play, the same limit as mod_audio_fork's; the host
// sends each frame as one streamAudio (raw). The module has no message to
// stop playback or let go, so the host sends no clear and ends the call
// with the close alone; every other JSON message becomes a
// mod_audio_stream::json event, plugin events among them. (The commercial
// edition's binary playback is not documented in public, so not used.)
var audiostream = &forkFlavor{
	name: audiostreamName, path: "/audiostream", module: "mod_audio_stream",
	play:   &forkPlay{typ: "streamAudio", contentType: "audioDataType", content: "audioData", what: "streamAudio data.audioData"},
	events: true,
}

func init() {
	RegisterProtocol(forkProtocol{audiofork})
	RegisterProtocol(forkProtocol{audiostream})
}

// forkFlavor is what one module of the family does.
type forkFlavor struct {
	name, path string
	module     string // as its users write it, in errors
	// subprotocols are what the module's client offers; the server
	// accepts the first (see forkProtocol.Subprotocols).
	subprotocols []string
	// play is the JSON message that carries audio to the module; nil
	// means binary L16 frames (jambonz's streaming).
	play *forkPlay
	// clear, hangup and events say whether the module has a killAudio,
	// a disconnect and a message that carries a plugin's event.
	clear, hangup, events bool
	// defaultRate is the rate of a stream whose metadata and URL give
	// none (jambonz's 8000); 0 refuses such a stream.
	defaultRate int
	// objectOnly refuses metadata that is not a JSON object.
	objectOnly bool
	// marks says the module returns {"type":"mark"} events (jambonz).
	marks bool
}

// forkPlay names a playback message's type and its members for the
// content type ("raw") and the base64 audio; what names the audio in
// errors, written out so that decoding builds no string.
type forkPlay struct{ typ, contentType, content, what string }

// forkProtocol is a module of the family as a Protocol.
type forkProtocol struct{ fl *forkFlavor }

func (p forkProtocol) Name() string { return p.fl.name }

func (p forkProtocol) Path() string { return p.fl.path }

func (forkProtocol) StartsOnConnect() bool { return false }

// Buffers is false: none of these modules returns marks for audio played
// (jambonz's only once more audio follows them, see jambonz.go), so the
// host paces what it sends.
func (forkProtocol) Buffers() bool { return false }

// Subprotocols lists the WebSocket subprotocols the module's client asks
// for, which the server's upgrade accepts: audio.drachtio.org for
// mod_audio_fork, audio.jambonz.org for jambonz; none for
// mod_audio_stream.
func (p forkProtocol) Subprotocols() []string { return slices.Clone(p.fl.subprotocols) }

// NewSession reads ?rate=, the rate the fork was started at, for metadata
// that does not say it.
func (p forkProtocol) NewSession(cfg SessionConfig) (Session, error) {
	cfg.maxAudio(codec.Telephony) // checks MaxFrameMs now, as every protocol does
	rate, err := forkRate(cfg.Query.Get("rate"))
	if err != nil {
		return nil, fmt.Errorf("%s: rate %v", p.fl.name, err)
	}
	return &forkSession{fl: p.fl, cfg: cfg, queryRate: rate}, nil
}

// forkRate reads a rate as a fork's URL or command gives it: "" (none),
// Hz, or 8k and 16k.
func forkRate(s string) (int, error) {
	switch s {
	case "":
		return 0, nil
	case "8k":
		return 8000, nil
	case "16k":
		return 16000, nil
	}
	r, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s is not a number of Hz", excerpt(s))
	}
	return r, codec.Format{Encoding: codec.L16, Rate: r}.Check()
}

type forkSession struct {
	fl        *forkFlavor
	cfg       SessionConfig
	queryRate int
	started   bool
	format    codec.Format
	maxAudio  int
	playHead  []byte // a playback message up to its base64 audio
	out       []byte // the last rendered message
}

// Format is L16 at the stream's rate: before the metadata, the URL's rate
// or 8 kHz.
func (s *forkSession) Format() codec.Format {
	if s.started {
		return s.format
	}
	return codec.Format{Encoding: codec.L16, Rate: orDefault(s.queryRate, 8000)}
}

// orDefault is a, or b if a is 0.
func orDefault(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func (s *forkSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	switch typ {
	case Binary:
		switch {
		case !s.started:
			return protocolErrorf(s.fl.name, "audio before the metadata: %s sends a text frame of metadata first (give the fork command one, {} will do)", s.fl.module)
		case len(msg) == 0:
			in.Kind = KindStop // mod_audio_fork's graceful shutdown
			return nil
		}
		if err := checkAudio(s.fl.name, len(msg), s.maxAudio, s.format); err != nil {
			return err
		}
		in.Kind, in.Audio = KindAudio, msg
		return nil
	case Text:
		if !s.started {
			return s.start(msg, in)
		}
		return s.control(msg, in)
	}
	return protocolErrorf(s.fl.name, "message of unknown WebSocket type %d", int(typ))
}

// forkMetadata is what the host reads of a stream's metadata.
type forkMetadata struct {
	params                       map[string]string
	callSid, accountSid, mixType string
	rate                         int
	hasRate                      bool
}

// readMetadata reads the first text frame. It is read once a call,
// so encoding/json reads it.
func (s *forkSession) readMetadata(msg []byte) (forkMetadata, error) {
	var m forkMetadata
	if !isJSONText(msg) || !json.Valid(msg) {
		switch {
		case s.fl.objectOnly:
			return m, protocolErrorf(s.fl.name, "the first text frame is not a JSON object: %s sends the call's attributes as one", s.fl.module)
		case isJSONText(msg):
			var v any
			err := json.Unmarshal(msg, &v)
			return m, protocolErrorf(s.fl.name, "metadata that begins as a JSON object is not one: %v", err)
		case len(bytes.TrimSpace(msg)) > 0:
			m.params = map[string]string{"metadata": string(msg)}
		}
		return m, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(msg, &members); err != nil {
		return m, protocolErrorf(s.fl.name, "bad metadata: %v", err)
	}
	m.params = make(map[string]string, len(members))
	for k, raw := range members {
		switch raw[0] {
		case '"':
			var v string
			_ = json.Unmarshal(raw, &v) // a well-formed string
			m.params[k] = v
		case '{', '[', 'n':
			// Objects (jambonz's customerData, the SIP headers) could pass
			// any bound; a null says nothing.
		default: // numbers and booleans, as written
			m.params[k] = string(raw)
		}
	}
	m.callSid, m.accountSid, m.mixType = m.params["callSid"], m.params["accountSid"], m.params["mixType"]
	if r, ok := m.params["sampleRate"]; ok {
		n, err := strconv.Atoi(r)
		if err != nil {
			return m, protocolErrorf(s.fl.name, "metadata sampleRate %s is not a number of Hz", excerpt(r))
		}
		m.rate, m.hasRate = n, true
	}
	if len(m.params) == 0 {
		m.params = nil
	}
	return m, nil
}

// start reads the metadata and starts the stream at its rate.
func (s *forkSession) start(msg []byte, in *Inbound) error {
	m, err := s.readMetadata(msg)
	if err != nil {
		return err
	}
	rate := m.rate
	if !m.hasRate {
		rate = orDefault(s.queryRate, s.fl.defaultRate)
	}
	if rate == 0 {
		return &ProtocolError{Protocol: s.fl.name, Unsupported: true,
			Reason: "the stream's sample rate is not known: give the fork's rate as ?rate=8000 or ?rate=16000 in its URL, or as sampleRate in its metadata"}
	}
	f := codec.Format{Encoding: codec.L16, Rate: rate}
	if f.Check() != nil {
		return &ProtocolError{Protocol: s.fl.name, Unsupported: true,
			Reason: fmt.Sprintf("sample rate %d: voxhost takes L16 at 8000, 16000 or 24000 Hz", rate)}
	}
	switch m.mixType {
	case "", "mono", "mixed":
	default:
		return &ProtocolError{Protocol: s.fl.name, Unsupported: true,
			Reason: fmt.Sprintf("mixType %s: voxhost takes one channel (mono or mixed), not two interleaved", excerpt(m.mixType))}
	}
	for _, id := range []struct{ what, id string }{{"callSid", m.callSid}, {"accountSid", m.accountSid}} {
		if err := CheckID("metadata "+id.what, id.id); err != nil {
			return limitError(s.fl.name, err)
		}
	}
	if err := CheckParams("metadata", m.params); err != nil {
		return limitError(s.fl.name, err)
	}
	s.started, s.format = true, f
	s.maxAudio = s.cfg.maxAudio(f)
	if p := s.fl.play; p != nil {
		s.playHead = fmt.Appendf(nil, `{"type":%q,"data":{%q:"raw","sampleRate":%d,%q:"`, p.typ, p.contentType, rate, p.content)
		s.out = make([]byte, 0, len(s.playHead)+base64.StdEncoding.EncodedLen(s.maxAudio)+len(forkPlayTail))
	} else {
		s.out = make([]byte, 0, 256)
	}
	in.Kind = KindStart
	in.Start = &Start{CallID: m.callSid, AccountID: m.accountSid, Params: m.params}
	return nil
}

// forkPlayTail ends a playback message after its base64 audio.
const forkPlayTail = `"}}`

// control reads a text frame after the metadata: a key, a mark (jambonz)
// or anything else, ignored.
func (s *forkSession) control(msg []byte, in *Inbound) error {
	var f forkEvent
	if !f.scan(msg) {
		return nil // send_text carries any text
	}
	switch {
	case f.event != nil && textIs(f.event, "dtmf"):
		if f.dtmf == nil {
			return protocolErrorf(s.fl.name, `dtmf event without a string "dtmf"`)
		}
		d, ok := digitOf(f.dtmf)
		if !ok {
			var text string
			_ = json.Unmarshal(f.dtmf, &text)
			return protocolErrorf(s.fl.name, "dtmf %s is not one of 0-9 * # A-D", excerpt(text))
		}
		in.Kind, in.Digit = KindDTMF, d
	case s.fl.marks && f.typ != nil && textIs(f.typ, "mark"):
		return decodeForkMark(s.fl.name, &f, in)
	}
	return nil
}

// forkEvent is what the scanner picks out of a text frame of the family,
// either way: string tokens viewing the frame, nil when absent or not
// strings.
type forkEvent struct {
	event, typ, dtmf []byte
	// From data: a mark's name, a playback's content type, audio and rate
	// (the rate's token as written, a number or a string).
	name, contentType, content, rate []byte
	hasData                          bool
}

// scan reads msg and says whether it is one JSON object.
func (f *forkEvent) scan(msg []byte) bool {
	return f.scanPlay(msg, nil) == ""
}

// scanPlay is scan for a frame that may be a playback message of play
// (nil for none), whose members it picks out of data too; it returns why
// msg is not one JSON object, or "".
func (f *forkEvent) scanPlay(msg []byte, play *forkPlay) string {
	s := scanner{buf: msg}
	return s.finish(s.members(func(key []byte) {
		switch {
		case textIs(key, "event"):
			f.event, _ = s.text()
		case textIs(key, "type"):
			f.typ, _ = s.text()
		case textIs(key, "dtmf"):
			f.dtmf, _ = s.text()
		case textIs(key, "data"):
			f.hasData = s.members(func(key []byte) {
				switch {
				case textIs(key, "name"):
					f.name, _ = s.text()
				case play != nil && textIs(key, play.contentType):
					f.contentType, _ = s.text()
				case play != nil && textIs(key, play.content):
					f.content, _ = s.text()
				case play != nil && textIs(key, "sampleRate"):
					s.peek()
					start := s.pos
					s.skip()
					f.rate = s.buf[start:s.pos]
				default:
					s.skip()
				}
			})
			if !f.hasData {
				s.skip()
			}
		default:
			s.skip()
		}
	}))
}

// decodeForkMark reads a jambonz mark, {"type":"mark","data":{"name":…}},
// either way.
func decodeForkMark(protocol string, f *forkEvent, in *Inbound) error {
	if f.name == nil {
		return protocolErrorf(protocol, `mark without a string data.name`)
	}
	var name string
	_ = json.Unmarshal(f.name, &name) // a well-formed string token
	if err := CheckMark("mark data.name", name); err != nil {
		return limitError(protocol, err)
	}
	in.Kind, in.Mark = KindMark, name
	return nil
}

// Audio renders the module's playback message for the frame, raw L16 at
// the stream's rate in base64, or, where the module streams binary
// (jambonz), the frame itself.
func (s *forkSession) Audio(frame []byte) (MessageType, []byte) {
	if s.fl.play == nil {
		return Binary, frame
	}
	b := append(s.out[:0], s.playHead...)
	b = base64.StdEncoding.AppendEncode(b, frame)
	s.out = append(b, forkPlayTail...)
	return Text, s.out
}

// Mark renders nothing: mod_audio_fork and mod_audio_stream have no
// marks, and jambonz's are not sent for the reasons jambonz.go gives.
func (s *forkSession) Mark(string) (MessageType, []byte, bool) { return 0, nil, false }

// Clear renders killAudio where the module has it.
func (s *forkSession) Clear() (MessageType, []byte, bool) {
	if !s.started || !s.fl.clear {
		return 0, nil, false
	}
	s.out = append(s.out[:0], `{"type":"killAudio"}`...)
	return Text, s.out, true
}

// Event renders a plugin's event as {"type":"json","event":"plugin",
// "plugin":P,"name":N,"data":D,"t_ms":T}, which mod_audio_fork raises as
// mod_audio_fork::json and mod_audio_stream as mod_audio_stream::json,
// for the FreeSWITCH application to read.
func (s *forkSession) Event(plugin, name string, data []byte, tMs int64) (MessageType, []byte, bool) {
	if !s.started || !s.fl.events {
		return 0, nil, false
	}
	// The raw protocol's event, with a type first.
	b := append(s.out[:0], `{"type":"json",`...)
	n := len(b)
	b = appendRawEvent(b, plugin, name, data, tMs)
	s.out = append(b[:n], b[n+1:]...) // its own '{' goes
	return Text, s.out, true
}

// Hangup renders disconnect where the module has it.
func (s *forkSession) Hangup() (MessageType, []byte, bool) {
	if !s.started || !s.fl.hangup {
		return 0, nil, false
	}
	s.out = append(s.out[:0], `{"type":"disconnect"}`...)
	return Text, s.out, true
}
