package transport

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/voxhost/voxhost/host/codec"
)

const openaiName = "openai-realtime"

// The openai-realtime dialect: OpenAI's Realtime API over WebSocket, as
// openai-python's types/realtime describe it, GA or beta. The route's
// upstream dials it with the model in the URL and the key in its headers,
// which are not the dialect's business:
//
//	url: wss://api.openai.com/v1/realtime?model=gpt-realtime
//	headers: Authorization: Bearer <key>
//	         OpenAI-Beta: realtime=v1        (api: beta only)
//
// Options: api ("ga", the default, or "beta"), voice, instructions and
// turn_detection ("server_vad", the default, "semantic_vad" or "none").
// Audio is L16 at 24 kHz (GA audio/pcm, beta pcm16) or μ-law at 8 kHz (GA
// audio/pcmu, beta g711_ulaw).
//
// To the model: session.update first, then the caller's audio as
// input_audio_buffer.append. On a barge-in the host detected,
// response.cancel if a response is under way, then, as pipecat does,
// conversation.item.truncate of the item being spoken at what the caller
// heard of it, so the model's transcript of its own turn ends where the
// caller stopped hearing it.
//
// From the model: response.output_audio.delta (beta response.audio.delta)
// is audio; input_audio_buffer.speech_started is a barge-in the model
// detected (KindClear); error is KindError with the error's message;
// everything else (session.created, response.done, transcripts, ...) is
// ignored, though response.created and response.done say whether a
// response is under way. Deltas of an item once truncated are dropped.
//
// Not supported: DTMF (the API has no client event for keys), marks (it
// has none), plugin events, and a stop message (the host ends the session
// by closing the socket). With turn_detection "none" the model answers
// only to response.create, which this dialect never sends, so that setting
// suits only a model that is told when to answer some other way.
func init() { RegisterDialect(openaiDialect{}) }

type openaiDialect struct{}

func (openaiDialect) Name() string { return openaiName }

// openaiPCM is the one L16 rate the API takes.
var openaiPCM = codec.Format{Encoding: codec.L16, Rate: 24000}

func (openaiDialect) CheckFormat(f codec.Format) error {
	if f != openaiPCM && f != codec.Telephony {
		return errFormat(openaiName, f, "L16 at 24000 Hz (audio/pcm) or μ-law at 8000 Hz (audio/pcmu)")
	}
	return nil
}

func (openaiDialect) CheckOptions(opts map[string]string) error {
	_, err := parseOpenAIOptions(opts)
	return err
}

// openaiOptions are a route's options, read.
type openaiOptions struct {
	beta          bool
	voice         string // "" leaves the model's default
	instructions  string // "" leaves the model's default
	turnDetection string // server_vad, semantic_vad or none
}

var openaiOptionTable = optionTable[openaiOptions]{dialect: openaiName, options: []option[openaiOptions]{
	{name: "api", values: []string{"ga", "beta"}, set: func(o *openaiOptions, v string) { o.beta = v == "beta" }},
	{name: "voice", set: func(o *openaiOptions, v string) { o.voice = v }},
	{name: "instructions", set: func(o *openaiOptions, v string) { o.instructions = v }},
	{name: "turn_detection", values: []string{"server_vad", "semantic_vad", "none"}, set: func(o *openaiOptions, v string) { o.turnDetection = v }},
	{name: "model", refuse: "takes the model in the upstream url (wss://api.openai.com/v1/realtime?model=gpt-realtime), not as an option"},
}}

func parseOpenAIOptions(opts map[string]string) (openaiOptions, error) {
	o := openaiOptions{turnDetection: "server_vad"}
	err := openaiOptionTable.read(opts, &o)
	return o, err
}

// NewBotSession takes options CheckOptions accepted; any others fall back
// to the defaults.
func (openaiDialect) NewBotSession(cfg BotConfig) BotSession {
	checkMaxAudio(cfg.MaxAudio)
	opts, _ := parseOpenAIOptions(cfg.Options)
	return &openaiBot{
		maxAudio: cfg.MaxAudio,
		format:   cfg.Format,
		opts:     opts,
		audio:    payloadBuffer(cfg.MaxAudio),
		id:       make([]byte, 0, MaxIDBytes),
		// Room for an append of MaxAudio bytes, so rendering audio never
		// grows the buffer.
		out: make([]byte, 0, len(openaiAppendHead)+base64.StdEncoding.EncodedLen(cfg.MaxAudio)+len(openaiAppendTail)),
		state: openaiState{
			item:    make([]byte, 0, MaxIDBytes),
			dropped: make([]byte, 0, MaxIDBytes),
		},
		itemID: make([]byte, 0, MaxIDBytes),
	}
}

