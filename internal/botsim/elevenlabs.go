package botsim

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// elevenBot is the server's side of the ElevenLabs Agents Platform's
// conversation WebSocket, as @elevenlabs/types' AsyncAPI contracts
// describe it: the client's conversation_initiation_client_data, checked
// against the agent's allowed overrides, answered with
// conversation_initiation_metadata naming the agent's audio formats and a
// ping; user_audio_chunk in, audio events out, numbered by event_id;
// interruption as its barge-in. A client message it cannot take is
// answered with an error event (code 1008), then the socket closes.
//
// An agent's formats and allowed overrides are set on ElevenLabs' side;
// the simulator takes them from its URL's query instead: audio (ulaw_8000,
// the default, pcm_8000, pcm_16000 or pcm_24000) and overrides (a comma
// list of first_message, language, prompt, llm and voice_id; all of them
// when absent).
type elevenBot struct {
	format    codec.Format
	formatErr error
	overrides []string

	begun   bool   // the reader's: the conversation has begun
	inAudio []byte // the reader's: a chunk's audio

	// Under wmu.
	out     []byte
	eventID int64
}

func newElevenBot(r *http.Request) *elevenBot {
	q := r.URL.Query()
	e := &elevenBot{format: codec.Telephony, overrides: []string{"first_message", "language", "prompt", "llm", "voice_id"}}
	if a := q.Get("audio"); a != "" {
		e.format, e.formatErr = elevenFormat(a)
	}
	if q.Has("overrides") {
		e.overrides = strings.Split(q.Get("overrides"), ",")
	}
	return e
}

// elevenFormat reads an agent's audio format name.
func elevenFormat(name string) (codec.Format, error) {
	if name == "ulaw_8000" {
		return codec.Telephony, nil
	}
	if rate, ok := strings.CutPrefix(name, "pcm_"); ok {
		r, _ := strconv.Atoi(rate)
		if f := (codec.Format{Encoding: codec.L16, Rate: r}); f.Check() == nil {
			return f, nil
		}
	}
	return codec.Format{}, fmt.Errorf("audio format %q is not one the simulator carries (ulaw_8000, pcm_8000, pcm_16000, pcm_24000)", name)
}

func (e *elevenBot) formatName() string {
	if e.format == codec.Telephony {
		return "ulaw_8000"
	}
	return "pcm_" + strconv.Itoa(e.format.Rate)
}

// elevenInitiation is ConversationInitiationClientToOrchestratorEvent, as
// far as the simulator reads it; unknown members are refused.
type elevenInitiation struct {
	Type                       string `json:"type"`
	ConversationConfigOverride *struct {
		Agent *struct {
			FirstMessage *string `json:"first_message"`
			Language     *string `json:"language"`
			Prompt       *struct {
				Prompt *string `json:"prompt"`
				LLM    *string `json:"llm"`
			} `json:"prompt"`
		} `json:"agent"`
		TTS *struct {
			VoiceID *string `json:"voice_id"`
		} `json:"tts"`
		ASR          json.RawMessage `json:"asr"`
		Conversation json.RawMessage `json:"conversation"`
	} `json:"conversation_config_override"`
	CustomLLMExtraBody map[string]any    `json:"custom_llm_extra_body"`
	DynamicVariables   map[string]any    `json:"dynamic_variables"`
	UserID             string            `json:"user_id"`
	SourceInfo         map[string]string `json:"source_info"`
}

// overridden lists the overrides the message sets.
func (m *elevenInitiation) overridden() []string {
	var set []string
	o := m.ConversationConfigOverride
	if o == nil {
		return nil
	}
	if a := o.Agent; a != nil {
		if a.FirstMessage != nil {
			set = append(set, "first_message")
		}
		if a.Language != nil {
			set = append(set, "language")
		}
		if p := a.Prompt; p != nil && p.Prompt != nil {
			set = append(set, "prompt")
		}
		if p := a.Prompt; p != nil && p.LLM != nil {
			set = append(set, "llm")
		}
	}
	if o.TTS != nil && o.TTS.VoiceID != nil {
		set = append(set, "voice_id")
	}
	return set
}

