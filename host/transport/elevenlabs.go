package transport

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

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
// (A signed URL lasts 15 minutes and is fetched per conversation from the
// REST API, which a URL template cannot do: a private agent is reached
// with the key header instead.)
//
// Options, each an override the agent must allow in its security
// settings: first_message, prompt, llm, language and voice_id; and
// dynamic.NAME, the dynamic variable NAME (a string).
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
// and dynamic variables), then the caller's audio as user_audio_chunk.
//
// From the agent: audio (audio_event.audio_base_64) is audio; interruption
// is a barge-in the agent detected (KindClear), and the audio of events
// up to its event_id is dropped, as the ElevenLabs clients do; ping is
// answered at once with pong and its event_id (Inbound.Reply); error is
// KindError with its message. user_transcript, agent_response,
// client_tool_call, vad_score and the rest are ignored, as are types it
// does not know.
//
// A barge-in the host detected is host-side only: the API has no client
// message that stops the agent's turn (user_activity holds the agent
// back from speaking, it does not cut it off). Not supported: DTMF, marks,
// plugin events, a stop message (closing the socket ends the
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
}

func parseElevenOptions(opts map[string]string) (elevenOptions, error) {
	var o elevenOptions
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v := opts[k]
		if name, ok := strings.CutPrefix(k, "dynamic."); ok {
			if name == "" {
				return o, fmt.Errorf("the %s dialect's dynamic variable option needs a name after dynamic.", elevenName)
			}
			o.dynamic = append(o.dynamic, [2]string{name, v})
			continue
		}
		switch k {
		case "first_message":
			o.firstMessage = v
		case "prompt":
			o.prompt = v
		case "llm":
			o.llm = v
		case "language":
			o.language = v
		case "voice_id":
			o.voiceID = v
		default:
			return o, fmt.Errorf("the %s dialect has no option %s (it takes dynamic.NAME, first_message, language, llm, prompt and voice_id)", elevenName, excerpt(k))
		}
	}
	return o, nil
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
	maxAudio int
	format   codec.Format
	opts     elevenOptions

	// The reading goroutine's.
	audio       []byte // the decoded audio of the last audio event
	scratch     []byte // its base64 with JSON escapes resolved
	reply       []byte // the last pong
	interrupted int64  // the event_id of the last interruption
	seen        bool   // interrupted is set

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

// DTMF renders nothing: the API has no message for a key.
func (e *elevenBot) DTMF(byte) (MessageType, []byte, bool) { return 0, nil, false }

// MarkPlayed renders nothing: the agent sends no marks.
func (e *elevenBot) MarkPlayed(string) (MessageType, []byte, bool) { return 0, nil, false }

// Event renders nothing: the agent has no use for a plugin's events.
func (e *elevenBot) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Stop renders nothing: closing the socket ends the conversation.
func (e *elevenBot) Stop() (MessageType, []byte, bool) { return 0, nil, false }

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
}

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
		default:
			s.skip()
		}
	}
	return s.finish(s.members(func(key []byte) {
		switch {
		case textIs(key, "type"):
			ev.hasType = true
			ev.typ, _ = s.text()
		case textIs(key, "audio_event") || textIs(key, "interruption_event") || textIs(key, "ping_event") ||
			textIs(key, "error_event") || textIs(key, "conversation_initiation_metadata_event"):
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
		return e.checkFormats(&ev)
	}
	return nil
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