// The parts of input_audio_buffer.append around its audio.
const (
	openaiAppendHead = `{"type":"input_audio_buffer.append","audio":"`
	openaiAppendTail = `"}`
)

// maxBotErrorText bounds the message of an error event kept in
// Inbound.Text: enough for OpenAI's messages, which are a sentence or two,
// and short enough for a log line.
const maxBotErrorText = 300

type openaiBot struct {
	speechBot
	maxAudio int
	format   codec.Format
	opts     openaiOptions

	// The reading goroutine's.
	audio   []byte // the decoded audio of the last delta
	scratch []byte // a delta with its JSON escapes resolved
	id      []byte // the item id of the last delta

	// The writing goroutine's.
	out    []byte // the last rendered message
	itemID []byte // the item Interrupted truncates

	// Decode learns what Interrupted needs from the model's messages, and
	// the two run on different goroutines.
	mu    sync.Mutex
	state openaiState
}

// openaiState is what Decode tracks of the model's speech for Interrupted.
type openaiState struct {
	decoded    int64  // bytes of audio Decode returned in the call
	responding bool   // a response is under way: created, not yet done
	item       []byte // the item whose audio came last
	itemStart  int64  // decoded when its first delta arrived
	itemBytes  int64  // bytes of its audio
	dropped    []byte // the item last truncated, whose deltas are ignored
}

// Open sends session.update: the formats, turn detection, voice and
// instructions.
func (o *openaiBot) Open(send func(MessageType, []byte) error) error {
	b := append(o.out[:0], `{"type":"session.update","session":{`...)
	turn := `null`
	if o.opts.turnDetection != "none" {
		turn = `{"type":"` + o.opts.turnDetection + `"}`
	}
	if o.opts.beta {
		format := `"pcm16"`
		if o.format.Encoding == codec.Mulaw {
			format = `"g711_ulaw"`
		}
		b = append(b, `"input_audio_format":`+format+`,"output_audio_format":`+format+`,"turn_detection":`+turn...)
		if o.opts.voice != "" {
			b = append(b, `,"voice":`...)
			b = appendQuoted(b, o.opts.voice)
		}
	} else {
		format := `{"type":"audio/pcm","rate":24000}`
		if o.format.Encoding == codec.Mulaw {
			format = `{"type":"audio/pcmu"}`
		}
		b = append(b, `"type":"realtime","audio":{"input":{"format":`+format+`,"turn_detection":`+turn+`},"output":{"format":`+format...)
		if o.opts.voice != "" {
			b = append(b, `,"voice":`...)
			b = appendQuoted(b, o.opts.voice)
		}
		b = append(b, "}}"...)
	}
	if o.opts.instructions != "" {
		b = append(b, `,"instructions":`...)
		b = appendQuoted(b, o.opts.instructions)
	}
	o.out = append(b, "}}"...)
	return send(Text, o.out)
}

// Audio renders input_audio_buffer.append.
func (o *openaiBot) Audio(audio []byte) (MessageType, []byte) {
	b := append(o.out[:0], openaiAppendHead...)
	b = base64.StdEncoding.AppendEncode(b, audio)
	o.out = append(b, openaiAppendTail...)
	return Text, o.out
}

