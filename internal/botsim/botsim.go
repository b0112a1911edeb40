package botsim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// Protocols the simulator speaks, as routes' upstream.protocol names them.
const (
	ProtocolTwilio     = "twilio"
	ProtocolRaw        = "raw"
	ProtocolOpenAI     = "openai-realtime"
	ProtocolGemini     = "gemini-live"
	ProtocolDeepgram   = "deepgram-agent"
	ProtocolElevenLabs = "elevenlabs-agent"
)

// Protocols lists the protocols in the order Handler's paths list them.
var Protocols = []string{ProtocolTwilio, ProtocolRaw, ProtocolOpenAI, ProtocolGemini, ProtocolDeepgram, ProtocolElevenLabs}

// Paths are where Handler serves each protocol.
var Paths = map[string]string{ProtocolTwilio: "/twilio", ProtocolRaw: "/raw", ProtocolOpenAI: "/openai", ProtocolGemini: "/gemini", ProtocolDeepgram: "/deepgram", ProtocolElevenLabs: "/elevenlabs"}

// Mode is what the bot answers with.
type Mode int

const (
	// Echo sends each audio frame received back after Config.Delay.
	Echo Mode = iota
	// Speak sends Config.Speech when the stream starts.
	Speak
)

// String names the mode as the CLI spells it.
func (m Mode) String() string {
	if m == Speak {
		return "speak"
	}
	return "echo"
}

// ParseMode reads a mode as the CLI spells it.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "echo":
		return Echo, nil
	case "speak":
		return Speak, nil
	}
	return 0, fmt.Errorf("unknown mode %q (want echo or speak)", s)
}

// Speech is the recording speak mode sends.
type Speech struct {
	// PCM is mono PCM16LE, as internal/audiofile reads it.
	PCM []byte
	// Rate is PCM's sample rate; the simulator resamples it to the
	// call's.
	Rate int
	// Name names the mark sent after it.
	Name string
}

// Defaults for the zero values of Config.
const (
	DefaultChunk       = 20 * time.Millisecond
	DefaultRecordAudio = 64 << 10
	DefaultRecordItems = 256
	DefaultKeepCalls   = 64
	DefaultMaxMessage  = 1 << 20
)

// Config describes the bot.
type Config struct {
	// Mode is what the bot answers with.
	Mode Mode
	// Delay is how long echo mode holds each frame before sending it back.
	Delay time.Duration
	// Speech is what speak mode sends; empty means two seconds of
	// internal/signal's speech-like test signal, named "speech".
	Speech Speech
	// Speed paces speak mode: 1 sends the recording in real time, 2 twice
	// as fast; 0 sends it as fast as the socket takes it.
	Speed float64
	// Chunk is the audio in each message speak mode sends; 0 means
	// DefaultChunk. At most a second.
	Chunk time.Duration
	// Repeat, if positive, speaks again this long after each start.
	Repeat time.Duration
	// InterruptAfter, if positive, barges in once when this much of the
	// host's audio has arrived, as Call.Interrupt does.
	InterruptAfter time.Duration
	// HoldAck makes the speech providers' servers (Gemini, Deepgram,
	// ElevenLabs) withhold their acknowledgement of a session set-up
	// (setupComplete, SettingsApplied, conversation_initiation_metadata)
	// until Sim.Acknowledge: a provider slow to set up, or, never
	// released, one that does not answer. Each refuses audio that comes
	// before its acknowledgement, held or not.
	HoldAck bool
	// ElevenLabsKey, if set, makes the ElevenLabs server a private
	// agent's: its socket takes a conversation with the key in an
	// xi-api-key header, or with a conversation_signature that GET
	// <path>/get-signed-url, with the key, handed out (single-use, as
	// ElevenLabs' are); others get HTTP 401.
	ElevenLabsKey string

	// RecordAudio caps the audio kept per call, in bytes; 0 means
	// DefaultRecordAudio, negative keeps none. Byte counts go on.
	RecordAudio int
	// RecordItems caps each list kept per call (events, marks, DTMF,
	// truncations, session updates); 0 means DefaultRecordItems.
	RecordItems int
	// KeepCalls is how many ended calls stay in Calls; 0 means
	// DefaultKeepCalls. Live calls are always there.
	KeepCalls int
	// MaxMessage is the largest message read from the host; 0 means
	// DefaultMaxMessage.
	MaxMessage int
	// Capture, if set, is handed every message the host sends, as it
	// arrives, from the call's reader; msg is valid only during the call.
	// Conformance tests check what the host sent against the provider's
	// schema with it.
	Capture func(protocol string, binary bool, msg []byte)
	// OnEnd, if set, is handed each call's record as it ends, from the
	// call's goroutine: `voxhost bench bot` logs it.
	OnEnd func(Call)
}

