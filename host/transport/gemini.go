package transport

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/voxhost/voxhost/host/codec"
)

const geminiName = "gemini-live"

// The gemini-live dialect: Google's Gemini Live API (BidiGenerateContent)
// over WebSocket, as @google/genai's LiveClientMessage and
// LiveServerMessage describe it. The route's upstream dials it with the
// key in the URL or a header, which are not the dialect's business:
//
//	url: wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent
//	headers: x-goog-api-key: <key>
//
// (or ?key=<key> in the URL; an ephemeral token goes in the URL as
// ?access_token=<token> on ...BidiGenerateContentConstrained).
//
// Options: model (required, e.g. gemini-2.5-flash-native-audio-preview-09-2025;
// "models/" is prefixed when missing), voice (a prebuilt voice name),
// language (a BCP-47 code for its speech), instructions (the system
// instruction) and transcripts ("true" asks for input and output audio
// transcriptions).
//
// Audio is L16 at 24 kHz both ways: the API always answers at 24 kHz and
// takes any rate it is told in the blob's MIME type (audio/pcm;rate=24000),
// resampling to its native 16 kHz itself, and a bot leg has one format.
//
// To the model: setup first (model, response modality AUDIO, speech
// config, system instruction, transcription configs), then, once the
// model's setupComplete has come (KindReady: the API's reference says
// "clients should wait for a BidiGenerateContentSetupComplete message
// before sending any additional messages"; the host holds the caller's
// audio until then), the caller's audio as realtimeInput.audio.
//
// From the model (JSON, in text or binary messages; the service sends
// binary): serverContent.modelTurn.parts[].inlineData is audio, all the
// parts of one message decoded together; serverContent.interrupted is a
// barge-in the model detected (KindClear); goAway is KindError (the
// service closes the socket soon after, and this dialect does not resume
// sessions). serverContent.inputTranscription and outputTranscription
// (asked for with transcripts: true) are caller_transcript and
// bot_transcript events, in the pieces the model sends them, final when
// finished; toolCall is a tool_call event (BotEvent). turnComplete,
// generationComplete, toolCallCancellation, usageMetadata,
// sessionResumptionUpdate and voice activity signals are ignored, as are
// members it does not know; a message with no member LiveServerMessage
// declares is counted as unknown. The service reports errors by closing
// the socket with a reason, which ends the bot leg.
//
// A barge-in the host detected (an inbound plugin's clear, e.g. vad
// barge_in=true) is sent as an empty clientContent, turnComplete false:
// @google/genai's LiveClientContent says "a message here will interrupt
// any current model generation", and with nothing in it nothing is added
// to the conversation, while turnComplete false leaves the next turn to
// the model's activity detection. (activityStart, the other client
// signal, may be sent only with automatic activity detection disabled,
// and then needs an activityEnd the host's plugins do not give.) Not
// supported: DTMF, marks, plugin events, a stop message (closing the
// socket ends the session), tool responses (a toolCall gets no answer)
// and session resumption.
func init() { RegisterDialect(geminiDialect{}) }

type geminiDialect struct{}

func (geminiDialect) Name() string { return geminiName }

// geminiPCM is what the API returns, and so what the leg carries.
var geminiPCM = codec.Format{Encoding: codec.L16, Rate: 24000}

func (geminiDialect) CheckFormat(f codec.Format) error {
	if f != geminiPCM {
		return errFormat(geminiName, f, "L16 at 24000 Hz (the Live API's output rate; it resamples what it is sent to its 16 kHz)")
	}
	return nil
}

func (geminiDialect) CheckOptions(opts map[string]string) error {
	_, err := parseGeminiOptions(opts)
	return err
}

// geminiOptions are a route's options, read.
type geminiOptions struct {
	model        string // with its models/ prefix
	voice        string // "" leaves the model's default
	language     string // "" leaves the model's default
	instructions string // "" sends no system instruction
	transcripts  bool
}

var geminiOptionTable = optionTable[geminiOptions]{dialect: geminiName, options: []option[geminiOptions]{
	{name: "model", set: func(o *geminiOptions, v string) {
		o.model = v
		if v != "" && !strings.HasPrefix(v, "models/") && !strings.HasPrefix(v, "projects/") {
			o.model = "models/" + v
		}
	}},
	{name: "voice", set: func(o *geminiOptions, v string) { o.voice = v }},
	{name: "language", set: func(o *geminiOptions, v string) { o.language = v }},
	{name: "instructions", set: func(o *geminiOptions, v string) { o.instructions = v }},
	{name: "transcripts", values: trueOrFalse, set: func(o *geminiOptions, v string) { o.transcripts = v == "true" }},
}}

