package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/voxhost/voxhost/host/codec"
)

const asteriskName = "asterisk"

// Asterisk returns the protocol of Asterisk's chan_websocket (Asterisk
// 20.16, 21.11, 22.6 and 23.0 on; JSON control messages from 20.18, 22.8
// and 23.2), as documented in asterisk/documentation
// docs/Configuration/Channel-Drivers/WebSocket.md. Asterisk dials the
// host: a websocket_client.conf connection whose uri is the host's
// /asterisk, used as Dial(WebSocket/<connection>/c(ulaw)) or ARI's
// externalMedia?transport=websocket. Per-call values go in the query
// string through the dial string's v() option: v(pipeline=support) picks a
// route, v(answer=1) has the host answer a channel dialled with the n
// option, as soon as media starts.
//
// Binary messages are raw audio in the channel's codec both ways, 20 ms a
// message from Asterisk (160 bytes of ulaw). Text messages are control:
// Asterisk's events and the host's commands, in the plain-text form
// ("MEDIA_START connection_id:… format:ulaw optimal_frame_size:160") or
// the JSON form ({"event":"MEDIA_START",…}), whichever the dial string's
// f() option or chan_websocket.conf chose; the host answers in the form
// MEDIA_START came in.
//
// From Asterisk: MEDIA_START starts the stream (its connection_id is the
// stream id, its channel_id the call id, its channel_variables, in the
// JSON form only, the custom parameters but for the driver's own
// MEDIA_WEBSOCKET_*); DTMF_END is a key; MEDIA_XOFF and MEDIA_XON hold and
// release the host's audio (KindPause, KindResume); MEDIA_MARK_PROCESSED
// returns a mark; ERROR is KindError; STATUS, QUEUE_DRAINED and
// MEDIA_BUFFERING_COMPLETED are ignored. The host sends FLUSH_MEDIA to
// clear, MARK_MEDIA to mark, HANGUP to end the call and ANSWER when asked.
//
// The channel's format is ulaw, alaw, slin, slin16 or slin24 (μ-law or
// A-law at 8 kHz, L16 at 8, 16 or 24 kHz; slin is in the byte order of
// the machine Asterisk runs on, little-endian on x86 and ARM); others are
// refused as unsupported. A message over 65,500 bytes makes Asterisk hang
// the call up, so the host never renders one and refuses one as a limit;
// Asterisk drops a command over 128 bytes, so a mark name that would make
// one is sent as a short id of the host's and returned under its own name.
//
// Buffers is false: the host paces Asterisk at real time, as it paces raw
// and AudioSocket callers. Asterisk could take audio ahead of time (it
// re-times up to ~1000 frames) and return marks, but MARK_MEDIA came in
// November 2025, after the first releases of the driver: through an older
// Asterisk a bot's marks would never be acknowledged, where the host's own
// clock acknowledges them once played. Paced, Asterisk's queue holds about
// a frame, a barge-in is heard at once and MEDIA_XOFF (sent at ~900 queued
// frames) never comes in practice; should it come, from a far end that
// stalls, the playout holds the audio until MEDIA_XON.
func Asterisk() Protocol { return asteriskProtocol }

func init() { RegisterProtocol(asteriskProtocol) }

type asterisk struct{ endpoint }

var asteriskProtocol = asterisk{endpoint{name: asteriskName, path: "/asterisk"}}

// NewSession reads ?answer=: 1 or true has the host send ANSWER when the
// stream starts, for a channel dialled with n (no auto-answer).
func (asterisk) NewSession(cfg SessionConfig) (Session, error) {
	cfg.maxAudio(codec.Telephony) // checks MaxFrameMs now, as every protocol does
	var answer bool
	switch v := cfg.Query.Get("answer"); v {
	case "", "0", "false":
	case "1", "true":
		answer = true
	default:
		return nil, fmt.Errorf("%s: answer is 1 or true (send ANSWER when media starts), 0 or false, not %s", asteriskName, excerpt(v))
	}
	return &asteriskSession{cfg: cfg, answer: answer, format: codec.Telephony, out: make([]byte, 0, asteriskMaxCommand)}, nil
}

const (
	// asteriskMaxMessage is the longest WebSocket message chan_websocket
	// takes: a longer one closes the socket and hangs the call up.
	asteriskMaxMessage = 65500
	// asteriskMaxCommand is the longest text command chan_websocket reads
	// (MAX_TEXT_MESSAGE_LEN); it logs and drops a longer one.
	asteriskMaxCommand = 128
	// asteriskFrameMs is the ptime of every format the host carries.
	asteriskFrameMs = 20
)

