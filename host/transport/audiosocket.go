package transport

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/voxhost/voxhost/host/codec"
)

const audioSocketName = "audiosocket"

// AudioSocket returns Asterisk's AudioSocket protocol, as documented at
// https://docs.asterisk.org/Configuration/Channel-Drivers/AudioSocket/ and
// in github.com/CyCoreSystems/audiosocket's README. It runs over plain TCP,
// not WebSocket: Asterisk's AudioSocket() application or its AudioSocket
// channel dials the host, so the protocol has no endpoint path (Path is
// "") and the server serves it on a listener of its own
// ((*server.Server).ServeAudioSocket, config audiosocket.listen).
//
// Every message is a frame: a type byte, a big-endian uint16 payload
// length and the payload. Asterisk sends the call's UUID (type 0x01, 16
// bytes) first, then signed-linear mono audio (0x10 at 8 kHz; 0x11 to 0x18
// at 12, 16, 24, 32, 44.1, 48, 96 and 192 kHz for a channel that agreed on
// such a codec), DTMF digits (0x03, one ASCII byte), errors (0xff) and
// hang-up (0x00). The host answers with audio in the caller's type and
// ends a call with the 0x00 frame. AudioSocket has no marks, no clear and
// no events, and Asterisk plays what it receives as it arrives, so the
// host paces what it sends (Buffers is false).
//
// The stream's format is slin at 8 kHz, what the AudioSocket() application
// always sends, until the first audio frame fixes it by its type; a later
// frame of another type is an error. ReadMessage lets the UUID frame know
// the type of the frame after it, so that the format is fixed as the call
// starts; without that (a reader that cannot peek) the host's reading
// Format after the UUID frame fixes it as it stands. The host carries 8, 16 and 24 kHz;
// the other rates are refused as unsupported, naming the rate. A session
// made with ?rate=N in its SessionConfig.Query (as the server's config may
// set for its listener) is fixed at that rate from the start.
func AudioSocket() Protocol { return audioSocketProtocol }

func init() {
	RegisterProtocol(audioSocketProtocol)
	RegisterDialect(audioSocketDialect{})
}

// The frame types. Asterisk's own names (res_audiosocket.h) are
// AST_AUDIOSOCKET_KIND_HANGUP, _UUID, _DTMF, _AUDIO (8 kHz),
// _AUDIO_SLIN12 … _AUDIO_SLIN192 and _ERROR.
const (
	asHangup   = 0x00
	asUUID     = 0x01
	asDTMF     = 0x03
	asSlin8k   = 0x10
	asSlinLast = 0x18
	asError    = 0xff
)

// asRates is the sample rate of each audio type, from asSlin8k on.
var asRates = [...]int{8000, 12000, 16000, 24000, 32000, 44100, 48000, 96000, 192000}

// The error codes Asterisk sends in an error frame's payload, bit-packed
// in one byte.
const (
	asErrHangup     = 0x01 // the calling party hung up
	asErrForwarding = 0x02 // Asterisk failed to forward a frame
	asErrMemory     = 0x04 // Asterisk failed to allocate memory
)

// asHeader is a frame's header length: type and payload length.
const asHeader = 3

// asMaxPayload is the longest payload a frame's length can say.
const asMaxPayload = 1<<16 - 1

// asHangupFrame is the hang-up frame, the same both ways.
var asHangupFrame = []byte{asHangup, 0, 0}

type audioSocket struct{ endpoint }

var audioSocketProtocol = audioSocket{endpoint{
	// No path: AudioSocket runs over a TCP listener of its own, not under
	// the server's HTTP mux. The UUID frame starts the stream, and
	// Asterisk plays audio as it arrives, so the host paces.
	name: audioSocketName,
}}

// NewSession makes a session for slin audio; a query's rate, if any, fixes
// the stream's rate from the start. A MaxFrameMs whose frames at the
// highest rate the host carries could not be framed (their length would
// not fit the header's 16 bits) is refused.
func (audioSocket) NewSession(cfg SessionConfig) (Session, error) {
	s := &audioSocketSession{format: codec.Format{Encoding: codec.L16, Rate: 8000}, maxFrameMs: cfg.MaxFrameMs}
	if cfg.Query.Has("rate") {
		f, err := codec.ParseFormat("l16", queryRate(cfg.Query))
		if err != nil {
			return nil, fmt.Errorf("audiosocket: %v", err)
		}
		s.format, s.fixed = f, true
	}
	s.maxAudio = cfg.maxAudio(s.format)
	largest := cfg.maxAudio(codec.Format{Encoding: codec.L16, Rate: codec.L16Rates[len(codec.L16Rates)-1]})
	if largest > asMaxPayload {
		return nil, fmt.Errorf("audiosocket: frames of %d ms at 24 kHz are %d bytes, more than a frame's 16-bit length carries", cfg.MaxFrameMs, largest)
	}
	s.out = make([]byte, asHeader, asHeader+largest)
	return s, nil
}

