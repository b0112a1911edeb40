package transport

import (
	"fmt"
	"io"
	"net/url"

	"github.com/voxhost/voxhost/host/codec"
)

// MessageType is the type of a WebSocket message. Its values equal
// coder/websocket's, so the server converts with a plain conversion and this
// package needs no WebSocket library.
type MessageType int

const (
	// Text is a UTF-8 text message.
	Text MessageType = 1
	// Binary is a binary message.
	Binary MessageType = 2
)

// Kind says what an inbound message asks of the host.
type Kind int

const (
	// KindIgnore is a message the host has no use for, such as Twilio's
	// connected message or an event added to a protocol after this code.
	KindIgnore Kind = iota
	// KindStart begins the stream; Inbound.Start describes it.
	KindStart
	// KindAudio carries μ-law audio in Inbound.Audio.
	KindAudio
	// KindDTMF is a key the caller pressed, in Inbound.Digit.
	KindDTMF
	// KindMark is a named point in the audio the host sent, in Inbound.Mark:
	// Twilio returns each mark once the audio before it has played.
	KindMark
	// KindStop ends the stream in order.
	KindStop
	// KindClear asks the host to drop the audio it has queued for the far
	// end: a bot's barge-in (Twilio's clear, OpenAI's speech_started).
	KindClear
	// KindError is an error the far end reported without ending the
	// stream (OpenAI's error event); Inbound.Text says what it said. The
	// host logs it and the call goes on.
	KindError
	// KindPause asks the host to stop sending audio until KindResume: the
	// far end's queue is full (Asterisk's MEDIA_XOFF). The host holds it in
	// its playout queue meanwhile.
	KindPause
	// KindResume lets the host send audio again (Asterisk's MEDIA_XON).
	KindResume
	// KindReady is a bot's acknowledgement of the session set-up its
	// dialect's Open sent (Gemini's setupComplete, Deepgram's
	// SettingsApplied): the host holds the caller's audio until it for a
	// dialect that is a SetupAcknowledger.
	KindReady
)