// asteriskFormats are the channel formats the host carries, by the name
// Asterisk gives them in MEDIA_START and in the dial string's c() option.
var asteriskFormats = []struct {
	name   string
	format codec.Format
}{
	{"ulaw", codec.Telephony},
	{"alaw", codec.Format{Encoding: codec.Alaw, Rate: 8000}},
	{"slin", codec.Format{Encoding: codec.L16, Rate: 8000}},
	{"slin16", codec.Format{Encoding: codec.L16, Rate: 16000}},
	{"slin24", codec.Format{Encoding: codec.L16, Rate: 24000}},
}

// asteriskFormatName is the Asterisk name of f, or "" if it has none.
func asteriskFormatName(f codec.Format) string {
	for _, af := range asteriskFormats {
		if af.format == f {
			return af.name
		}
	}
	return ""
}

type asteriskSession struct {
	cfg     SessionConfig
	answer  bool // send ANSWER on MEDIA_START
	started bool
	json    bool // MEDIA_START came as JSON: commands go out as JSON
	format  codec.Format
	// maxAudio bounds a frame from Asterisk; frameBytes is its
	// optimal_frame_size, the unit Audio cuts at should it ever have to.
	maxAudio, frameBytes int
	// aliases are the ids of marks sent under an id of the host's, and
	// their names; nextAlias numbers them.
	aliases   []asteriskAlias
	nextAlias uint64
	out       []byte // the last rendered command
}

type asteriskAlias struct{ id, name string }

// asteriskEvent is an event from Asterisk, read from either form.
type asteriskEvent struct {
	Event            string            `json:"event"`
	ConnectionID     string            `json:"connection_id"`
	ChannelID        string            `json:"channel_id"`
	Format           string            `json:"format"`
	OptimalFrameSize int               `json:"optimal_frame_size"`
	ChannelVariables map[string]string `json:"channel_variables"`
	Digit            string            `json:"digit"`
	CorrelationID    string            `json:"correlation_id"`
	ErrorText        string            `json:"error_text"`
}

func (a *asteriskSession) Format() codec.Format { return a.format }

func (a *asteriskSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	if len(msg) > asteriskMaxMessage {
		return limitError(asteriskName, fmt.Errorf("message of %d bytes is longer than the %d chan_websocket takes", len(msg), asteriskMaxMessage))
	}
	switch typ {
	case Binary:
		if !a.started {
			return protocolErrorf(asteriskName, "audio before MEDIA_START: Asterisk sends MEDIA_START first")
		}
		if err := checkAudio(asteriskName, len(msg), a.maxAudio, a.format); err != nil {
			return err
		}
		in.Kind, in.Audio = KindAudio, msg
		return nil
	case Text:
		e, isJSON, err := readAsteriskEvent(msg)
		if err != nil {
			return err
		}
		return a.event(e, isJSON, in)
	}
	return protocolErrorf(asteriskName, "message of unknown WebSocket type %d", int(typ))
}

