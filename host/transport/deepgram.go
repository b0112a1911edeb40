package transport

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

const deepgramName = "deepgram-agent"

// The deepgram-agent dialect: Deepgram's Voice Agent API over WebSocket,
// as @deepgram/sdk's agent.v1 types describe it. The route's upstream
// dials it with the key in a header, which is not the dialect's business:
//
//	url: wss://agent.deepgram.com/v1/agent/converse
//	headers: Authorization: Token <key>     (or Bearer <token>)
//
// Options: think_provider (open_ai, the default, anthropic, google or
// groq) and think_model (required), prompt, listen_model (Deepgram's
// speech-to-text model, e.g. nova-3), speak_provider (deepgram, the
// default, or open_ai), speak_model (e.g. aura-2-thalia-en), speak_voice
// (open_ai's only, which needs it), language and greeting.
//
// Audio is binary both ways, at the leg's format, which Settings names
// for both directions: μ-law at 8 kHz (mulaw) or L16 at 8, 16 or 24 kHz
// (linear16), output without a container.
//
// To the agent: Settings first, then the caller's audio as binary
// messages. The caller's audio flows every 20 ms, so the KeepAlive the
// API wants in a silence of the client's never falls due.
//
// From the agent: binary messages are audio; UserStartedSpeaking is a
// barge-in the agent detected (KindClear); Error and Warning are KindError
// with their description and code. Welcome, SettingsApplied,
// ConversationText (the transcripts of both sides), AgentThinking,
// AgentStartedSpeaking, AgentAudioDone, FunctionCallRequest and the rest
// are ignored, as are types it does not know.
//
// A barge-in the host detected is host-side only: the API has no client
// message that stops the agent's answer; its own voice detection hears
// the caller. Not supported: DTMF, marks, plugin events, a stop message
// (closing the socket ends the session), client-side function calls (a
// FunctionCallRequest gets no FunctionCallResponse) and mid-call updates.
func init() { RegisterDialect(deepgramDialect{}) }

type deepgramDialect struct{}

func (deepgramDialect) Name() string { return deepgramName }

func (deepgramDialect) CheckFormat(f codec.Format) error {
	if f != codec.Telephony && (f.Encoding != codec.L16 || f.Check() != nil) {
		return errFormat(deepgramName, f, "μ-law at 8000 Hz (mulaw) or L16 at 8000, 16000 or 24000 Hz (linear16)")
	}
	return nil
}

func (deepgramDialect) CheckOptions(opts map[string]string) error {
	_, err := parseDeepgramOptions(opts)
	return err
}

// deepgramOptions are a route's options, read.
type deepgramOptions struct {
	thinkProvider, thinkModel, prompt string
	listenModel                       string
	speakProvider, speakModel, voice  string
	language, greeting                string
}

// deepgramVoice is the deepgram speak provider's model when the options
// name none: its provider type requires one, and this is the voice
// Deepgram's own examples use.
const deepgramVoice = "aura-2-thalia-en"

// deepgramOptionNames are the options, as the error for an unknown one
// lists them.
const deepgramOptionNames = "greeting, language, listen_model, prompt, speak_model, speak_provider, speak_voice, think_model and think_provider"

func parseDeepgramOptions(opts map[string]string) (deepgramOptions, error) {
	o := deepgramOptions{thinkProvider: "open_ai", speakProvider: "deepgram"}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		switch v := opts[k]; k {
		case "think_provider":
			switch v {
			case "open_ai", "anthropic", "google", "groq":
				o.thinkProvider = v
			case "":
			default:
				return o, fmt.Errorf("the %s dialect's think_provider is open_ai, anthropic, google or groq, not %s", deepgramName, excerpt(v))
			}
		case "think_model":
			o.thinkModel = v
		case "prompt":
			o.prompt = v
		case "listen_model":
			o.listenModel = v
		case "speak_provider":
			switch v {
			case "deepgram", "open_ai":
				o.speakProvider = v
			case "":
			default:
				return o, fmt.Errorf("the %s dialect's speak_provider is deepgram or open_ai, not %s", deepgramName, excerpt(v))
			}
		case "speak_model":
			o.speakModel = v
		case "speak_voice":
			o.voice = v
		case "language":
			o.language = v
		case "greeting":
			o.greeting = v
		default:
			return o, fmt.Errorf("the %s dialect has no option %s (it takes %s)", deepgramName, excerpt(k), deepgramOptionNames)
		}
	}
	switch {
	case o.thinkModel == "":
		return o, fmt.Errorf("the %s dialect needs options.think_model, the %s model the agent thinks with (e.g. gpt-4o-mini)", deepgramName, o.thinkProvider)
	case o.speakProvider == "open_ai" && (o.speakModel == "" || o.voice == ""):
		return o, fmt.Errorf("the %s dialect's open_ai speak_provider needs speak_model and speak_voice (e.g. tts-1 and alloy)", deepgramName)
	case o.speakProvider == "deepgram" && o.voice != "":
		return o, fmt.Errorf("the %s dialect's deepgram speak_provider takes its voice in speak_model (e.g. aura-2-thalia-en), not speak_voice", deepgramName)
	case o.speakModel == "":
		o.speakModel = deepgramVoice
	}
	return o, nil
}