// ReadMessage reads one frame, header and payload, into *buf. It
// implements Framer; every frame is a Binary message for Decode. The
// buffer grows to the largest frame read, within limit, and is reused
// after that, so reading allocates nothing once a call's frames have been
// seen.
//
// The UUID frame starts the call, but only the audio after it says the
// stream's rate, and the host builds the call's pipeline at the start. So
// where r can peek (a *bufio.Reader, as the server reads a TCP leg
// through), the UUID frame comes with one byte more: the type of the frame
// after it, waited for and left unread. Decode takes the stream's rate from
// it, and refuses a rate the host does not carry before anything is built.
func (audioSocket) ReadMessage(r io.Reader, buf *[]byte, limit int) (MessageType, []byte, error) {
	typ, msg, err := readAudioSocketFrame(r, buf, limit)
	if err != nil || msg[0] != asUUID || len(msg) != asUUIDFrame {
		return typ, msg, err
	}
	p, ok := r.(interface{ Peek(int) ([]byte, error) })
	if !ok {
		return typ, msg, nil
	}
	next, err := p.Peek(1)
	if err != nil {
		// Nothing after the UUID: the read that follows says why.
		return typ, msg, nil
	}
	if len(*buf) == len(msg) {
		*buf = append(*buf, 0)
	}
	msg = (*buf)[:len(msg)+1]
	msg[len(msg)-1] = next[0]
	return typ, msg, nil
}

// asUUIDFrame is the length of a UUID frame.
const asUUIDFrame = asHeader + 16

// readAudioSocketFrame is ReadMessage for both roles.
func readAudioSocketFrame(r io.Reader, buf *[]byte, limit int) (MessageType, []byte, error) {
	b := *buf
	if cap(b) < asHeader {
		b = make([]byte, asHeader, 512)
		*buf = b
	}
	b = b[:cap(b)]
	if _, err := io.ReadFull(r, b[:asHeader]); err != nil {
		// EOF before a header's first byte is the peer closing between
		// frames; within one it is ErrUnexpectedEOF, a peer gone mid-frame.
		return 0, nil, err
	}
	n := asHeader + int(binary.BigEndian.Uint16(b[1:asHeader]))
	if n > limit {
		return 0, nil, &ProtocolError{Protocol: audioSocketName, Limit: true,
			Reason: fmt.Sprintf("frame of type 0x%02x with a %d-byte payload exceeds the limit of %d bytes", b[0], n-asHeader, limit)}
	}
	if n > len(b) {
		// Grow to the frame, or to double the buffer when that is more, so
		// that a call whose frames lengthen grows its buffer a few times.
		nb := make([]byte, min(max(n, 2*len(b)), limit))
		copy(nb, b[:asHeader])
		b = nb
		*buf = b
	}
	if _, err := io.ReadFull(r, b[asHeader:n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the header came, so this is mid-frame
		}
		return 0, nil, err
	}
	return Binary, b[:n], nil
}

type audioSocketSession struct {
	format     codec.Format
	fixed      bool // the format is the stream's: from the query, the first audio frame or the host's asking
	started    bool // the UUID frame has come
	maxFrameMs int
	maxAudio   int    // the longest payload of format
	out        []byte // the last rendered audio frame; its header is rewritten each time
}

// Format is the stream's format. Once the host has asked for it, it is the
// stream's for good: the host sized the call's buffers and pipeline by it,
// so a first audio frame of another rate is refused rather than carried at
// a rate the pipeline does not run at. A host that waits for the first
// audio frame before asking gets that frame's rate.
func (s *audioSocketSession) Format() codec.Format {
	if s.started {
		s.fixed = true
	}
	return s.format
}