func (c Config) withDefaults() (Config, error) {
	if c.Chunk == 0 {
		c.Chunk = DefaultChunk
	}
	if c.RecordAudio == 0 {
		c.RecordAudio = DefaultRecordAudio
	}
	if c.RecordItems <= 0 {
		c.RecordItems = DefaultRecordItems
	}
	if c.KeepCalls <= 0 {
		c.KeepCalls = DefaultKeepCalls
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = DefaultMaxMessage
	}
	switch {
	case c.Mode != Echo && c.Mode != Speak:
		return c, fmt.Errorf("botsim: unknown mode %d", c.Mode)
	case c.Delay < 0 || c.Speed < 0 || c.Repeat < 0 || c.InterruptAfter < 0:
		return c, errors.New("botsim: negative delay, speed, repeat or interrupt time")
	case c.Chunk < time.Millisecond || c.Chunk > time.Second || c.Chunk%time.Millisecond != 0:
		return c, fmt.Errorf("botsim: chunk %v is not a whole number of milliseconds from 1 ms to 1 s", c.Chunk)
	case len(c.Speech.PCM) > 0 && c.Speech.Rate <= 0:
		return c, errors.New("botsim: speech without a sample rate")
	}
	return c, nil
}

// Sim is a running bot simulator: its handlers and what its calls
// recorded. It is safe for concurrent use.
type Sim struct {
	cfg Config
	// speech caches the recording encoded in each format a call asked for.
	speech sync.Map // codec.Format → []byte

	mu      sync.Mutex
	calls   []*call // live calls and the last KeepCalls ended ones, by id
	nextID  int
	changed chan struct{} // closed and replaced on a change while someone waits
	waiters atomic.Int32

	// signatures are ElevenLabs' signatures handed out and not yet used,
	// under mu.
	signatures map[string]bool
}

// New makes a simulator.
func New(cfg Config) (*Sim, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Sim{cfg: cfg, changed: make(chan struct{})}, nil
}

// Handler serves every protocol, each on its path of Paths and below it
// (/openai/v1/realtime is OpenAI's).
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, p := range Protocols {
		h, _ := s.ProtocolHandler(p)
		mux.Handle(Paths[p], h)
		mux.Handle(Paths[p]+"/", h)
	}
	return mux
}

// ProtocolHandler serves one protocol on whatever path it is mounted.
func (s *Sim) ProtocolHandler(protocol string) (http.Handler, error) {
	if !slices.Contains(Protocols, protocol) {
		return nil, fmt.Errorf("botsim: unknown protocol %q (have %s)", protocol, strings.Join(Protocols, ", "))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, protocol) }), nil
}

// Call is what the simulator recorded of one call, as Calls copies it.
type Call struct {
	// ID numbers the calls from 1 in the order they connected.
	ID int
	// Protocol is the protocol the call spoke.
	Protocol string
	// URL is the request's path and query, as the host expanded its
	// upstream URL template.
	URL string
	// Header is the request's header: what the route's upstream sends.
	Header http.Header
	// Begun is when the socket opened.
	Begun time.Time
	// Live is true until the call ended: the host closed the socket or
	// sent stop, or broke the protocol.
	Live bool
	// Err says why the call ended, if not by the host's stop or close.
	Err string

	// Start is the Twilio start message, decoded.
	Start *transport.Start
	// StartMessage is the message that described the stream (Twilio's and
	// raw's start, OpenAI's first session.update), at most 4 KiB of it.
	StartMessage string
	// Format is the audio the host sends and the bot answers in (for
	// OpenAI, the output format; InputFormat is the input's).
	Format      codec.Format
	InputFormat codec.Format

	// AudioIn counts the audio bytes received, Audio keeps the first
	// Config.RecordAudio of them, AudioMessages counts their messages.
	AudioIn       int64
	Audio         []byte
	AudioMessages int64
	// AudioOut counts the audio bytes the bot sent.
	AudioOut int64

	// DTMF are the keys the host sent, in order.
	DTMF string
	// MarksSent are the marks the bot sent, MarksAcked the ones the host
	// returned (played or cleared), in order.
	MarksSent, MarksAcked []string
	// Clears counts clear messages the host sent.
	Clears int
	// Interrupts counts the bot's barge-ins.
	Interrupts int
	// Stopped says the host ended the stream with its stop message.
	Stopped bool
	// Acknowledged says a speech provider's server acknowledged the
	// session set-up.
	Acknowledged bool

	// Sessions are OpenAI's session.update, Gemini's setup, Deepgram's
	// Settings and ElevenLabs' conversation_initiation_client_data
	// messages, each at most 4 KiB.
	Sessions []string
	// Cancels counts OpenAI's response.cancel messages.
	Cancels int
	// Truncates are OpenAI's conversation.item.truncate messages.
	Truncates []Truncate

	// Events are every message other than audio, in order of arrival.
	Events []Event
	// Dropped counts what the caps of Config left out of the lists.
	Dropped int
}

// Truncate is an OpenAI conversation.item.truncate.
type Truncate struct {
	ItemID       string
	ContentIndex int
	AudioEndMs   int64
}

// Event is a message from the host other than audio.
type Event struct {
	// At is when it arrived, since the call began.
	At time.Duration
	// Type is its event name (Twilio's and raw's "event", OpenAI's
	// "type").
	Type string
	// Value is what it carried that the simulator reads: a digit, a mark
	// name, an item id, or the start of an unknown message.
	Value string
}

