package transport

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

const elevenName = "elevenlabs-agent"

// The elevenlabs-agent dialect: the ElevenLabs Agents Platform's
// conversation WebSocket, as @elevenlabs/types' AsyncAPI contracts
// describe it. The route's upstream dials it with the agent in the URL
// and, for a private agent, the key in a header, which are not the
// dialect's business:
//
//	url: wss://api.elevenlabs.io/v1/convai/conversation?agent_id=<agent>
//	headers: xi-api-key: <key>           (private agents only)
//
// With the option signed_url: true the host first asks ElevenLabs for a
// signed URL, as its docs have a server do for a private agent: a GET of
// get-signed-url (https://api.elevenlabs.io/v1/convai/conversation/get-signed-url?agent_id=<agent>:
// the upstream URL with https for wss and /get-signed-url after its path)
// with the route's headers, the key among them, then dials the signed_url
// it answers, which must be on the same host, without the headers: the
// key never goes on the WebSocket, and the signature is good for the one
// conversation (begun within 15 minutes).
//
// Options, each an override the agent must allow in its security
// settings: first_message, prompt, llm, language and voice_id; and
// dynamic.NAME, the dynamic variable NAME (a string); and signed_url.
//
// Audio is the agent's: its user input and agent output formats are set
// on the agent, not by the client, so the route's upstream codec and rate
// must name the same, μ-law at 8 kHz (ulaw_8000) or L16 at 8, 16 or 24
// kHz (pcm_8000, pcm_16000, pcm_24000), both ways. The
// conversation_initiation_metadata the agent sends first names its
// formats; one the leg does not carry ends the leg with a *ProtocolError
// naming both.
//
// To the agent: conversation_initiation_client_data first (the overrides
// and dynamic variables), then, once its conversation_initiation_metadata
// has come (KindReady: @elevenlabs/client's WebSocketConnection waits for
// it before it hands the connection over; the host holds the caller's
// audio until then), the caller's audio as user_audio_chunk.
//
// From the agent: audio (audio_event.audio_base_64) is audio; interruption
// is a barge-in the agent detected (KindClear), and the audio of events
// up to its event_id is dropped, as the ElevenLabs clients do; ping is
// answered at once with pong and its event_id (Inbound.Reply); error is
// KindError with its message. user_transcript is a caller_transcript
// event, agent_response a bot_transcript and client_tool_call a tool_call
// (BotEvent). vad_score, agent_response_correction and the rest of the
// types @elevenlabs/types 0.23.0 declares are ignored; other types are
// ignored and counted as unknown.
//
// A barge-in the host detected is host-side only: of the client events
// the AsyncAPI contracts declare (user_audio_chunk, pong,
// conversation_initiation_client_data, client_tool_result,
// contextual_update, user_message, user_activity, feedback,
// mcp_tool_approval_result, multimodal_message, file_input) none stops the
// agent's turn: user_activity holds the agent back from starting to speak,
// it does not cut it off, and user_message adds a turn. Not supported:
// DTMF, marks, plugin events, a stop message (closing the socket ends the
// conversation), client tools (a client_tool_call gets no
// client_tool_result) and contextual updates.
func init() { RegisterDialect(elevenDialect{}) }

type elevenDialect struct{}

func (elevenDialect) Name() string { return elevenName }

// elevenFormatName is the agent's name for the leg's format, or "" for
// one the agent has no name for.
func elevenFormatName(f codec.Format) string {
	switch {
	case f == codec.Telephony:
		return "ulaw_8000"
	case f.Encoding == codec.L16 && f.Check() == nil:
		return "pcm_" + strconv.Itoa(f.Rate)
	}
	return ""
}

func (elevenDialect) CheckFormat(f codec.Format) error {
	if elevenFormatName(f) == "" {
		return errFormat(elevenName, f, "μ-law at 8000 Hz (ulaw_8000) or L16 at 8000, 16000 or 24000 Hz (pcm_8000, pcm_16000, pcm_24000), as the agent is configured")
	}
	return nil
}