func parseGeminiOptions(opts map[string]string) (geminiOptions, error) {
	var o geminiOptions
	if err := geminiOptionTable.read(opts, &o); err != nil {
		return o, err
	}
	if o.model == "" {
		return o, fmt.Errorf("the %s dialect needs options.model, the Live model to run (e.g. gemini-2.5-flash-native-audio-preview-09-2025)", geminiName)
	}
	return o, nil
}

// The parts of realtimeInput around its audio.
const (
	geminiAudioHead = `{"realtimeInput":{"audio":{"mimeType":"audio/pcm;rate=24000","data":"`
	geminiAudioTail = `"}}}`
)

// NewBotSession takes options CheckOptions accepted.
func (geminiDialect) NewBotSession(cfg BotConfig) BotSession {
	checkMaxAudio(cfg.MaxAudio)
	opts, _ := parseGeminiOptions(cfg.Options)
	return &geminiBot{
		maxAudio: cfg.MaxAudio,
		format:   cfg.Format,
		opts:     opts,
		audio:    payloadBuffer(cfg.MaxAudio),
		out:      make([]byte, 0, len(geminiAudioHead)+base64.StdEncoding.EncodedLen(cfg.MaxAudio)+len(geminiAudioTail)),
	}
}

type geminiBot struct {
	speechBot
	maxAudio int
	format   codec.Format
	opts     geminiOptions

	// The reading goroutine's.
	audio   []byte // the audio of the last message's parts
	scratch []byte // a part's data with its JSON escapes resolved
	events  botEvents

	// The writing goroutine's.
	out []byte
}

// Open sends setup.
func (g *geminiBot) Open(send func(MessageType, []byte) error) error {
	b := append(g.out[:0], `{"setup":{"model":`...)
	b = appendQuoted(b, g.opts.model)
	b = append(b, `,"generationConfig":{"responseModalities":["AUDIO"]`...)
	if g.opts.voice != "" || g.opts.language != "" {
		b = append(b, `,"speechConfig":{`...)
		if g.opts.voice != "" {
			b = append(b, `"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":`...)
			b = appendQuoted(b, g.opts.voice)
			b = append(b, "}}"...)
		}
		if g.opts.language != "" {
			if g.opts.voice != "" {
				b = append(b, ',')
			}
			b = append(b, `"languageCode":`...)
			b = appendQuoted(b, g.opts.language)
		}
		b = append(b, '}')
	}
	b = append(b, '}')
	if g.opts.instructions != "" {
		b = append(b, `,"systemInstruction":{"parts":[{"text":`...)
		b = appendQuoted(b, g.opts.instructions)
		b = append(b, "}]}"...)
	}
	if g.opts.transcripts {
		b = append(b, `,"inputAudioTranscription":{},"outputAudioTranscription":{}`...)
	}
	g.out = append(b, "}}"...)
	return send(Text, g.out)
}

// Audio renders realtimeInput.audio.
func (g *geminiBot) Audio(audio []byte) (MessageType, []byte) {
	b := append(g.out[:0], geminiAudioHead...)
	b = base64.StdEncoding.AppendEncode(b, audio)
	g.out = append(b, geminiAudioTail...)
	return Text, g.out
}

// geminiInterrupt is the clientContent that stops the model's turn.
const geminiInterrupt = `{"clientContent":{"turnComplete":false}}`

// Interrupted stops the model's turn with an empty clientContent, unless
// the model detected the barge-in itself and so has stopped already.
func (g *geminiBot) Interrupted(_ int64, byBot bool, send func(MessageType, []byte) error) error {
	if byBot {
		return nil
	}
	g.out = append(g.out[:0], geminiInterrupt...)
	return send(Text, g.out)
}

// Acknowledgement names setupComplete, which the host waits for.
func (geminiDialect) Acknowledgement() string { return "setupComplete" }

// geminiMessage is what the scanner picks out of a server message.
type geminiMessage struct {
	known       bool   // it has a member LiveServerMessage declares
	ready       bool   // setupComplete
	interrupted bool   // serverContent.interrupted
	goAway      bool   // it has goAway
	timeLeft    []byte // goAway.timeLeft, a string token
	n           int    // bytes of audio decoded into the session's buffer
	err         error  // the first bad audio part
	// The transcriptions' text tokens and finished flags, and toolCall's
	// JSON.
	input, output       []byte
	inputEnd, outputEnd bool
	toolCall            []byte
}

// geminiServerMembers are LiveServerMessage's members in @google/genai
// 3.3.0: a message with none of them is of a kind this dialect does not
// know.
var geminiServerMembers = []string{"setupComplete", "serverContent", "toolCall", "toolCallCancellation", "usageMetadata",
	"goAway", "sessionResumptionUpdate", "voiceActivityDetectionSignal", "voiceActivity"}

