package transport

import (
	"encoding/json"
	"fmt"
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
// To the agent: Settings first, then, once the agent's SettingsApplied
// has come (KindReady: Deepgram's docs send Settings "before any audio",
// and SettingsApplied says the settings hold; the host holds the caller's
// audio until then), the caller's audio as binary
// messages. The caller's audio flows every 20 ms, so the KeepAlive the
// API wants in a silence of the client's never falls due.
//
// From the agent: binary messages are audio; UserStartedSpeaking is a
// barge-in the agent detected (KindClear); Error and Warning are KindError
// with their description and code. ConversationText is a caller_transcript
// (role user) or bot_transcript (role assistant) event, and
// FunctionCallRequest a tool_call event, its arguments read from their
// string (BotEvent). Welcome, AgentThinking, AgentStartedSpeaking,
// AgentAudioDone and the rest of the types @deepgram/sdk 5.13.0 declares
// are ignored; other types are ignored and counted as unknown.
//
// A barge-in the host detected is host-side only: of the client messages
// the SDK declares (Settings, UpdateSpeak, UpdatePrompt, UpdateThink,
// UpdateListen, InjectAgentMessage, InjectUserMessage, FunctionCallResponse,
// ForceEndTurn, KeepAlive) none stops the agent's answer: InjectAgentMessage
// with behavior interrupt cuts it only to say something else, and
// ForceEndTurn ends the user's turn. The agent's own voice detection hears
// the caller (UserStartedSpeaking). Not supported: DTMF, marks, plugin
// events, a stop message (closing the socket ends the session),
// client-side function calls (a FunctionCallRequest gets no
// FunctionCallResponse) and mid-call updates.
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

var deepgramOptionTable = optionTable[deepgramOptions]{dialect: deepgramName, options: []option[deepgramOptions]{
	{name: "think_provider", values: []string{"open_ai", "anthropic", "google", "groq"}, set: func(o *deepgramOptions, v string) { o.thinkProvider = v }},
	{name: "think_model", set: func(o *deepgramOptions, v string) { o.thinkModel = v }},
	{name: "prompt", set: func(o *deepgramOptions, v string) { o.prompt = v }},
	{name: "listen_model", set: func(o *deepgramOptions, v string) { o.listenModel = v }},
	{name: "speak_provider", values: []string{"deepgram", "open_ai"}, set: func(o *deepgramOptions, v string) { o.speakProvider = v }},
	{name: "speak_model", set: func(o *deepgramOptions, v string) { o.speakModel = v }},
	{name: "speak_voice", set: func(o *deepgramOptions, v string) { o.voice = v }},
	{name: "language", set: func(o *deepgramOptions, v string) { o.language = v }},
	{name: "greeting", set: func(o *deepgramOptions, v string) { o.greeting = v }},
}}

func parseDeepgramOptions(opts map[string]string) (deepgramOptions, error) {
	o := deepgramOptions{thinkProvider: "open_ai", speakProvider: "deepgram"}
	if err := deepgramOptionTable.read(opts, &o); err != nil {
		return o, err
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
	speechBot
	opts   deepgramOptions
	events botEvents // the reading goroutine's
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

// Interrupted sends nothing: the API has no client message that stops the
// agent's answer.
func (d *deepgramBot) Interrupted(int64, bool, func(MessageType, []byte) error) error { return nil }

// Acknowledgement names SettingsApplied, which the host waits for.
func (deepgramDialect) Acknowledgement() string { return "SettingsApplied" }

// deepgramEvent is what the scanner picks out of a server message.
type deepgramEvent struct {
	hasType           bool
	typ               []byte
	description, code []byte // Error's and Warning's
	role, content     []byte // ConversationText's
	functions         []byte // FunctionCallRequest's, as JSON
}

// deepgramServerTypes are the types of the server messages @deepgram/sdk
// 5.13.0 declares (agent.v1's socket Response), which Decode does not
// count as unknown.
var deepgramServerTypes = []string{"Welcome", "SettingsApplied", "ConversationText", "UserStartedSpeaking", "AgentThinking",
	"FunctionCallRequest", "FunctionCallCancelled", "FunctionCallResponse", "AgentStartedSpeaking", "AgentAudioDone",
	"Error", "Warning", "PromptUpdated", "SpeakUpdated", "ThinkUpdated", "ListenUpdated", "InjectionRefused",
	"LatencyReport", "History"}

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
		case textIs(key, "role"):
			e.role, _ = s.text()
		case textIs(key, "content"):
			e.content, _ = s.text()
		case textIs(key, "functions"):
			e.functions = s.value()
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
	d.events.reset()
	switch {
	case textIs(e.typ, "UserStartedSpeaking"):
		in.Kind = KindClear
	case textIs(e.typ, "SettingsApplied"):
		in.Kind = KindReady
	case textIs(e.typ, "Error") || textIs(e.typ, "Warning"):
		in.Kind, in.Text = KindError, cutText(describeError(e.typ, e.description, e.code), maxBotErrorText)
	case textIs(e.typ, "ConversationText") && e.content != nil:
		switch {
		case textIs(e.role, "user"):
			d.events.transcript(BotEventCallerTranscript, e.content, true)
		case textIs(e.role, "assistant"):
			d.events.transcript(BotEventBotTranscript, e.content, true)
		}
	case textIs(e.typ, "FunctionCallRequest"):
		d.events.toolCalls(deepgramCalls(e.functions))
	default:
		in.Unknown = !slices.ContainsFunc(deepgramServerTypes, func(t string) bool { return textIs(e.typ, t) })
	}
	d.events.set(in)
	return nil
}

// deepgramCalls reads FunctionCallRequest's functions, whose arguments
// are a string of JSON.
func deepgramCalls(functions []byte) []toolCall {
	var fs []struct{ ID, Name, Arguments string }
	_ = json.Unmarshal(functions, &fs) // a call it cannot read is reported without its parts
	calls := make([]toolCall, len(fs))
	for i, f := range fs {
		calls[i] = toolCall{ID: f.ID, Name: f.Name}
		if json.Valid([]byte(f.Arguments)) {
			calls[i].Arguments = json.RawMessage(f.Arguments)
		} else {
			calls[i].Arguments, _ = json.Marshal(f.Arguments) // kept as the string it is
		}
	}
	return calls
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
