package botsim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
)

// openAIDefault is the Realtime API's audio until a session.update says
// otherwise: PCM16 at 24 kHz both ways.
var openAIDefault = codec.Format{Encoding: codec.L16, Rate: 24000}

// openAIBot is the server's side of the OpenAI Realtime API, as the event
// schema of openai-python's types/realtime describes it: session.created
// on connect, session.updated for each session.update (whose audio
// formats it takes), audio deltas in responses with ids, the replies to
// input_audio_buffer.commit and .clear, conversation.item.truncate
// answered and recorded, response.cancel ending the response under way.
// A client that sends the beta header (OpenAI-Beta: realtime=v1), or a
// session.update with the beta's flat formats, gets the beta names:
// response.audio.delta and flat session formats.
type openAIBot struct {
	beta  bool // under wmu once the call runs
	model string

	// The reader's.
	inAudio, pcm []byte // an append's audio, and its conversion

	// inItem numbers the caller's items, which commits and barge-ins name.
	inItem atomic.Int64

	// Under wmu.
	out      []byte // the last delta rendered
	events   int64  // numbers the server's events
	response int    // numbers the responses
	active   bool   // a response is under way
	respID   string
	itemID   string
}

func newOpenAIBot(r *http.Request) *openAIBot {
	return &openAIBot{
		beta:  strings.Contains(r.Header.Get("OpenAI-Beta"), "realtime=v1"),
		model: r.URL.Query().Get("model"),
	}
}

// openAIEvent is what the bot reads of a client event.
type openAIEvent struct {
	Type         string          `json:"type"`
	EventID      string          `json:"event_id"`
	Audio        string          `json:"audio"`
	Session      json.RawMessage `json:"session"`
	ItemID       string          `json:"item_id"`
	ContentIndex int             `json:"content_index"`
	AudioEndMs   int64           `json:"audio_end_ms"`
}

// openAISession is what the bot reads of a session: the GA audio formats
// and the beta ones.
type openAISession struct {
	Audio *struct {
		Input *struct {
			Format *openAIFormat `json:"format"`
		} `json:"input"`
		Output *struct {
			Format *openAIFormat `json:"format"`
		} `json:"output"`
	} `json:"audio"`
	InputAudioFormat  string `json:"input_audio_format"`
	OutputAudioFormat string `json:"output_audio_format"`
}

type openAIFormat struct {
	Type string `json:"type"`
	Rate int    `json:"rate"`
}

// format maps a GA format object onto the host's codecs.
func (f *openAIFormat) format() (codec.Format, error) {
	switch f.Type {
	case "audio/pcm":
		if f.Rate != 0 && f.Rate != 24000 {
			return codec.Format{}, fmt.Errorf("audio/pcm is always 24000 Hz, not %d", f.Rate)
		}
		return openAIDefault, nil
	case "audio/pcmu":
		return codec.Telephony, nil
	}
	return codec.Format{}, fmt.Errorf("audio format %q is not one the simulator carries (audio/pcm, audio/pcmu)", f.Type)
}

// betaFormat maps a beta format name onto the host's codecs.
func betaFormat(name string) (codec.Format, error) {
	switch name {
	case "pcm16":
		return openAIDefault, nil
	case "g711_ulaw":
		return codec.Telephony, nil
	}
	return codec.Format{}, fmt.Errorf("audio format %q is not one the simulator carries (pcm16, g711_ulaw)", name)
}

// formats reads the session's formats, keeping in and out where it names
// none.
func (s *openAISession) formats(in, out codec.Format) (codec.Format, codec.Format, error) {
	var err error
	if a := s.Audio; a != nil {
		if a.Input != nil && a.Input.Format != nil {
			if in, err = a.Input.Format.format(); err != nil {
				return in, out, err
			}
		}
		if a.Output != nil && a.Output.Format != nil {
			if out, err = a.Output.Format.format(); err != nil {
				return in, out, err
			}
		}
	}
	if s.InputAudioFormat != "" {
		if in, err = betaFormat(s.InputAudioFormat); err != nil {
			return in, out, err
		}
	}
	if s.OutputAudioFormat != "" {
		if out, err = betaFormat(s.OutputAudioFormat); err != nil {
			return in, out, err
		}
	}
	return in, out, nil
}

// sessionObject describes the session in formats in and out, over what
// the client set (update, a JSON object, may be nil).
func (o *openAIBot) sessionObject(c *call, update json.RawMessage, in, out codec.Format) map[string]any {
	s := map[string]any{}
	_ = json.Unmarshal(update, &s)
	s["id"] = fmt.Sprintf("sess_%d", c.id)
	s["object"] = "realtime.session"
	if o.model != "" {
		s["model"] = o.model
	}
	if o.beta {
		s["input_audio_format"], s["output_audio_format"] = betaName(in), betaName(out)
		return s
	}
	if _, ok := s["type"]; !ok {
		s["type"] = "realtime"
	}
	audio, _ := s["audio"].(map[string]any)
	if audio == nil {
		audio = map[string]any{}
	}
	for _, dir := range []struct {
		key string
		f   codec.Format
	}{{"input", in}, {"output", out}} {
		m, _ := audio[dir.key].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m["format"] = gaFormat(dir.f)
		audio[dir.key] = m
	}
	s["audio"] = audio
	return s
}