// Decode reads one frame as ReadMessage returned it, header included.
// Types the host does not know are ignored, as Asterisk itself reads and
// drops the messages it has no use for.
func (s *audioSocketSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	next := -1 // the type of the frame after a UUID frame, as ReadMessage peeked it
	if len(msg) == asUUIDFrame+1 && msg[0] == asUUID && binary.BigEndian.Uint16(msg[1:asHeader]) == 16 {
		next, msg = int(msg[asUUIDFrame]), msg[:asUUIDFrame]
	}
	kind, payload, err := splitAudioSocketFrame(typ, msg)
	if err != nil {
		return err
	}
	switch {
	case kind == asHangup:
		in.Kind = KindStop
	case kind == asUUID:
		if err := s.uuid(payload, in); err != nil || next < asSlin8k || next > asSlinLast {
			return err
		}
		if err := s.fix(byte(next)); err != nil {
			*in = Inbound{}
			return err
		}
	case kind == asDTMF:
		if !s.started {
			return protocolErrorf(audioSocketName, "DTMF before the UUID frame: Asterisk sends the call's UUID first")
		}
		return decodeAudioSocketDTMF(payload, in)
	case kind >= asSlin8k && kind <= asSlinLast:
		if !s.started {
			return protocolErrorf(audioSocketName, "audio before the UUID frame: Asterisk sends the call's UUID first")
		}
		return s.audio(kind, payload, in)
	case kind == asError:
		decodeAudioSocketError(payload, in)
	}
	return nil
}

// splitAudioSocketFrame checks that msg is one whole frame and returns its
// type and payload.
func splitAudioSocketFrame(typ MessageType, msg []byte) (byte, []byte, error) {
	if typ != Binary {
		return 0, nil, &ProtocolError{Protocol: audioSocketName, Reason: "text message: AudioSocket frames are binary", Unsupported: true}
	}
	if len(msg) < asHeader {
		return 0, nil, protocolErrorf(audioSocketName, "frame of %d bytes is shorter than its 3-byte header", len(msg))
	}
	if n := int(binary.BigEndian.Uint16(msg[1:asHeader])); n != len(msg)-asHeader {
		return 0, nil, protocolErrorf(audioSocketName, "frame of type 0x%02x says its payload is %d bytes but carries %d", msg[0], n, len(msg)-asHeader)
	}
	return msg[0], msg[asHeader:], nil
}

// uuid starts the stream with the call's UUID, in its canonical text form.
func (s *audioSocketSession) uuid(payload []byte, in *Inbound) error {
	switch {
	case s.started:
		return protocolErrorf(audioSocketName, "a second UUID frame on one stream")
	case len(payload) != 16:
		return protocolErrorf(audioSocketName, "UUID frame with a %d-byte payload, want the 16 bytes of a UUID", len(payload))
	}
	s.started = true
	in.Kind = KindStart
	in.Start = &Start{CallID: formatUUID(payload)}
	return nil
}

// audio decodes a slin frame of the given type: the first fixes the
// stream's rate.
func (s *audioSocketSession) audio(kind byte, payload []byte, in *Inbound) error {
	if err := s.fix(kind); err != nil {
		return err
	}
	if err := checkAudio(audioSocketName, len(payload), s.maxAudio, s.format); err != nil {
		return err
	}
	in.Kind, in.Audio = KindAudio, payload
	return nil
}

// fix makes the rate of the audio type kind the stream's, or says why it
// cannot be: the host does not carry it, or the stream has another.
func (s *audioSocketSession) fix(kind byte) error {
	rate := asRates[kind-asSlin8k]
	if rate != s.format.Rate {
		if s.fixed {
			return protocolErrorf(audioSocketName, "slin at %s (type 0x%02x) on a stream of slin at %s", khz(rate), kind, khz(s.format.Rate))
		}
		f := codec.Format{Encoding: codec.L16, Rate: rate}
		if f.Check() != nil {
			return &ProtocolError{Protocol: audioSocketName, Unsupported: true,
				Reason: fmt.Sprintf("slin at %s (type 0x%02x) is not carried; voxhost takes slin at 8, 16 or 24 kHz (types 0x10, 0x12, 0x13)", khz(rate), kind)}
		}
		s.format, s.maxAudio = f, s.maxFrameMs*f.BytesPerMs()
	}
	s.fixed = true
	return nil
}

// khz names a rate as the AudioSocket documentation does, e.g. "44.1 kHz".
func khz(rate int) string { return fmt.Sprintf("%g kHz", float64(rate)/1000) }