func (g *geminiBot) scan(msg []byte, m *geminiMessage) (reason string) {
	s := scanner{buf: msg}
	return s.finish(s.members(func(key []byte) {
		for _, k := range geminiServerMembers {
			m.known = m.known || textIs(key, k)
		}
		switch {
		case textIs(key, "setupComplete"):
			m.ready = true
			s.skip()
		case textIs(key, "serverContent"):
			if !s.members(func(key []byte) {
				switch {
				case textIs(key, "interrupted"):
					m.interrupted = s.peek() == 't'
					s.skip()
				case textIs(key, "modelTurn"):
					g.modelTurn(&s, m)
				case textIs(key, "inputTranscription"):
					m.input, m.inputEnd = transcription(&s)
				case textIs(key, "outputTranscription"):
					m.output, m.outputEnd = transcription(&s)
				default:
					s.skip()
				}
			}) {
				s.skip()
			}
		case textIs(key, "toolCall"):
			m.toolCall = s.value()
		case textIs(key, "goAway"):
			m.goAway = true
			if !s.members(func(key []byte) {
				if textIs(key, "timeLeft") {
					m.timeLeft, _ = s.text()
				} else {
					s.skip()
				}
			}) {
				s.skip()
			}
		default:
			s.skip()
		}
	}))
}

// transcription reads a Transcription: its text token and finished.
func transcription(s *scanner) (text []byte, finished bool) {
	if !s.members(func(key []byte) {
		switch {
		case textIs(key, "text"):
			text, _ = s.text()
		case textIs(key, "finished"):
			finished = s.peek() == 't'
			s.skip()
		default:
			s.skip()
		}
	}) {
		s.skip()
	}
	return text, finished
}

// modelTurn decodes the audio of a Content's parts, one after the other,
// into the session's buffer.
func (g *geminiBot) modelTurn(s *scanner, m *geminiMessage) {
	if !s.members(func(key []byte) {
		if !textIs(key, "parts") {
			s.skip()
			return
		}
		s.elements(func() {
			if !s.members(func(key []byte) {
				if !textIs(key, "inlineData") {
					s.skip()
					return
				}
				if !s.members(func(key []byte) {
					if !textIs(key, "data") {
						s.skip()
						return
					}
					q, ok := s.text()
					if !ok || m.err != nil {
						return
					}
					n, err := decodeBase64Token(geminiName, "inlineData.data", q, g.audio[m.n:], &g.scratch, g.maxAudio-m.n)
					m.n += n
					m.err = err
				}) {
					s.skip()
				}
			}) {
				s.skip()
			}
		})
	}) {
		s.skip()
	}
}

// elements walks the array that comes next, calling element for each,
// which must consume it; a value that is not an array is skipped.
func (s *scanner) elements(element func()) {
	if s.peek() != '[' {
		s.skip()
		return
	}
	s.enter()
	for i := 0; s.err == ""; i++ {
		c := s.peek()
		if c == ']' {
			s.pos++
			s.depth--
			return
		}
		if i > 0 {
			if c != ',' {
				s.fail("expected ',' or ']' after an array element")
				return
			}
			s.pos++
		}
		element()
	}
}

// Decode reads a server message. Audio decodes without allocating.
func (g *geminiBot) Decode(_ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	var m geminiMessage
	if reason := g.scan(msg, &m); reason != "" {
		return protocolErrorf(geminiName, "%s", reason)
	}
	g.events.reset()
	if m.input != nil {
		g.events.transcript(BotEventCallerTranscript, m.input, m.inputEnd)
	}
	if m.output != nil {
		g.events.transcript(BotEventBotTranscript, m.output, m.outputEnd)
	}
	if m.toolCall != nil {
		var tc struct {
			FunctionCalls []struct {
				ID, Name string
				Args     json.RawMessage
			}
		}
		_ = json.Unmarshal(m.toolCall, &tc) // a call it cannot read is reported without its parts
		calls := make([]toolCall, len(tc.FunctionCalls))
		for i, f := range tc.FunctionCalls {
			calls[i] = toolCall{ID: f.ID, Name: f.Name, Arguments: f.Args}
		}
		g.events.toolCalls(calls)
	}
	switch {
	case m.err != nil:
		return m.err
	case m.interrupted:
		in.Kind = KindClear
	case m.goAway:
		left := "soon"
		if m.timeLeft != nil {
			_ = json.Unmarshal(m.timeLeft, &left) // a well-formed JSON string
			left = "in " + left
		}
		in.Kind, in.Text = KindError, cutText("goAway: the service closes the session "+left, maxBotErrorText)
	case m.n > 0:
		if err := checkBotAudio(geminiName, m.n, g.maxAudio, g.format); err != nil {
			return err
		}
		in.Kind, in.Audio = KindAudio, g.audio[:m.n]
	case m.ready:
		in.Kind = KindReady
	default:
		in.Unknown = !m.known
	}
	g.events.set(in)
	return nil
}