func gaFormat(f codec.Format) map[string]any {
	if f.Encoding == codec.Mulaw {
		return map[string]any{"type": "audio/pcmu"}
	}
	return map[string]any{"type": "audio/pcm", "rate": f.Rate}
}

func betaName(f codec.Format) string {
	if f.Encoding == codec.Mulaw {
		return "g711_ulaw"
	}
	return "pcm16"
}

// eventID numbers the next server event; wmu is held.
func (o *openAIBot) eventID() string {
	o.events++
	return "event_" + strconv.FormatInt(o.events, 10)
}

// open sends session.created, with the default formats.
func (o *openAIBot) open(c *call) error {
	return c.writeJSON(map[string]any{"type": "session.created", "event_id": o.eventID(),
		"session": o.sessionObject(c, nil, openAIDefault, openAIDefault)})
}

func (o *openAIBot) handle(c *call, typ websocket.MessageType, msg []byte) error {
	var ev openAIEvent
	if typ != websocket.MessageText || json.Unmarshal(msg, &ev) != nil || ev.Type == "" {
		c.event("", truncate(string(msg), 200), nil)
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return o.sendError(c, "invalid_request_error", "invalid_event", "expected a JSON object with a string \"type\"", ev.EventID)
	}
	switch ev.Type {
	case "input_audio_buffer.append":
		return o.append(c, &ev)
	case "session.update":
		return o.sessionUpdate(c, msg, &ev)
	case "response.cancel":
		c.event(ev.Type, "", func(r *Call) { r.Cancels++ })
		c.utterance.Add(1) // cuts the utterance being spoken
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return o.finish(c, "cancelled")
	case "conversation.item.truncate":
		t := Truncate{ItemID: ev.ItemID, ContentIndex: ev.ContentIndex, AudioEndMs: ev.AudioEndMs}
		c.event(ev.Type, ev.ItemID, func(r *Call) { r.Truncates = appendCapped(c, r, r.Truncates, t) })
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.writeJSON(map[string]any{"type": "conversation.item.truncated", "event_id": o.eventID(),
			"item_id": t.ItemID, "content_index": t.ContentIndex, "audio_end_ms": t.AudioEndMs})
	case "input_audio_buffer.commit":
		c.event(ev.Type, "", nil)
		n := o.inItem.Add(1)
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.writeJSON(map[string]any{"type": "input_audio_buffer.committed", "event_id": o.eventID(),
			"previous_item_id": nil, "item_id": fmt.Sprintf("item_in_%d", n)})
	case "input_audio_buffer.clear":
		c.event(ev.Type, "", func(r *Call) { r.Clears++ })
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.writeJSON(map[string]any{"type": "input_audio_buffer.cleared", "event_id": o.eventID()})
	}
	c.event(ev.Type, "", nil)
	return nil
}

// append takes a chunk of the caller's audio and, in echo mode, answers
// it in the output format.
func (o *openAIBot) append(c *call, ev *openAIEvent) error {
	o.inAudio = o.inAudio[:0]
	var err error
	if o.inAudio, err = base64.StdEncoding.AppendDecode(o.inAudio, []byte(ev.Audio)); err != nil {
		c.event(ev.Type, "bad base64", nil)
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return o.sendError(c, "invalid_request_error", "invalid_value", "audio is not base64: "+err.Error(), ev.EventID)
	}
	c.recMu.Lock()
	in, out := c.rec.InputFormat, c.rec.Format
	c.recMu.Unlock()
	c.received(o.inAudio, in)
	if in == out {
		return c.echo(o.inAudio)
	}
	// Another format back than in: through PCM at the output's rate.
	n := len(o.inAudio) / in.SampleBytes() * 2
	o.pcm = slices.Grow(o.pcm[:0], n)[:n]
	pcm := resample(o.pcm[:in.Decode(o.pcm, o.inAudio)], in.Rate, out.Rate)
	enc := make([]byte, len(pcm)/2*out.SampleBytes())
	return c.echo(enc[:out.Encode(enc, pcm)])
}