func (elevenDialect) CheckOptions(opts map[string]string) error {
	_, err := parseElevenOptions(opts)
	return err
}

// elevenOptions are a route's options, read.
type elevenOptions struct {
	firstMessage, prompt, llm, language, voiceID string
	dynamic                                      [][2]string // name, value, sorted by name
	signedURL                                    bool
}

var elevenOptionTable = optionTable[elevenOptions]{dialect: elevenName, options: []option[elevenOptions]{
	{name: "first_message", set: func(o *elevenOptions, v string) { o.firstMessage = v }},
	{name: "prompt", set: func(o *elevenOptions, v string) { o.prompt = v }},
	{name: "llm", set: func(o *elevenOptions, v string) { o.llm = v }},
	{name: "language", set: func(o *elevenOptions, v string) { o.language = v }},
	{name: "voice_id", set: func(o *elevenOptions, v string) { o.voiceID = v }},
	{name: "signed_url", values: trueOrFalse, set: func(o *elevenOptions, v string) { o.signedURL = v == "true" }},
}, prefix: "dynamic.", setPrefixed: func(o *elevenOptions, name, v string) error {
	if name == "" {
		return fmt.Errorf("the %s dialect's dynamic variable option needs a name after dynamic.", elevenName)
	}
	o.dynamic = append(o.dynamic, [2]string{name, v}) // in key order, so sorted
	return nil
}}

func parseElevenOptions(opts map[string]string) (elevenOptions, error) {
	var o elevenOptions
	err := elevenOptionTable.read(opts, &o)
	return o, err
}

// The parts of user_audio_chunk around its audio.
const (
	elevenAudioHead = `{"user_audio_chunk":"`
	elevenAudioTail = `"}`
)

// NewBotSession takes options CheckOptions accepted.
func (elevenDialect) NewBotSession(cfg BotConfig) BotSession {
	checkMaxAudio(cfg.MaxAudio)
	opts, _ := parseElevenOptions(cfg.Options)
	return &elevenBot{
		maxAudio: cfg.MaxAudio,
		format:   cfg.Format,
		opts:     opts,
		audio:    payloadBuffer(cfg.MaxAudio),
		reply:    make([]byte, 0, 64),
		out:      make([]byte, 0, len(elevenAudioHead)+base64.StdEncoding.EncodedLen(cfg.MaxAudio)+len(elevenAudioTail)),
	}
}

type elevenBot struct {
	speechBot
	maxAudio int
	format   codec.Format
	opts     elevenOptions

	// The reading goroutine's.
	audio       []byte // the decoded audio of the last audio event
	scratch     []byte // its base64 with JSON escapes resolved
	reply       []byte // the last pong
	interrupted int64  // the event_id of the last interruption
	seen        bool   // interrupted is set
	events      botEvents

	// The writing goroutine's.
	out []byte
}