// open sends nothing: the client opens the conversation.
func (e *elevenBot) open(*call) error { return nil }

// refuse sends an error event and ends the call.
func (e *elevenBot) refuse(c *call, errorType, message string) error {
	c.wmu.Lock()
	err := c.writeJSON(map[string]any{"type": "error", "error_event": map[string]any{"code": 1008, "message": message, "error_type": errorType}})
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	return &transport.ProtocolError{Protocol: ProtocolElevenLabs, Reason: message}
}

func (e *elevenBot) handle(c *call, typ websocket.MessageType, msg []byte) error {
	var head struct {
		Type           string  `json:"type"`
		UserAudioChunk *string `json:"user_audio_chunk"`
		EventID        int64   `json:"event_id"`
	}
	if typ != websocket.MessageText || json.Unmarshal(msg, &head) != nil {
		c.event("", truncate(string(msg), 200), nil)
		return e.refuse(c, "invalid_message", "messages are JSON text")
	}
	switch {
	case head.UserAudioChunk != nil:
		return e.userAudio(c, *head.UserAudioChunk)
	case head.Type == "conversation_initiation_client_data":
		return e.initiate(c, msg)
	case head.Type == "pong":
		c.event("pong", strconv.FormatInt(head.EventID, 10), nil)
		return nil
	}
	c.event(head.Type, "", nil)
	return nil
}

// initiate checks the overrides against the agent's and answers with
// conversation_initiation_metadata and a ping.
func (e *elevenBot) initiate(c *call, msg []byte) error {
	c.event("conversation_initiation_client_data", "", func(r *Call) { r.Sessions = appendCapped(c, r, r.Sessions, truncate(string(msg), maxExcerpt)) })
	var m elevenInitiation
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return e.refuse(c, "invalid_message", "conversation_initiation_client_data: "+err.Error())
	}
	if e.formatErr != nil {
		return e.refuse(c, "value_error", e.formatErr.Error())
	}
	for _, o := range m.overridden() {
		if !slices.Contains(e.overrides, o) {
			return e.refuse(c, "override_error", "Override for field '"+o+"' is not allowed by config.")
		}
	}
	if e.begun {
		return e.refuse(c, "invalid_message", "the conversation has begun")
	}
	e.begun = true
	msg = bytes.Clone(msg) // for started, perhaps after the reader has moved on
	return c.acknowledge(func() error {
		err := c.writeJSON(map[string]any{"type": "conversation_initiation_metadata", "conversation_initiation_metadata_event": map[string]any{
			"conversation_id": fmt.Sprintf("conv_%d", c.id), "agent_output_audio_format": e.formatName(), "user_input_audio_format": e.formatName()}})
		if err == nil {
			e.eventID++
			err = c.writeJSON(map[string]any{"type": "ping", "ping_event": map[string]any{"event_id": e.eventID, "ping_ms": nil}})
		}
		if err == nil {
			c.started(msg, e.format, e.format)
		}
		return err
	})
}

// userAudio takes a chunk of the caller's audio and, in echo mode, sends
// it back.
func (e *elevenBot) userAudio(c *call, chunk string) error {
	switch {
	case !e.begun:
		return e.refuse(c, "invalid_message", "user_audio_chunk before conversation_initiation_client_data")
	case !c.acked.Load():
		return e.refuse(c, "invalid_message", "user_audio_chunk before conversation_initiation_metadata")
	}
	var err error
	if e.inAudio, err = base64.StdEncoding.AppendDecode(e.inAudio[:0], []byte(chunk)); err != nil {
		return e.refuse(c, "invalid_message", "user_audio_chunk is not base64: "+err.Error())
	}
	c.received(e.inAudio, e.format)
	return c.echo(e.inAudio)
}

// audio renders an audio event, the next event_id.
func (e *elevenBot) audio(_ *call, chunk []byte) (websocket.MessageType, []byte) {
	e.eventID++
	b := append(e.out[:0], `{"type":"audio","audio_event":{"audio_base_64":"`...)
	b = base64.StdEncoding.AppendEncode(b, chunk)
	b = append(b, `","event_id":`...)
	b = strconv.AppendInt(b, e.eventID, 10)
	e.out = append(b, "}}"...)
	return websocket.MessageText, e.out
}

