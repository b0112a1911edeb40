package transport

import (
	"fmt"
	"strings"

	"github.com/voxhost/voxhost/host/codec"
)

// Dialect is a protocol's client role: how voxhost speaks to a voice bot it
// dials for a relayed call (the bot leg). The bot receives the caller's
// audio after the inbound pipeline and answers with audio the outbound
// pipeline and the playout queue carry to the caller.
type Dialect interface {
	// Name names the dialect in configs, errors, logs and metrics, e.g.
	// "twilio".
	Name() string
	// CheckFormat says why the dialect cannot carry audio in f, or nil.
	CheckFormat(f codec.Format) error
	// NewBotSession makes the client state of one relayed call. Buffers
	// are sized from cfg here, once.
	NewBotSession(cfg BotConfig) BotSession
}

// BotConfig describes the bot leg of one call.
type BotConfig struct {
	// Format is the audio both ways on the bot leg; CheckFormat accepted it.
	Format codec.Format
	// MaxAudio is the largest encoded audio payload, in bytes, the session
	// accepts from the bot in one message; longer is a *ProtocolError.
	// It is also the largest payload Audio is asked to render.
	MaxAudio int
	// Call describes the call, for the dialect's start message.
	Call CallInfo
	// Options are the dialect's own settings from the route's upstream
	// (openai-realtime: api, voice, instructions, turn_detection; its
	// model goes in the URL); unknown keys were refused by CheckOptions.
	Options map[string]string
}

// CallInfo is what a bot learns about the call it serves: what a carrier's
// start message says, whichever carrier the caller came from.
type CallInfo struct {
	// CallID names the call (the carrier's call id, or the host's).
	CallID string
	// StreamID names the media stream (Twilio's streamSid); the host makes
	// one up for carriers without one.
	StreamID string
	// AccountID is the carrier account that placed the call, if known.
	AccountID string
	// Route is the route the call runs.
	Route string
	// Params are the caller leg's custom parameters (Twilio's
	// customParameters, the raw protocol's query string).
	Params map[string]string
}

// BotSession is one relayed call's client-side protocol state. It is not
// safe for concurrent use except as the call loop uses it: Decode is called
// by the goroutine reading the bot; Open, Audio, DTMF, MarkPlayed,
// Interrupted, Event and Stop by the goroutine writing to it. Render
// methods return bytes that view a session buffer, valid until the next
// render call; a false ok means the dialect has no such message.
type BotSession interface {
	// Open renders the messages that begin the stream, in order, through
	// send: Twilio's connected and start, raw's start, OpenAI's
	// session.update. The bytes handed to send view a session buffer, so
	// send must be done with them when it returns (Interrupted's too).
	Open(send func(MessageType, []byte) error) error
	// Decode parses one message from the bot into in: KindAudio (Audio in
	// the leg's format, any whole number of samples), KindMark (the bot
	// wants to know when the audio before it has played), KindClear (drop
	// the audio queued for the caller: barge-in), KindDTMF (a key the bot
	// presses, for the caller: see DigitSender), KindStop or KindIgnore.
	// Audio decodes without allocating.
	Decode(typ MessageType, msg []byte, in *Inbound) error
	// Audio renders caller audio in the leg's format for the bot.
	Audio(audio []byte) (MessageType, []byte)
	// DTMF renders a key the caller pressed.
	DTMF(digit byte) (MessageType, []byte, bool)
	// MarkPlayed renders the acknowledgement of the bot's mark name: the
	// audio sent before it has played to the caller (or was cleared).
	MarkPlayed(name string) (MessageType, []byte, bool)
	// Interrupted tells the bot the caller barged in: the audio queued for
	// the caller was dropped. heardMs is the position in the bot's audio,
	// in ms since the call began (all audio Decode returned counts, heard
	// or dropped), up to which the caller heard it, within a frame.
	// byBot says the bot asked for it (its KindClear), so it needs no
	// request to stop, only what was heard.
	Interrupted(heardMs int64, byBot bool, send func(MessageType, []byte) error) error
	// Event renders an event a plugin on the inbound path emitted.
	Event(plugin, name string, data []byte, tMs int64) (MessageType, []byte, bool)
	// Stop renders the end of the stream: the caller hung up.
	Stop() (MessageType, []byte, bool)
}

// OptionChecker is implemented by dialects that take options; a dialect
// without it takes none.
type OptionChecker interface {
	// CheckOptions says why opts cannot configure the dialect, or nil.
	CheckOptions(opts map[string]string) error
}

// CheckOptions applies d's option rules to opts.
func CheckOptions(d Dialect, opts map[string]string) error {
	if oc, ok := d.(OptionChecker); ok {
		return oc.CheckOptions(opts)
	}
	for k := range opts {
		return fmt.Errorf("the %s dialect takes no options (got %q)", d.Name(), k)
	}
	return nil
}

var dialects = newRegistry[Dialect]("dialect")

// RegisterDialect makes d available by name to routes. Each dialect's
// file registers itself in an init function; a second registration of one
// name panics.
func RegisterDialect(d Dialect) { dialects.register(d) }

// LookupDialect returns the dialect registered as name, or an error that
// lists the registered ones.
func LookupDialect(name string) (Dialect, error) {
	if d, ok := dialects.lookup(name); ok {
		return d, nil
	}
	return nil, fmt.Errorf("unknown upstream protocol %q (have %s)", name, strings.Join(dialects.names(), ", "))
}

// DialectNames lists the registered dialects, sorted.
func DialectNames() []string { return dialects.names() }

// SetupAcknowledger is implemented by a dialect whose provider
// acknowledges the session set-up Open sends and must not be sent audio
// before (Gemini: "clients should wait for a BidiGenerateContentSetupComplete
// message before sending any additional messages"): its session's Decode
// returns KindReady for the acknowledgement, the host holds the caller's
// audio until then, within a bound, and ends the leg when none comes in
// time.
type SetupAcknowledger interface {
	// Acknowledgement names the provider's message, for the error when it
	// does not come.
	Acknowledgement() string
}

// URLSigner is implemented by a dialect whose provider can hand out, per
// conversation, the URL to dial in exchange for the key (ElevenLabs'
// signed URLs), when the route's options ask for it.
type URLSigner interface {
	// SignURL returns the URL of the endpoint that hands out the signed
	// URL for the upstream URL dial, or "" when the options do not ask
	// for one.
	SignURL(dial string, opts map[string]string) (string, error)
	// SignedURL reads the endpoint's answer, of HTTP status and body (cut
	// to a bound): the URL to dial instead, or why there is none, in the
	// provider's words where it gave some.
	SignedURL(status int, body []byte) (string, error)
}