// sessionUpdate takes the session's formats and answers session.updated;
// the first one starts the stream.
func (o *openAIBot) sessionUpdate(c *call, msg []byte, ev *openAIEvent) error {
	c.event(ev.Type, "", func(r *Call) { r.Sessions = appendCapped(c, r, r.Sessions, truncate(string(msg), maxExcerpt)) })
	var s openAISession
	c.recMu.Lock()
	in, out := c.rec.InputFormat, c.rec.Format
	c.recMu.Unlock()
	err := json.Unmarshal(ev.Session, &s)
	if err == nil {
		in, out, err = s.formats(in, out)
	}
	if err != nil {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return o.sendError(c, "invalid_request_error", "invalid_value", "session: "+err.Error(), ev.EventID)
	}
	c.wmu.Lock()
	if s.InputAudioFormat != "" || s.OutputAudioFormat != "" {
		o.beta = true // a beta client, even without the beta header
	}
	werr := c.writeJSON(map[string]any{"type": "session.updated", "event_id": o.eventID(),
		"session": o.sessionObject(c, ev.Session, in, out)})
	c.wmu.Unlock()
	if werr != nil {
		return werr
	}
	c.started(msg, in, out)
	return nil
}

// sendError sends an error event, which the API sends for a client event
// it cannot take without closing the socket; wmu is held.
func (o *openAIBot) sendError(c *call, typ, code, message, clientEvent string) error {
	e := map[string]any{"type": typ, "code": code, "message": message}
	if clientEvent != "" {
		e["event_id"] = clientEvent
	}
	return c.writeJSON(map[string]any{"type": "error", "event_id": o.eventID(), "error": e})
}

// audio renders a delta of the response under way, opening one first if
// none is.
func (o *openAIBot) audio(c *call, chunk []byte) (websocket.MessageType, []byte) {
	if !o.active {
		_ = o.begin(c) // a failed write fails the delta's write too
	}
	typ := "response.output_audio.delta"
	if o.beta {
		typ = "response.audio.delta"
	}
	b := append(o.out[:0], `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","event_id":"event_`...)
	o.events++
	b = strconv.AppendInt(b, o.events, 10)
	b = append(b, `","response_id":"`...)
	b = append(b, o.respID...)
	b = append(b, `","item_id":"`...)
	b = append(b, o.itemID...)
	b = append(b, `","output_index":0,"content_index":0,"delta":"`...)
	b = base64.StdEncoding.AppendEncode(b, chunk)
	o.out = append(b, `"}`...)
	return websocket.MessageText, o.out
}

// begin opens a response: response.created, then the assistant item its
// audio goes into; wmu is held.
func (o *openAIBot) begin(c *call) error {
	if o.active {
		return nil
	}
	o.response++
	o.active = true
	o.respID, o.itemID = fmt.Sprintf("resp_%d", o.response), fmt.Sprintf("item_%d", o.response)
	if err := c.writeJSON(map[string]any{"type": "response.created", "event_id": o.eventID(),
		"response": o.responseObject("in_progress")}); err != nil {
		return err
	}
	return c.writeJSON(map[string]any{"type": "response.output_item.added", "event_id": o.eventID(),
		"response_id": o.respID, "output_index": 0,
		"item": map[string]any{"id": o.itemID, "object": "realtime.item", "type": "message", "role": "assistant", "status": "in_progress"}})
}

func (o *openAIBot) responseObject(status string) map[string]any {
	return map[string]any{"id": o.respID, "object": "realtime.response", "status": status, "output_modalities": []string{"audio"}}
}

// end closes the utterance's response: completed, or cancelled when it
// was cut short.
func (o *openAIBot) end(c *call, _ string, cut bool) error {
	status := "completed"
	if cut {
		status = "cancelled"
	}
	return o.finish(c, status)
}

// finish closes the response under way, if any, with status; wmu is held.
func (o *openAIBot) finish(c *call, status string) error {
	if !o.active {
		return nil
	}
	o.active = false
	done := "response.output_audio.done"
	if o.beta {
		done = "response.audio.done"
	}
	if err := c.writeJSON(map[string]any{"type": done, "event_id": o.eventID(), "response_id": o.respID,
		"item_id": o.itemID, "output_index": 0, "content_index": 0}); err != nil {
		return err
	}
	return c.writeJSON(map[string]any{"type": "response.done", "event_id": o.eventID(), "response": o.responseObject(status)})
}

// interrupt sends input_audio_buffer.speech_started, as server VAD does
// when the caller starts to speak, at the audio received so far; then, as
// the API does with its default interrupt_response, it cancels its own
// response under way, so that the client need not.
func (o *openAIBot) interrupt(c *call) error {
	c.recMu.Lock()
	ms := c.rec.AudioIn / int64(c.rec.InputFormat.BytesPerMs())
	c.recMu.Unlock()
	if err := c.writeJSON(map[string]any{"type": "input_audio_buffer.speech_started", "event_id": o.eventID(),
		"audio_start_ms": ms, "item_id": fmt.Sprintf("item_in_%d", o.inItem.Load()+1)}); err != nil {
		return err
	}
	return o.finish(c, "cancelled")
}