func decodeAudioSocketDTMF(payload []byte, in *Inbound) error {
	if len(payload) != 1 || !validDigit(payload[0]) {
		return protocolErrorf(audioSocketName, "DTMF frame payload %s is not one of 0-9 * # A-D", excerpt(string(payload)))
	}
	in.Kind, in.Digit = KindDTMF, payload[0]
	return nil
}

// decodeAudioSocketError reads an error frame. Asterisk's codes are one
// byte of bits; the hang-up bit ends the stream as a hang-up frame would,
// anything else is reported and the call goes on. Other payloads are an
// application's own codes, reported as they are.
func decodeAudioSocketError(payload []byte, in *Inbound) {
	in.Kind = KindError
	switch {
	case len(payload) == 0:
		in.Text = "error frame without a code"
	case len(payload) == 1 && payload[0]&asErrHangup != 0:
		in.Kind = KindStop
	case len(payload) == 1:
		in.Text = audioSocketErrorText(payload[0])
	default:
		in.Text = "error frame with code " + hex.EncodeToString(payload[:min(len(payload), excerptBytes)])
	}
}

// audioSocketErrorText names the bits of one of Asterisk's error codes.
func audioSocketErrorText(code byte) string {
	var what []string
	for _, c := range []struct {
		bit  byte
		name string
	}{{asErrHangup, "hangup of the calling party"}, {asErrForwarding, "frame forwarding error"}, {asErrMemory, "memory allocation error"}} {
		if code&c.bit != 0 {
			what = append(what, c.name)
			code &^= c.bit
		}
	}
	if code != 0 {
		what = append(what, fmt.Sprintf("unknown code bits 0x%02x", code))
	}
	return "Asterisk reported " + strings.Join(what, ", ")
}

// formatUUID writes 16 bytes in the canonical 8-4-4-4-12 hex form.
func formatUUID(u []byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// parseUUID reads the canonical text form of a UUID, in either case.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	_, err := hex.Decode(u[:], []byte(h))
	return u, err == nil
}

// Audio renders a slin frame of the stream's rate.
func (s *audioSocketSession) Audio(frame []byte) (MessageType, []byte) {
	s.out = appendAudioSocketAudio(s.out[:0], s.format.Rate, frame)
	return Binary, s.out
}

// appendAudioSocketAudio appends a slin frame at rate, a rate of asRates.
// A frame longer than a header can say is a bug of the caller's: both
// roles size their frames below it.
func appendAudioSocketAudio(dst []byte, rate int, frame []byte) []byte {
	if len(frame) > asMaxPayload {
		panic(fmt.Sprintf("transport: AudioSocket frame of %d bytes, more than a frame carries", len(frame)))
	}
	kind := byte(asSlin8k)
	for i, r := range asRates {
		if r == rate {
			kind += byte(i)
		}
	}
	dst = append(dst, kind, byte(len(frame)>>8), byte(len(frame)))
	return append(dst, frame...)
}

// Mark renders nothing: AudioSocket has no marks.
func (s *audioSocketSession) Mark(string) (MessageType, []byte, bool) { return 0, nil, false }

// Clear renders nothing: AudioSocket has no clear. Asterisk plays what
// arrives as it arrives and the host paces it, so a barge-in only empties
// the host's own playout queue.
func (s *audioSocketSession) Clear() (MessageType, []byte, bool) { return 0, nil, false }

// Event renders nothing: AudioSocket carries audio, DTMF and hang-up only,
// and Asterisk drops the call on any other frame it reads.
func (s *audioSocketSession) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Hangup renders the terminate frame, 00 00 00.
func (s *audioSocketSession) Hangup() (MessageType, []byte, bool) {
	return Binary, asHangupFrame, true
}

// The audiosocket dialect: voxhost acting as Asterisk, for the load
// generator (and for any bot written as an AudioSocket server). Open
// sends the UUID frame, Audio slin frames of the leg's rate, DTMF a 0x03
// frame, Stop the 0x00 frame; from the app it takes slin frames of the
// leg's rate, hang-up (as KindStop) and error frames. It runs over TCP, so
// only a caller of the dialect that dials TCP can use it: the server's
// bot legs dial WebSocket and take no AudioSocket upstream.
type audioSocketDialect struct{}

func (audioSocketDialect) Name() string { return audioSocketName }