// Calls returns copies of the live calls and the last ended ones, in the
// order they connected.
func (s *Sim) Calls() []Call {
	s.mu.Lock()
	calls := slices.Clone(s.calls)
	s.mu.Unlock()
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = c.snapshot()
	}
	return out
}

// Wait returns the calls as Calls does once cond holds for them, or when
// ctx ends, with its error. It checks again on every change the calls
// record.
func (s *Sim) Wait(ctx context.Context, cond func([]Call) bool) ([]Call, error) {
	s.waiters.Add(1)
	defer s.waiters.Add(-1)
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		calls := s.Calls()
		if cond(calls) {
			return calls, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return calls, ctx.Err()
		}
	}
}

// Interrupt makes live call id barge in: Twilio's and raw's bots stop
// what they are saying and send clear, OpenAI's sends
// input_audio_buffer.speech_started.
func (s *Sim) Interrupt(id int) error {
	c, err := s.find(id)
	if err != nil {
		return err
	}
	return c.interrupt()
}

// Acknowledge releases the acknowledgement of call id's session set-up
// that Config.HoldAck withholds: sent now if the set-up has come, else as
// soon as it does.
func (s *Sim) Acknowledge(id int) error {
	c, err := s.find(id)
	if err != nil {
		return err
	}
	return c.release()
}

// Narrate makes a speech provider's server of call id say what such a
// provider says besides audio, in its own messages: what it heard the
// caller say, what its bot says, a tool call, and a message of a type no
// version of its schema has.
func (s *Sim) Narrate(id int) error {
	c, err := s.find(id)
	if err != nil {
		return err
	}
	n, ok := c.d.(narrator)
	if !ok {
		return fmt.Errorf("botsim: call %d's %s bot has nothing to narrate", id, c.rec.Protocol)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return n.narrate(c)
}

// find returns call id.
func (s *Sim) find(id int) (*call, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		if c.id == id {
			return c, nil
		}
	}
	return nil, fmt.Errorf("botsim: no call %d", id)
}

// Live counts the calls whose socket is open.
func (s *Sim) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if !c.ended.Load() {
			n++
		}
	}
	return n
}

// touch wakes the waiters after a change; without waiters it costs an
// atomic load, since it runs for every frame of a load test.
func (s *Sim) touch() {
	if s.waiters.Load() == 0 {
		return
	}
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// add registers a new call.
func (s *Sim) add(c *call) {
	s.mu.Lock()
	s.nextID++
	c.id = s.nextID
	c.rec.ID = c.id
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	s.touch()
}

// ended forgets the oldest ended calls past KeepCalls.
func (s *Sim) ended() {
	s.mu.Lock()
	n := 0
	for _, c := range s.calls {
		if c.ended.Load() {
			n++
		}
	}
	if drop := n - s.cfg.KeepCalls; drop > 0 {
		s.calls = slices.DeleteFunc(s.calls, func(c *call) bool {
			if drop > 0 && c.ended.Load() {
				drop--
				return true
			}
			return false
		})
	}
	s.mu.Unlock()
	s.touch()
}

// Summary describes the call in a line, as `voxhost bench bot` logs it:
// "call 3 twilio /twilio: 10.00 s of audio in, 10.00 s out, dtmf 5, 1 mark
// acknowledged, stopped".
func (c Call) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "call %d %s %s: %s, %.2f s of audio in, %.2f s out", c.ID, c.Protocol, c.URL, c.Format,
		seconds(c.AudioIn, c.InputFormat), seconds(c.AudioOut, c.Format))
	if c.DTMF != "" {
		fmt.Fprintf(&b, ", dtmf %s", c.DTMF)
	}
	if n := len(c.MarksAcked); n > 0 {
		fmt.Fprintf(&b, ", %d of %d marks acknowledged", n, len(c.MarksSent))
	}
	for _, n := range []struct {
		n    int
		what string
	}{{c.Clears, "clears"}, {c.Interrupts, "barge-ins"}, {c.Cancels, "cancels"}, {len(c.Truncates), "truncations"}} {
		if n.n > 0 {
			fmt.Fprintf(&b, ", %d %s", n.n, n.what)
		}
	}
	switch {
	case c.Err != "":
		fmt.Fprintf(&b, ", ended: %s", c.Err)
	case c.Stopped:
		b.WriteString(", stopped")
	case !c.Live:
		b.WriteString(", closed")
	}
	return b.String()
}

func seconds(n int64, f codec.Format) float64 {
	return float64(n) / float64(f.BytesPerMs()) / 1000
}

// Start serves a simulator on a loopback port for the test t, until it
// ends, and returns it with its ws:// base URL: Paths name the protocols'
// endpoints below it.
func Start(t testing.TB, cfg Config) (*Sim, string) {
	t.Helper()
	sim, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(sim.Handler())
	t.Cleanup(hs.Close)
	return sim, "ws" + strings.TrimPrefix(hs.URL, "http")
}