// begin sends nothing: a turn begins with its audio.
func (e *elevenBot) begin(*call) error { return nil }

// end sends agent_response, the text of the turn, as the agent does once
// it has spoken; a turn cut short has none.
func (e *elevenBot) end(c *call, name string, cut bool) error {
	if cut {
		return nil
	}
	return c.writeJSON(map[string]any{"type": "agent_response", "agent_response_event": map[string]any{"agent_response": name}})
}

// interrupt sends interruption at the next event_id: the audio events
// before it belong to the turn the caller cut off.
func (e *elevenBot) interrupt(c *call) error {
	e.eventID++
	return c.writeJSON(map[string]any{"type": "interruption", "interruption_event": map[string]any{"event_id": e.eventID}})
}

// narrate sends user_transcript, agent_response, a client_tool_call and a
// type the contracts do not have.
func (e *elevenBot) narrate(c *call) error {
	e.eventID++
	id := e.eventID
	for _, m := range []map[string]any{
		{"type": "user_transcript", "user_transcription_event": map[string]any{"user_transcript": "Where is my order?", "event_id": id}},
		{"type": "agent_response", "agent_response_event": map[string]any{"agent_response": "Let me look it up.", "event_id": id}},
		{"type": "client_tool_call", "client_tool_call": map[string]any{"tool_name": "lookup_order", "tool_call_id": "call_1", "parameters": map[string]any{"order": "A-1"}, "event_id": id}},
		{"type": "something_new"},
	} {
		if err := c.writeJSON(m); err != nil {
			return err
		}
	}
	return nil
}

// elevenAuthorized serves get-signed-url, and lets a conversation socket
// through if Config.ElevenLabsKey is unset or the request has the key or
// an unused signature; it has answered the request otherwise.
func (s *Sim) elevenAuthorized(w http.ResponseWriter, r *http.Request) bool {
	key := s.cfg.ElevenLabsKey
	if path, ok := strings.CutSuffix(r.URL.Path, "/get-signed-url"); ok {
		s.signURL(w, r, path)
		return false
	}
	if key == "" || r.Header.Get("xi-api-key") == key {
		return true
	}
	sig := r.URL.Query().Get("conversation_signature")
	s.mu.Lock()
	ok := s.signatures[sig]
	delete(s.signatures, sig)
	s.mu.Unlock()
	if !ok {
		http.Error(w, `{"detail":{"status":"authentication_failed","message":"a private agent needs an xi-api-key or a signed url"}}`, http.StatusUnauthorized)
	}
	return ok
}

// maxSignatures bounds the signatures handed out and not yet used.
const maxSignatures = 1024

// signURL answers GET get-signed-url as ElevenLabs does: with the key and
// an agent_id, {"signed_url": the conversation socket's URL with a new
// conversation_signature}.
func (s *Sim) signURL(w http.ResponseWriter, r *http.Request, path string) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method != http.MethodGet:
		http.Error(w, `{"detail":"Method Not Allowed"}`, http.StatusMethodNotAllowed)
		return
	case s.cfg.ElevenLabsKey == "" || r.Header.Get("xi-api-key") != s.cfg.ElevenLabsKey:
		http.Error(w, `{"detail":{"status":"invalid_api_key","message":"Invalid API key"}}`, http.StatusUnauthorized)
		return
	case r.URL.Query().Get("agent_id") == "":
		http.Error(w, `{"detail":[{"loc":["query","agent_id"],"msg":"field required","type":"value_error.missing"}]}`, http.StatusUnprocessableEntity)
		return
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	sig := hex.EncodeToString(raw)
	s.mu.Lock()
	if s.signatures == nil {
		s.signatures = map[string]bool{}
	}
	for old := range s.signatures {
		if len(s.signatures) < maxSignatures {
			break
		}
		delete(s.signatures, old) // the oldest or not: a bound, not an order
	}
	s.signatures[sig] = true
	s.mu.Unlock()
	q := r.URL.Query()
	q.Set("conversation_signature", sig)
	_ = json.NewEncoder(w).Encode(map[string]string{"signed_url": "ws://" + r.Host + path + "?" + q.Encode()})
}