// NewBotSession takes options CheckOptions accepted.
func (deepgramDialect) NewBotSession(cfg BotConfig) BotSession {
	opts, _ := parseDeepgramOptions(cfg.Options)
	return &deepgramBot{binaryBot: newBinaryBot(cfg), opts: opts}
}

type deepgramBot struct {
	binaryBot
	opts deepgramOptions
}

// Open sends Settings: the audio both ways, the listen, think and speak
// providers, the language and greeting.
func (d *deepgramBot) Open(send func(MessageType, []byte) error) error {
	encoding := `"linear16"`
	if d.cfg.Format.Encoding == codec.Mulaw {
		encoding = `"mulaw"`
	}
	rate := strconv.Itoa(d.cfg.Format.Rate)
	b := append(d.out[:0], `{"type":"Settings","audio":{"input":{"encoding":`+encoding+`,"sample_rate":`+rate+
		`},"output":{"encoding":`+encoding+`,"sample_rate":`+rate+`,"container":"none"}},"agent":{`...)
	if o := d.opts; o.language != "" {
		b = append(b, `"language":`...)
		b = appendQuoted(b, o.language)
		b = append(b, ',')
	}
	b = append(b, `"listen":{"provider":{"type":"deepgram","version":"v1"`...)
	if d.opts.listenModel != "" {
		b = append(b, `,"model":`...)
		b = appendQuoted(b, d.opts.listenModel)
	}
	b = append(b, `}},"think":{"provider":{"type":`...)
	b = appendQuoted(b, d.opts.thinkProvider)
	b = append(b, `,"model":`...)
	b = appendQuoted(b, d.opts.thinkModel)
	b = append(b, '}')
	if d.opts.prompt != "" {
		b = append(b, `,"prompt":`...)
		b = appendQuoted(b, d.opts.prompt)
	}
	b = append(b, `},"speak":{"provider":{"type":`...)
	b = appendQuoted(b, d.opts.speakProvider)
	if d.opts.speakModel != "" {
		b = append(b, `,"model":`...)
		b = appendQuoted(b, d.opts.speakModel)
	}
	if d.opts.voice != "" {
		b = append(b, `,"voice":`...)
		b = appendQuoted(b, d.opts.voice)
	}
	b = append(b, "}}"...)
	if d.opts.greeting != "" {
		b = append(b, `,"greeting":`...)
		b = appendQuoted(b, d.opts.greeting)
	}
	d.out = append(b, "}}"...)
	return send(Text, d.out)
}

// DTMF renders nothing: the API has no message for a key.
func (d *deepgramBot) DTMF(byte) (MessageType, []byte, bool) { return 0, nil, false }

// MarkPlayed renders nothing: the agent sends no marks.
func (d *deepgramBot) MarkPlayed(string) (MessageType, []byte, bool) { return 0, nil, false }

// Event renders nothing: the agent has no use for a plugin's events.
func (d *deepgramBot) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Stop renders nothing: closing the socket ends the session.
func (d *deepgramBot) Stop() (MessageType, []byte, bool) { return 0, nil, false }

// Interrupted sends nothing: the API has no client message that stops the
// agent's answer.
func (d *deepgramBot) Interrupted(int64, bool, func(MessageType, []byte) error) error { return nil }

// deepgramEvent is what the scanner picks out of a server message.
type deepgramEvent struct {
	hasType           bool
	typ               []byte
	description, code []byte // Error's and Warning's
}

func (e *deepgramEvent) scan(msg []byte) (reason string) {
	s := scanner{buf: msg}
	return s.finish(s.members(func(key []byte) {
		switch {
		case textIs(key, "type"):
			e.hasType = true
			e.typ, _ = s.text()
		case textIs(key, "description"):
			e.description, _ = s.text()
		case textIs(key, "code"):
			e.code, _ = s.text()
		default:
			s.skip()
		}
	}))
}

// Decode reads a server message: binary audio, or a JSON event.
func (d *deepgramBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	if typ == Binary {
		return binaryBotAudio(deepgramName, msg, d.cfg.MaxAudio, d.cfg.Format, in)
	}
	var e deepgramEvent
	if err := dispatchError(deepgramName, e.scan(msg), "type", `message without a "type" member`, e.hasType, e.typ); err != nil {
		return err
	}
	switch {
	case textIs(e.typ, "UserStartedSpeaking"):
		in.Kind = KindClear
	case textIs(e.typ, "Error") || textIs(e.typ, "Warning"):
		in.Kind, in.Text = KindError, cutText(describeError(e.typ, e.description, e.code), maxBotErrorText)
	}
	return nil
}

// describeError makes the log line's text of an error event whose kind,
// description and code are string tokens (nil when absent).
func describeError(kind, description, code []byte) string {
	var k, text, c string
	_ = json.Unmarshal(kind, &k) // well-formed JSON strings, or nil
	if description == nil || json.Unmarshal(description, &text) != nil {
		text = "without a string description"
	}
	if code != nil && json.Unmarshal(code, &c) == nil && c != "" {
		text += " (" + c + ")"
	}
	return k + ": " + text
}