// Open sends conversation_initiation_client_data.
func (e *elevenBot) Open(send func(MessageType, []byte) error) error {
	o := e.opts
	b := append(e.out[:0], `{"type":"conversation_initiation_client_data"`...)
	if o.firstMessage != "" || o.prompt != "" || o.llm != "" || o.language != "" || o.voiceID != "" {
		b = append(b, `,"conversation_config_override":{`...)
		if o.firstMessage != "" || o.prompt != "" || o.llm != "" || o.language != "" {
			b = append(b, `"agent":{`...)
			comma := false
			member := func(key, v string) {
				if v == "" {
					return
				}
				if comma {
					b = append(b, ',')
				}
				comma = true
				b = append(b, key...)
				b = appendQuoted(b, v)
			}
			member(`"first_message":`, o.firstMessage)
			member(`"language":`, o.language)
			if o.prompt != "" || o.llm != "" {
				if comma {
					b = append(b, ',')
				}
				b = append(b, `"prompt":{`...)
				comma = false
				member(`"prompt":`, o.prompt)
				member(`"llm":`, o.llm)
				b = append(b, '}')
			}
			b = append(b, '}')
			if o.voiceID != "" {
				b = append(b, ',')
			}
		}
		if o.voiceID != "" {
			b = append(b, `"tts":{"voice_id":`...)
			b = appendQuoted(b, o.voiceID)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if len(o.dynamic) > 0 {
		b = append(b, `,"dynamic_variables":{`...)
		for i, kv := range o.dynamic {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuoted(b, kv[0])
			b = append(b, ':')
			b = appendQuoted(b, kv[1])
		}
		b = append(b, '}')
	}
	e.out = append(b, '}')
	return send(Text, e.out)
}

// Audio renders user_audio_chunk.
func (e *elevenBot) Audio(audio []byte) (MessageType, []byte) {
	b := append(e.out[:0], elevenAudioHead...)
	b = base64.StdEncoding.AppendEncode(b, audio)
	e.out = append(b, elevenAudioTail...)
	return Text, e.out
}

// Interrupted sends nothing: the API has no client message that stops the
// agent's turn.
func (e *elevenBot) Interrupted(int64, bool, func(MessageType, []byte) error) error { return nil }

// elevenEvent is what the scanner picks out of a server event: string
// tokens viewing the message, nil when absent or not a string; number
// tokens likewise.
type elevenEvent struct {
	hasType       bool
	typ           []byte
	audio         []byte // audio_event.audio_base_64
	eventID       []byte // the event_id of audio_event, interruption_event or ping_event
	message       []byte // error_event.message
	errorType     []byte // error_event.error_type
	input, output []byte // conversation_initiation_metadata_event's formats
	transcript    []byte // user_transcription_event.user_transcript
	response      []byte // agent_response_event.agent_response
	tool          toolTokens
}

// toolTokens are client_tool_call's members: string tokens, and the
// parameters' JSON.
type toolTokens struct{ name, id, parameters []byte }

// elevenServerTypes are the types of the agent's events @elevenlabs/types
// 0.23.0 declares, which Decode does not count as unknown.
var elevenServerTypes = []string{"conversation_initiation_metadata", "audio", "user_transcript", "tentative_user_transcript",
	"agent_response", "agent_response_correction", "agent_chat_response_part", "agent_reasoning_response_part",
	"interruption", "client_tool_call", "rich_content", "agent_tool_request", "agent_tool_response",
	"agent_tool_response_full_payload", "mcp_tool_call", "mcp_connection_status", "vad_score", "ping", "context_usage",
	"asr_initiation_metadata", "guardrail_triggered", "internal_turn_probability", "internal_tentative_agent_response",
	"agent_typing", "external_agent_connected", "external_agent_disconnected", "error", "user_message", "multimodal_message", "file_input"}

// elevenEventMembers are the members whose objects scan reads.
var elevenEventMembers = []string{"audio_event", "interruption_event", "ping_event", "error_event", "conversation_initiation_metadata_event",
	"user_transcription_event", "agent_response_event", "client_tool_call"}

func (ev *elevenEvent) scan(msg []byte) (reason string) {
	s := scanner{buf: msg}
	inner := func(key []byte) {
		switch {
		case textIs(key, "audio_base_64"):
			ev.audio, _ = s.text()
		case textIs(key, "event_id"):
			ev.eventID = s.numberToken()
		case textIs(key, "message"):
			ev.message, _ = s.text()
		case textIs(key, "error_type"):
			ev.errorType, _ = s.text()
		case textIs(key, "user_input_audio_format"):
			ev.input, _ = s.text()
		case textIs(key, "agent_output_audio_format"):
			ev.output, _ = s.text()
		case textIs(key, "user_transcript"):
			ev.transcript, _ = s.text()
		case textIs(key, "agent_response"):
			ev.response, _ = s.text()
		case textIs(key, "tool_name"):
			ev.tool.name, _ = s.text()
		case textIs(key, "tool_call_id"):
			ev.tool.id, _ = s.text()
		case textIs(key, "parameters"):
			ev.tool.parameters = s.value()
		default:
			s.skip()
		}
	}
	return s.finish(s.members(func(key []byte) {
		switch {
		case textIs(key, "type"):
			ev.hasType = true
			ev.typ, _ = s.text()
		case slices.ContainsFunc(elevenEventMembers, func(m string) bool { return textIs(key, m) }):
			if !s.members(inner) {
				s.skip()
			}
		default:
			s.skip()
		}
	}))
}

// numberToken consumes the next value and returns it if it is a number,
// else nil.
func (s *scanner) numberToken() []byte {
	c := s.peek()
	start := s.pos
	s.skip()
	if c != '-' && !isDigit(c) || s.err != "" {
		return nil
	}
	return s.buf[start:s.pos]
}

// Decode reads a server event. Audio decodes without allocating.
func (e *elevenBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	if typ != Text {
		return &ProtocolError{Protocol: elevenName, Reason: "binary message: the agent sends JSON text messages only", Unsupported: true}
	}
	var ev elevenEvent
	if err := dispatchError(elevenName, ev.scan(msg), "type", `message without a "type" member`, ev.hasType, ev.typ); err != nil {
		return err
	}
	e.events.reset()
	switch {
	case textIs(ev.typ, "audio"):
		return e.audioEvent(&ev, in)
	case textIs(ev.typ, "interruption"):
		if id, ok := eventID(ev.eventID); ok {
			e.interrupted, e.seen = id, true
		}
		in.Kind = KindClear
	case textIs(ev.typ, "ping"):
		if ev.eventID == nil {
			return protocolErrorf(elevenName, "ping without a numeric ping_event.event_id")
		}
		e.reply = append(append(append(e.reply[:0], `{"type":"pong","event_id":`...), ev.eventID...), '}')
		in.Reply, in.ReplyType = e.reply, Text
	case textIs(ev.typ, "error"):
		text := "error event without a string error_event.message"
		if ev.message != nil {
			_ = json.Unmarshal(ev.message, &text) // a well-formed JSON string
		}
		if ev.errorType != nil {
			var t string
			_ = json.Unmarshal(ev.errorType, &t)
			text = t + ": " + text
		}
		in.Kind, in.Text = KindError, cutText(text, maxBotErrorText)
	case textIs(ev.typ, "conversation_initiation_metadata"):
		if err := e.checkFormats(&ev); err != nil {
			return err
		}
		in.Kind = KindReady
	case textIs(ev.typ, "user_transcript") && ev.transcript != nil:
		e.events.transcript(BotEventCallerTranscript, ev.transcript, true)
	case textIs(ev.typ, "agent_response") && ev.response != nil:
		e.events.transcript(BotEventBotTranscript, ev.response, true)
	case textIs(ev.typ, "client_tool_call"):
		e.events.toolCalls([]toolCall{{ID: stringToken(ev.tool.id), Name: stringToken(ev.tool.name), Arguments: ev.tool.parameters}})
	default:
		in.Unknown = !slices.ContainsFunc(elevenServerTypes, func(t string) bool { return textIs(ev.typ, t) })
	}
	e.events.set(in)
	return nil
}

// stringToken reads a JSON string token, "" for none.
func stringToken(q []byte) string {
	var s string
	_ = json.Unmarshal(q, &s)
	return s
}

// eventID reads an event_id token, a whole number.
func eventID(q []byte) (int64, bool) {
	id, err := strconv.ParseInt(string(q), 10, 64)
	return id, err == nil
}

// audioEvent decodes an audio event's audio, unless an interruption with
// a later event_id cut it off.
func (e *elevenBot) audioEvent(ev *elevenEvent, in *Inbound) error {
	if ev.audio == nil {
		return protocolErrorf(elevenName, "audio event without a string audio_event.audio_base_64")
	}
	if id, ok := eventID(ev.eventID); ok && e.seen && id <= e.interrupted {
		return nil // audio the agent sent before it heard the caller
	}
	n, err := decodeBase64Token(elevenName, "audio_base_64", ev.audio, e.audio, &e.scratch, e.maxAudio)
	if err != nil || n == 0 {
		return err
	}
	if err := checkBotAudio(elevenName, n, e.maxAudio, e.format); err != nil {
		return err
	}
	in.Kind, in.Audio = KindAudio, e.audio[:n]
	return nil
}

// checkFormats refuses an agent whose formats the leg does not carry.
func (e *elevenBot) checkFormats(ev *elevenEvent) error {
	want := elevenFormatName(e.format)
	for _, f := range []struct {
		what string
		q    []byte
	}{{"user input", ev.input}, {"agent output", ev.output}} {
		if f.q != nil && !textIs(f.q, want) {
			var got string
			_ = json.Unmarshal(f.q, &got)
			return protocolErrorf(elevenName, "the agent's %s audio format is %s, the route's upstream carries %s: set the upstream's codec and rate to the agent's, or the agent's formats to %s",
				f.what, excerpt(got), want, want)
		}
	}
	return nil
}

// Acknowledgement names conversation_initiation_metadata, which the host
// waits for.
func (elevenDialect) Acknowledgement() string { return "conversation_initiation_metadata" }

// SignURL returns the get-signed-url endpoint for the conversation URL
// dial when the options ask for a signed URL: the same host, https for
// wss (http for ws), /get-signed-url after the path, and the query, whose
// agent_id names the agent.
func (elevenDialect) SignURL(dial string, opts map[string]string) (string, error) {
	if o, _ := parseElevenOptions(opts); !o.signedURL {
		return "", nil
	}
	u, err := url.Parse(dial)
	if err != nil {
		return "", fmt.Errorf("the upstream url does not parse")
	}
	switch u.Scheme {
	case "wss":
		u.Scheme = "https"
	case "ws":
		u.Scheme = "http"
	}
	if u.Query().Get("agent_id") == "" {
		return "", fmt.Errorf("the %s dialect's signed_url needs the agent in the upstream url (?agent_id=...)", elevenName)
	}
	u.Path += "/get-signed-url"
	return u.String(), nil
}

// maxSignedURL bounds the URL get-signed-url answers with.
const maxSignedURL = 4096

// SignedURL reads get-signed-url's answer, {"signed_url":"wss://..."},
// or its refusal, {"detail":{"status":"invalid_api_key","message":"..."}}.
func (elevenDialect) SignedURL(status int, body []byte) (string, error) {
	var answer struct {
		SignedURL string `json:"signed_url"`
		Detail    struct{ Status, Message string }
	}
	err := json.Unmarshal(body, &answer)
	switch {
	case status != 200 && err == nil && answer.Detail.Message != "":
		return "", fmt.Errorf("get-signed-url answered HTTP %d: %s", status, cutText(answer.Detail.Status+": "+answer.Detail.Message, maxBotErrorText))
	case status != 200:
		return "", fmt.Errorf("get-signed-url answered HTTP %d", status)
	case err != nil || answer.SignedURL == "":
		return "", fmt.Errorf("get-signed-url answered without a signed_url")
	case len(answer.SignedURL) > maxSignedURL:
		return "", fmt.Errorf("get-signed-url answered with a signed_url over %d bytes", maxSignedURL)
	}
	if u, err := url.Parse(answer.SignedURL); err != nil || u.Scheme != "wss" && u.Scheme != "ws" {
		return "", fmt.Errorf("get-signed-url answered with a signed_url that is not a ws:// or wss:// url")
	}
	return answer.SignedURL, nil
}