// CheckFormat takes slin at the rates a leg carries L16 at.
func (audioSocketDialect) CheckFormat(f codec.Format) error {
	if f.Encoding != codec.L16 || f.Check() != nil {
		return errFormat(audioSocketName, f, "slin (L16) at 8000, 16000 or 24000 Hz")
	}
	return nil
}

// NewBotSession sizes the session for frames of MaxAudio bytes; MaxAudio
// must fit a frame's 16-bit length.
func (audioSocketDialect) NewBotSession(cfg BotConfig) BotSession {
	checkMaxAudio(cfg.MaxAudio)
	if cfg.MaxAudio > asMaxPayload {
		panic(fmt.Sprintf("transport: AudioSocket MaxAudio %d is more than a frame carries", cfg.MaxAudio))
	}
	return &audioSocketBot{cfg: cfg, out: make([]byte, 0, asHeader+cfg.MaxAudio)}
}

type audioSocketBot struct {
	cfg BotConfig
	out []byte // the last rendered frame; the writing goroutine's
}

// Open sends the UUID frame. A call id in the canonical form of a UUID is
// sent as it is; any other is mapped onto a name-based UUID (RFC 9562
// version 5 in the URL namespace, of "voxhost:call:" and the id), since
// Asterisk's AudioSocket takes UUIDs only and the same call must always
// get the same one.
func (a *audioSocketBot) Open(send func(MessageType, []byte) error) error {
	u, ok := parseUUID(a.cfg.Call.CallID)
	if !ok {
		u = nameUUID("voxhost:call:" + a.cfg.Call.CallID)
	}
	a.out = append(append(a.out[:0], asUUID, 0, 16), u[:]...)
	return send(Binary, a.out)
}

// uuidNamespaceURL is RFC 9562's namespace for URLs,
// 6ba7b811-9dad-11d1-80b4-00c04fd430c8.
var uuidNamespaceURL = [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// nameUUID is the version 5 UUID of name in the URL namespace.
func nameUUID(name string) [16]byte {
	h := sha1.New()
	h.Write(uuidNamespaceURL[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // the RFC's variant
	return u
}

// Audio renders a slin frame of the leg's rate.
func (a *audioSocketBot) Audio(audio []byte) (MessageType, []byte) {
	a.out = appendAudioSocketAudio(a.out[:0], a.cfg.Format.Rate, audio)
	return Binary, a.out
}

// DTMF renders a DTMF frame, as Asterisk sends a digit: its ASCII byte.
func (a *audioSocketBot) DTMF(digit byte) (MessageType, []byte, bool) {
	if !validDigit(digit) {
		return 0, nil, false
	}
	a.out = append(a.out[:0], asDTMF, 0, 1, digit)
	return Binary, a.out, true
}

// MarkPlayed renders nothing: AudioSocket has no marks.
func (a *audioSocketBot) MarkPlayed(string) (MessageType, []byte, bool) { return 0, nil, false }

// Interrupted sends nothing: AudioSocket has no barge-in message.
func (a *audioSocketBot) Interrupted(int64, bool, func(MessageType, []byte) error) error { return nil }

// Event renders nothing: AudioSocket carries no events.
func (a *audioSocketBot) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Stop renders the hang-up frame.
func (a *audioSocketBot) Stop() (MessageType, []byte, bool) { return Binary, asHangupFrame, true }

// Decode reads what an app sends Asterisk: slin frames of the leg's rate
// (any whole number of samples), hang-up as KindStop and errors as
// KindError; other frames are ignored.
func (a *audioSocketBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	kind, payload, err := splitAudioSocketFrame(typ, msg)
	if err != nil {
		return err
	}
	switch {
	case kind == asHangup:
		in.Kind = KindStop
	case kind >= asSlin8k && kind <= asSlinLast:
		if rate := asRates[kind-asSlin8k]; rate != a.cfg.Format.Rate {
			return protocolErrorf(audioSocketName, "slin at %s (type 0x%02x) on a leg of slin at %s", khz(rate), kind, khz(a.cfg.Format.Rate))
		}
		if err := checkBotAudio(audioSocketName, len(payload), a.cfg.MaxAudio, a.cfg.Format); err != nil {
			return err
		}
		in.Kind, in.Audio = KindAudio, payload
	case kind == asError:
		decodeAudioSocketError(payload, in)
	}
	return nil
}