// isJSONText reports whether a text message is in the JSON form: an
// object, where the plain-text form starts with a word.
func isJSONText(msg []byte) bool {
	t := bytes.TrimLeft(msg, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// readAsteriskEvent reads an event in either form. The plain-text form is
// the event's name, then key:value words; MEDIA_MARK_PROCESSED and
// MEDIA_BUFFERING_COMPLETED carry their correlation id bare instead, and
// ERROR's error_text runs to the end. Control messages are rare, so encoding/json reads the JSON form.
func readAsteriskEvent(msg []byte) (e asteriskEvent, isJSON bool, err error) {
	if isJSONText(msg) {
		if err := json.Unmarshal(msg, &e); err != nil {
			return e, true, protocolErrorf(asteriskName, "bad JSON event: %v", err)
		}
		if e.Event == "" {
			return e, true, protocolErrorf(asteriskName, `JSON message without an "event"`)
		}
		return e, true, nil
	}
	if !utf8.Valid(msg) {
		return e, false, protocolErrorf(asteriskName, "text message that is not UTF-8")
	}
	event, rest, _ := strings.Cut(strings.TrimSpace(string(msg)), " ")
	if event == "" {
		return e, false, protocolErrorf(asteriskName, "empty text message")
	}
	e.Event = event
	switch event {
	case "MEDIA_MARK_PROCESSED", "MEDIA_BUFFERING_COMPLETED":
		e.CorrelationID = rest
		return e, false, nil
	case "ERROR":
		// "ERROR channel_id:%s error_text:%s": the text runs to the end.
		if _, text, ok := strings.Cut(rest, "error_text:"); ok {
			e.ErrorText = text
		}
		return e, false, nil
	}
	for _, word := range strings.Fields(rest) {
		k, v, _ := strings.Cut(word, ":")
		switch k {
		case "connection_id":
			e.ConnectionID = v
		case "channel_id":
			e.ChannelID = v
		case "format":
			e.Format = v
		case "digit":
			e.Digit = v
		case "optimal_frame_size":
			if e.OptimalFrameSize, err = strconv.Atoi(v); err != nil || e.OptimalFrameSize < 0 {
				return e, false, protocolErrorf(asteriskName, "%s with optimal_frame_size %s, not a number of bytes", event, excerpt(v))
			}
		}
	}
	return e, false, nil
}

func (a *asteriskSession) event(e asteriskEvent, isJSON bool, in *Inbound) error {
	switch e.Event {
	case "MEDIA_START":
		return a.start(e, isJSON, in)
	case "DTMF_END":
		if len(e.Digit) != 1 || !validDigit(e.Digit[0]) {
			return protocolErrorf(asteriskName, "DTMF_END digit %s is not one of 0-9 * # A-D", excerpt(e.Digit))
		}
		in.Kind, in.Digit = KindDTMF, e.Digit[0]
	case "MEDIA_XOFF":
		in.Kind = KindPause
	case "MEDIA_XON":
		in.Kind = KindResume
	case "MEDIA_MARK_PROCESSED":
		name := a.markName(e.CorrelationID)
		if err := CheckMark("MEDIA_MARK_PROCESSED correlation_id", name); err != nil {
			return limitError(asteriskName, err)
		}
		in.Kind, in.Mark = KindMark, name
	case "ERROR":
		in.Kind, in.Text = KindError, cutText(e.ErrorText, 300)
	}
	// STATUS, QUEUE_DRAINED, MEDIA_BUFFERING_COMPLETED and events newer
	// than this code are ignored.
	return nil
}

// start reads MEDIA_START: the format, ids and channel variables.
func (a *asteriskSession) start(e asteriskEvent, isJSON bool, in *Inbound) error {
	if a.started {
		return protocolErrorf(asteriskName, "a second MEDIA_START: one connection carries one channel")
	}
	i := slices.IndexFunc(asteriskFormats, func(af struct {
		name   string
		format codec.Format
	}) bool {
		return af.name == e.Format
	})
	if i < 0 {
		return &ProtocolError{Protocol: asteriskName, Unsupported: true,
			Reason: fmt.Sprintf("MEDIA_START format %s: voxhost takes ulaw, alaw, slin, slin16 or slin24 (the dial string's c() option)", excerpt(e.Format))}
	}
	f := asteriskFormats[i].format
	frame := asteriskFrameMs * f.BytesPerMs()
	if n := e.OptimalFrameSize; n > 0 && frame%n != 0 {
		return &ProtocolError{Protocol: asteriskName, Unsupported: true,
			Reason: fmt.Sprintf("MEDIA_START optimal_frame_size %d does not divide the %d bytes of 20 ms of %s the host sends", n, frame, e.Format)}
	}
	params := maps.Clone(e.ChannelVariables)
	// The driver's own variables repeat MEDIA_START's members.
	delete(params, "MEDIA_WEBSOCKET_CONNECTION_ID")
	delete(params, "MEDIA_WEBSOCKET_OPTIMAL_FRAME_SIZE")
	if len(params) == 0 {
		params = nil
	}
	for _, id := range []struct{ what, id string }{
		{"MEDIA_START connection_id", e.ConnectionID}, {"MEDIA_START channel_id", e.ChannelID},
	} {
		if err := CheckID(id.what, id.id); err != nil {
			return limitError(asteriskName, err)
		}
	}
	if err := CheckParams("MEDIA_START channel_variables", params); err != nil {
		return limitError(asteriskName, err)
	}
	a.started, a.json, a.format = true, isJSON, f
	a.frameBytes = frame
	if e.OptimalFrameSize > 0 {
		a.frameBytes = e.OptimalFrameSize
	}
	limit := asteriskMaxMessage - asteriskMaxMessage%f.BytesPerMs()
	a.maxAudio = min(a.cfg.maxAudio(f), limit)
	in.Kind = KindStart
	in.Start = &Start{StreamID: e.ConnectionID, CallID: e.ChannelID, Params: params}
	if a.answer {
		in.Reply, in.ReplyType = a.command("ANSWER", ""), Text
	}
	return nil
}

// command renders a command with an optional correlation id in the form
// of the call: "CMD id" or {"command":"CMD","correlation_id":"id"}.
func (a *asteriskSession) command(cmd, id string) []byte {
	a.out = appendAsteriskCommand(a.out[:0], a.json, cmd, id)
	return a.out
}

func appendAsteriskCommand(dst []byte, isJSON bool, cmd, id string) []byte {
	if !isJSON {
		dst = append(dst, cmd...)
		if id != "" {
			dst = append(append(dst, ' '), id...)
		}
		return dst
	}
	dst = append(dst, `{"command":"`...)
	dst = append(dst, cmd...)
	dst = append(dst, '"')
	if id != "" {
		dst = append(dst, `,"correlation_id":`...)
		dst = appendQuoted(dst, id)
	}
	return append(dst, '}')
}

// Audio sends the frame as it is, a binary message. The host's frames are
// 20 ms (the playout's) or the size of Asterisk's own (an echo), far under
// the 65,500 bytes at which Asterisk would hang up; should one ever be
// longer, it is cut to whole frames under the limit rather than end the
// call.
func (a *asteriskSession) Audio(frame []byte) (MessageType, []byte) {
	if len(frame) > asteriskMaxMessage {
		unit := max(a.frameBytes, 1)
		frame = frame[:asteriskMaxMessage-asteriskMaxMessage%unit]
	}
	return Binary, frame
}

// Mark renders MARK_MEDIA; Asterisk returns MEDIA_MARK_PROCESSED once the
// audio sent before it reaches the front of its queue.
func (a *asteriskSession) Mark(name string) (MessageType, []byte, bool) {
	if !a.started {
		return 0, nil, false
	}
	if msg := a.command("MARK_MEDIA", name); a.sendable(name, msg) {
		return Text, msg, true
	}
	return Text, a.command("MARK_MEDIA", a.alias(name)), true
}

// asteriskAliasPrefix begins the ids the host gives marks it cannot send
// under their names; a name that begins with it is sent as an id too, so
// that a returned id means one thing.
const asteriskAliasPrefix = "voxhost-mark-"

// maxAsteriskAliases bounds the aliases a call keeps; past it the oldest
// goes, and its mark, if it ever returns, under its id.
const maxAsteriskAliases = 256

// sendable reports whether msg, MARK_MEDIA with the mark name as its
// correlation id, reaches Asterisk with the name intact: within the 128
// bytes Asterisk reads, UTF-8 without control characters, and in the
// plain-text form without the white space at either end that Asterisk
// strips.
func (a *asteriskSession) sendable(name string, msg []byte) bool {
	switch {
	case len(msg) > asteriskMaxCommand, strings.HasPrefix(name, asteriskAliasPrefix), !utf8.ValidString(name):
		return false
	case !a.json && strings.TrimSpace(name) != name:
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// alias gives name a short id of the host's.
func (a *asteriskSession) alias(name string) string {
	a.nextAlias++
	id := asteriskAliasPrefix + strconv.FormatUint(a.nextAlias, 10)
	if len(a.aliases) == maxAsteriskAliases {
		a.aliases = append(a.aliases[:0], a.aliases[1:]...)
	}
	a.aliases = append(a.aliases, asteriskAlias{id: id, name: name})
	return id
}

// markName is the name of the mark a returned id stands for.
func (a *asteriskSession) markName(id string) string {
	for i, al := range a.aliases {
		if al.id == id {
			a.aliases = append(a.aliases[:i], a.aliases[i+1:]...)
			return al.name
		}
	}
	return id
}

// Clear renders FLUSH_MEDIA, which drops what Asterisk has queued.
func (a *asteriskSession) Clear() (MessageType, []byte, bool) {
	if !a.started {
		return 0, nil, false
	}
	return Text, a.command("FLUSH_MEDIA", ""), true
}

// Event renders nothing: Asterisk has no message for an application's
// events (it logs an unknown command as a warning).
func (a *asteriskSession) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Hangup renders HANGUP: Asterisk hangs the channel up and closes the
// socket. Before MEDIA_START there is no channel to hang up.
func (a *asteriskSession) Hangup() (MessageType, []byte, bool) {
	if !a.started {
		return 0, nil, false
	}
	return Text, a.command("HANGUP", ""), true
}