// String names the kind as logs and test failures show it.
func (k Kind) String() string {
	switch k {
	case KindIgnore:
		return "ignore"
	case KindStart:
		return "start"
	case KindAudio:
		return "audio"
	case KindDTMF:
		return "dtmf"
	case KindMark:
		return "mark"
	case KindStop:
		return "stop"
	case KindClear:
		return "clear"
	case KindError:
		return "error"
	case KindPause:
		return "pause"
	case KindResume:
		return "resume"
	case KindReady:
		return "ready"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Inbound is one decoded inbound message. Session.Decode overwrites every
// field, so a call keeps a single Inbound for its whole life.
type Inbound struct {
	// Kind says which of the other fields is set.
	Kind Kind
	// Audio is the payload of a KindAudio message: μ-law from a caller, the
	// leg's format from a bot. It views the
	// message or a session buffer, so it is valid until the next Decode
	// and only while the message's bytes are left alone.
	Audio []byte
	// Digit is the key of a KindDTMF message: '0'-'9', '*', '#' or 'A'-'D'.
	Digit byte
	// Mark is the name of a KindMark message.
	Mark string
	// Text is what the far end said in a KindError message, bounded to
	// a few hundred bytes.
	Text string
	// Start describes the stream of a KindStart message. It is freshly
	// allocated, so the caller may keep it.
	Start *Start
	// Reply, when not nil, is a message the protocol answers this one with
	// at once, of type ReplyType (Genesys AudioHook's opened and pong). It
	// views a session buffer, valid until the next Decode.
	Reply     []byte
	ReplyType MessageType
	// Events are what a bot's message said besides its Kind that the host
	// passes on (BotEvent: transcripts, tool calls). They view a session
	// buffer, valid until the next Decode.
	Events []BotEvent
	// Unknown marks a bot's message of a type its dialect does not know:
	// KindIgnore, and counted by the host.
	Unknown bool
}

// Start describes a stream as the protocol announced it. Its audio format
// is the session's Format once the start is decoded.
type Start struct {
	// StreamID identifies the stream (Twilio's streamSid).
	StreamID string
	// CallID identifies the call at the provider (Twilio's callSid).
	CallID string
	// AccountID is the provider account that placed the stream (Twilio's
	// accountSid).
	AccountID string
	// Tracks lists the media flows the provider will send, e.g. "inbound".
	Tracks []string
	// Params holds the custom parameters set when the stream was defined
	// (Twilio's customParameters); "pipeline" picks a named pipeline.
	Params map[string]string
}

// EncodingMulaw names μ-law as Twilio's start.mediaFormat.encoding does.
const EncodingMulaw = "audio/x-mulaw"

// SessionConfig describes the call a session is made for.
type SessionConfig struct {
	// MaxFrameMs is the longest audio payload the session accepts, in ms
	// of its format, at least 1; longer audio is a *ProtocolError.
	// Buffers are sized from it once.
	MaxFrameMs int
	// Query is the query string the caller connected with: protocols that
	// start on connect take their format from it (raw's codec and rate,
	// Exotel's sample-rate).
	Query url.Values
}

// maxAudio is the largest payload of MaxFrameMs in format f, in bytes.
func (c SessionConfig) maxAudio(f codec.Format) int {
	if c.MaxFrameMs < 1 {
		panic(fmt.Sprintf("transport: MaxFrameMs must be at least 1, got %d", c.MaxFrameMs))
	}
	return c.MaxFrameMs * f.BytesPerMs()
}

// Session is one call's protocol state: the stream's ids and the buffers its
// messages are decoded and rendered into. It is not safe for concurrent use;
// the call loop that owns it is a single goroutine.
//
// The render methods return a message type and bytes to send. The bytes view
// a session buffer (or, for raw audio, the argument itself) and are valid
// until the next render call. A false ok means the protocol has no such
// message and nothing is to be sent.
type Session interface {
	// Decode parses one inbound message into in. A message the protocol
	// forbids or that is malformed yields a *ProtocolError saying what is
	// wrong; an event the host does not know is not an error but
	// KindIgnore. Decode does not allocate for audio messages.
	Decode(typ MessageType, msg []byte, in *Inbound) error
	// Format is the stream's audio, both ways: fixed from connect for a
	// protocol that starts on connect, set by the start message otherwise
	// (and the protocol's default before it).
	Format() codec.Format
	// Audio renders a message carrying a frame in the stream's format.
	Audio(frame []byte) (MessageType, []byte)
	// Mark renders a named mark that lets the client sync with the audio
	// sent before it: the echo of a received KindMark.
	Mark(name string) (MessageType, []byte, bool)
	// Clear renders a request that the client drop the audio it has queued,
	// e.g. on barge-in.
	Clear() (MessageType, []byte, bool)
	// Event renders an event a plugin emitted for the client: its name,
	// its JSON data (empty for none) and the call's audio time in ms.
	Event(plugin, name string, data []byte, tMs int64) (MessageType, []byte, bool)
	// Hangup renders what the protocol sends to end the call from the
	// host's side before the connection closes (AudioSocket's terminate
	// frame); most protocols end with the close alone.
	Hangup() (MessageType, []byte, bool)
}

// Protocol is one wire protocol a call may speak.
type Protocol interface {
	// Name names the protocol in errors, logs and metrics, e.g. "twilio".
	Name() string
	// Path is the endpoint the server mounts the protocol at, e.g.
	// "/twilio".
	Path() string
	// NewSession makes the state of one call. An error says why the
	// connection's query cannot start a stream (an unknown codec): the
	// server refuses it before the upgrade.
	NewSession(cfg SessionConfig) (Session, error)
	// StartsOnConnect reports whether the stream starts when the socket
	// opens. If so, audio may arrive at once and no KindStart comes: the
	// stream is in the session's Format and has no ids. Otherwise audio
	// before KindStart is a *ProtocolError.
	StartsOnConnect() bool
	// Buffers reports whether the client keeps a playout buffer of its
	// own and returns each mark once the audio before it has played
	// (Twilio): the host may then send ahead of real time, within a
	// bound. Otherwise the host owns timing and paces what it sends.
	Buffers() bool
}

// endpoint is what a Protocol says of itself besides its sessions, as
// data: a protocol's type embeds it and adds NewSession and whichever of
// the optional interfaces below it implements.
type endpoint struct {
	name, path      string
	startsOnConnect bool
	buffers         bool
}

// Name names the protocol.
func (e endpoint) Name() string { return e.name }

// Path is the endpoint the server mounts the protocol at.
func (e endpoint) Path() string { return e.path }

// StartsOnConnect reports whether the stream starts when the socket opens.
func (e endpoint) StartsOnConnect() bool { return e.startsOnConnect }

// Buffers reports whether the client keeps a playout buffer and returns
// marks once played.
func (e endpoint) Buffers() bool { return e.buffers }

// Framer is implemented by protocols that run over a plain byte stream
// (TCP) rather than WebSocket messages, and frame their own messages
// (AudioSocket's type and length header). The server reads a leg of such
// a protocol through ReadMessage and writes what the session renders as
// it is: a rendered message is a whole frame.
type Framer interface {
	// ReadMessage reads one whole frame from r into *buf, growing it up
	// to limit bytes, and returns it as a message for Session.Decode. A
	// frame longer than limit is a *ProtocolError with Limit set; io.EOF
	// at a frame boundary is the peer closing in order.
	ReadMessage(r io.Reader, buf *[]byte, limit int) (MessageType, []byte, error)
}

// FrameFloor is implemented by a Protocol whose carrier sends frames
// longer than a host may cap frames at (Genesys AudioHook streams 200 ms):
// the server lets that protocol's calls carry frames of up to MinFrameMs
// whatever its own limit.
type FrameFloor interface {
	// MinFrameMs is the longest frame the carrier sends, in ms.
	MinFrameMs() int
}

// AudioChunker is implemented by a Protocol that takes audio only in
// messages of at least minBytes bytes that are a whole multiple of
// multiple bytes (Exotel: 3,200 and 320; "smaller chunks risk audio
// distortion"). The host sends frames of 20 ms, so for such a caller it
// must join ceil(minBytes/frame) frames into one message (200 ms at
// 8 kHz, 100 ms at 16 kHz, 80 ms at 24 kHz), holding back a tail until
// the next frames or the end of what the bot said.
type AudioChunker interface {
	// AudioChunk returns the fewest bytes an audio message in f may carry
	// and the unit its size must be a multiple of.
	AudioChunk(f codec.Format) (minBytes, multiple int)
}

// OrderedReplies is implemented by a Protocol whose messages to the far end
// are numbered (Genesys AudioHook's seq), so that a reply Decode renders
// must go out before any message another goroutine renders after it: the
// server then decodes and writes the reply under the lock its other writes
// to the caller take.
type OrderedReplies interface {
	// RepliesInOrder reports whether replies must be ordered so.
	RepliesInOrder() bool
}

// Subprotocoler is implemented by protocols and dialects whose WebSocket
// has a subprotocol (jambonz's audio.jambonz.org, mod_audio_fork's
// audio.drachtio.org): the server accepts, and a bot leg or the load
// generator offers, these.
type Subprotocoler interface {
	// Subprotocols lists the subprotocols, preferred first.
	Subprotocols() []string
}

// SubprotocolsOf returns v's subprotocols, or none.
func SubprotocolsOf(v any) []string {
	if sp, ok := v.(Subprotocoler); ok {
		return sp.Subprotocols()
	}
	return nil
}

// ProtocolError is an inbound message a protocol forbids or cannot parse.
type ProtocolError struct {
	// Protocol names the protocol, e.g. "twilio".
	Protocol string
	// Reason says what is wrong in words a client developer can act on.
	Reason string
	// Unsupported marks a well-formed message the host does not handle,
	// such as an unsupported media format, as opposed to a malformed one;
	// the server closes the socket with "unsupported data" for these.
	Unsupported bool
	// Limit marks a well-formed value the host will not keep because it
	// breaks one of the bounds in limits.go (too long, too many, characters
	// outside an id's set); the server closes the socket with "policy
	// violation" for these.
	Limit bool
}

// Error returns the protocol and the reason, as in
// "twilio: bad base64 in media payload at byte 12".
func (e *ProtocolError) Error() string { return e.Protocol + ": " + e.Reason }

func protocolErrorf(protocol, format string, args ...any) *ProtocolError {
	return &ProtocolError{Protocol: protocol, Reason: fmt.Sprintf(format, args...)}
}

// checkAudio enforces the audio rules every protocol shares on a payload of
// n bytes in format f: the plugin ABI promises frames of whole
// milliseconds.
func checkAudio(protocol string, n, maxAudio int, f codec.Format) error {
	switch ms := f.BytesPerMs(); {
	case n == 0:
		return protocolErrorf(protocol, "empty audio frame")
	case n > maxAudio:
		return tooLong(protocol, n, maxAudio)
	case n%ms != 0:
		return protocolErrorf(protocol, "audio frame of %d bytes is not a multiple of %d (whole milliseconds of %s)", n, ms, f)
	}
	return nil
}

func tooLong(protocol string, n, maxAudio int) error {
	return protocolErrorf(protocol, "audio frame of %d bytes exceeds the limit of %d", n, maxAudio)
}

// checkMaxAudio rejects a limit under which no frame could ever pass: that
// is a configuration bug, better caught when the call is set up.
func checkMaxAudio(maxAudio int) {
	if maxAudio < 8 {
		panic(fmt.Sprintf("transport: maxAudio must be at least 8 bytes, got %d", maxAudio))
	}
}

// noHangup is Session.Hangup for protocols that end with the close alone.
type noHangup struct{}

func (noHangup) Hangup() (MessageType, []byte, bool) { return 0, nil, false }

// validDigit reports whether c is a DTMF key.
func validDigit(c byte) bool {
	return c >= '0' && c <= '9' || c == '*' || c == '#' || c >= 'A' && c <= 'D'
}