// Interrupted cancels the response under way, unless the model detected
// the barge-in itself (its server VAD cancels its own response), then
// truncates the item being spoken where the caller stopped hearing it:
// audio_end_ms is heardMs less the position of the item's first delta,
// within the audio of it decoded. An item the caller heard to its end,
// its response over, needs no truncation.
func (o *openaiBot) Interrupted(heardMs int64, byBot bool, send func(MessageType, []byte) error) error {
	bpm := int64(o.format.BytesPerMs())
	o.mu.Lock()
	st := &o.state
	cancel := !byBot && st.responding
	if cancel {
		// The model answers with response.done; a second barge-in before
		// it must not cancel again.
		st.responding = false
	}
	itemMs := st.itemBytes / bpm
	endMs := min(max(0, heardMs-st.itemStart/bpm), itemMs)
	truncate := st.itemBytes > 0 && !bytes.Equal(st.item, st.dropped) && (endMs < itemMs || st.responding || cancel)
	if truncate {
		st.dropped = append(st.dropped[:0], st.item...)
		o.itemID = append(o.itemID[:0], st.item...)
	}
	o.mu.Unlock()

	if cancel {
		o.out = append(o.out[:0], `{"type":"response.cancel"}`...)
		if err := send(Text, o.out); err != nil {
			return err
		}
	}
	if !truncate {
		return nil
	}
	// An item id holds none of the characters JSON escapes (appendID).
	b := append(o.out[:0], `{"type":"conversation.item.truncate","item_id":"`...)
	b = append(b, o.itemID...)
	b = append(b, `","content_index":0,"audio_end_ms":`...)
	b = strconv.AppendInt(b, endMs, 10)
	o.out = append(b, '}')
	return send(Text, o.out)
}

// openaiEvent is what the scanner picks out of a server event: string
// tokens viewing the message, nil when absent or not a string.
type openaiEvent struct {
	hasType bool
	typ     []byte
	delta   []byte
	itemID  []byte
	message []byte // error.message
}

func (e *openaiEvent) scan(msg []byte) (reason string) {
	s := scanner{buf: msg}
	return s.finish(s.members(func(key []byte) {
		switch {
		case textIs(key, "type"):
			e.hasType = true
			e.typ, _ = s.text()
		case textIs(key, "delta"):
			e.delta, _ = s.text()
		case textIs(key, "item_id"):
			e.itemID, _ = s.text()
		case textIs(key, "error"):
			e.message = nil
			if !s.members(func(key []byte) {
				if textIs(key, "message") {
					e.message, _ = s.text()
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

// Decode reads a server event. Audio deltas decode without allocating.
func (o *openaiBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	if typ != Text {
		return &ProtocolError{Protocol: openaiName, Reason: "binary message: the Realtime API sends JSON text messages only", Unsupported: true}
	}
	var e openaiEvent
	if err := dispatchError(openaiName, e.scan(msg), "type", `message without a "type" member`, e.hasType, e.typ); err != nil {
		return err
	}
	switch {
	case textIs(e.typ, "response.output_audio.delta") || textIs(e.typ, "response.audio.delta"):
		return o.delta(&e, in)
	case textIs(e.typ, "input_audio_buffer.speech_started"):
		in.Kind = KindClear
	case textIs(e.typ, "error"):
		text := "error event without a string error.message"
		if e.message != nil {
			_ = json.Unmarshal(e.message, &text) // a well-formed JSON string
		}
		in.Kind, in.Text = KindError, cutText(text, maxBotErrorText)
	case textIs(e.typ, "response.created"):
		o.setResponding(true)
	case textIs(e.typ, "response.done"):
		o.setResponding(false)
	}
	return nil
}

func (o *openaiBot) setResponding(on bool) {
	o.mu.Lock()
	o.state.responding = on
	o.mu.Unlock()
}

// delta decodes an audio delta into the session's buffer and notes where
// its item began.
func (o *openaiBot) delta(e *openaiEvent, in *Inbound) error {
	if e.delta == nil {
		return protocolErrorf(openaiName, "audio delta without a string delta")
	}
	if e.itemID == nil {
		return protocolErrorf(openaiName, "audio delta without a string item_id")
	}
	var err error
	if o.id, err = appendID(o.id[:0], "item_id", e.itemID); err != nil {
		return limitError(openaiName, err)
	}
	n, err := decodeBase64Token(openaiName, "delta", e.delta, o.audio, &o.scratch, o.maxAudio)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil // nothing to play, and nothing wrong
	}
	if err := checkBotAudio(openaiName, n, o.maxAudio, o.format); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	st := &o.state
	if bytes.Equal(o.id, st.dropped) {
		return nil // the rest of an item the caller cut off
	}
	if !bytes.Equal(o.id, st.item) {
		st.item = append(st.item[:0], o.id...)
		st.itemStart, st.itemBytes = st.decoded, 0
	}
	st.itemBytes += int64(n)
	st.decoded += int64(n)
	st.responding = true
	in.Kind, in.Audio = KindAudio, o.audio[:n]
	return nil
}
