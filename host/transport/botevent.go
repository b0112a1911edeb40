package transport

import "encoding/json"

// BotEvent is something a bot said besides its audio that the host passes
// on to the caller as an event of the bot leg: the same few names, with
// data of the same shape, whichever provider said it, so that whatever
// consumes them need not know the provider.
type BotEvent struct {
	// Name is one of BotEventNames.
	Name string
	// Data is the event's JSON object:
	//
	//	caller_transcript, bot_transcript: {"text":"...","final":true}
	//	tool_call: {"calls":[{"id":"...","name":"...","arguments":{...}}]}
	//
	// A transcript's text is cut at maxBotEventText bytes (ending in
	// "..."); final is false for a piece of one still being spoken
	// (Gemini's transcriptions come in pieces). A tool call's arguments
	// are the provider's JSON, an object where the provider sends a string
	// of JSON (Deepgram).
	Data []byte
}

// The names of BotEvent.
const (
	// BotEventCallerTranscript is what the provider heard the caller say.
	BotEventCallerTranscript = "caller_transcript"
	// BotEventBotTranscript is what the bot said, or is saying.
	BotEventBotTranscript = "bot_transcript"
	// BotEventToolCall is the bot asking for functions to be called. The
	// dialects send no answer: the call is reported, not made.
	BotEventToolCall = "tool_call"
)

// BotEventNames lists the names of BotEvent, a bounded set for metrics.
var BotEventNames = []string{BotEventCallerTranscript, BotEventBotTranscript, BotEventToolCall}

// maxBotEventText bounds a transcript's text: a long turn's, cut, still
// fits the host's bound on an event (a few KiB).
const maxBotEventText = 2000

// maxBotEvents bounds the events one message carries (a Gemini message
// may hold both transcriptions and a tool call).
const maxBotEvents = 3

// botEvents is a dialect's buffer of the events of the message last
// decoded, the reading goroutine's.
type botEvents struct {
	buf [maxBotEvents]BotEvent
	n   int
}

// reset forgets the last message's events.
func (e *botEvents) reset() { e.n = 0 }

// add renders v as the data of event name; an event past maxBotEvents, or
// whose data does not render, is left out.
func (e *botEvents) add(name string, v any) {
	if e.n == maxBotEvents {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		return // a tool call's arguments that are not JSON after all
	}
	e.buf[e.n] = BotEvent{Name: name, Data: data}
	e.n++
}

// transcript adds a transcript event of the JSON string token q.
func (e *botEvents) transcript(name string, q []byte, final bool) {
	var text string
	if json.Unmarshal(q, &text) != nil {
		return
	}
	e.add(name, struct {
		Text  string `json:"text"`
		Final bool   `json:"final"`
	}{cutText(text, maxBotEventText), final})
}

// toolCall is one function a bot asks to be called.
type toolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// toolCalls adds a tool_call event of calls.
func (e *botEvents) toolCalls(calls []toolCall) {
	for i := range calls {
		if len(calls[i].Arguments) == 0 {
			calls[i].Arguments = json.RawMessage("{}")
		}
	}
	e.add(BotEventToolCall, struct {
		Calls []toolCall `json:"calls"`
	}{calls})
}

// set hands the events to in.
func (e *botEvents) set(in *Inbound) {
	if e.n > 0 {
		in.Events = e.buf[:e.n]
	}
}

// value consumes the next value and returns its JSON, or nil if it is
// malformed.
func (s *scanner) value() []byte {
	s.peek()
	start := s.pos
	s.skip()
	if s.err != "" {
		return nil
	}
	return s.buf[start:s.pos]
}
