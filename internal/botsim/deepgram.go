package botsim

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// deepgramBot is the server's side of Deepgram's Voice Agent API, as
// @deepgram/sdk's agent.v1 types and Deepgram's "Errors & Warnings" page
// describe it: Welcome on connect; the client's Settings, which must come
// before any audio and name the audio both ways and the listen, think and
// speak providers, answered by SettingsApplied; binary audio both ways in
// the Settings' encodings; UserStartedSpeaking as its barge-in,
// AgentStartedSpeaking before its answer and AgentAudioDone after it. A
// client message it cannot take is answered with Error
// UNPARSABLE_CLIENT_MESSAGE, then the socket closes, as the API's Error
// ends a session. KeepAlive is taken and recorded.
type deepgramBot struct {
	settings bool // the reader's: Settings applied
	speaking bool // under wmu: AgentStartedSpeaking sent, AgentAudioDone not yet
}

// deepgramSettings is AgentV1Settings, as far as the simulator reads it;
// unknown members are refused.
type deepgramSettings struct {
	Type         string          `json:"type"`
	Tags         []string        `json:"tags"`
	Experimental bool            `json:"experimental"`
	Flags        json.RawMessage `json:"flags"`
	MipOptOut    bool            `json:"mip_opt_out"`
	Audio        struct {
		Input  *deepgramInput `json:"input"`
		Output *struct {
			Encoding   string `json:"encoding"`
			SampleRate int    `json:"sample_rate"`
			Bitrate    int    `json:"bitrate"`
			Container  string `json:"container"`
		} `json:"output"`
	} `json:"audio"`
	Agent *struct {
		Language string          `json:"language"`
		Context  json.RawMessage `json:"context"`
		Listen   json.RawMessage `json:"listen"`
		Think    *struct {
			Provider  *struct{ Type, Model string } `json:"provider"`
			Endpoint  json.RawMessage               `json:"endpoint"`
			Functions json.RawMessage               `json:"functions"`
			Prompt    string                        `json:"prompt"`
		} `json:"think"`
		Speak    json.RawMessage `json:"speak"`
		Greeting string          `json:"greeting"`
	} `json:"agent"`
}

// deepgramInput is Settings' audio.input.
type deepgramInput struct {
	Encoding   string `json:"encoding"`
	SampleRate int    `json:"sample_rate"`
}

// deepgramFormat maps an encoding and rate onto the host's codecs.
func deepgramFormat(encoding string, rate int) (codec.Format, error) {
	switch encoding {
	case "mulaw":
		if rate == 8000 {
			return codec.Telephony, nil
		}
	case "linear16":
		if f := (codec.Format{Encoding: codec.L16, Rate: rate}); f.Check() == nil {
			return f, nil
		}
	}
	return codec.Format{}, fmt.Errorf("audio %s at %d Hz is not one the simulator carries (mulaw at 8000, linear16 at 8000, 16000 or 24000)", encoding, rate)
}

// open sends Welcome.
func (d *deepgramBot) open(c *call) error {
	return c.writeJSON(map[string]any{"type": "Welcome", "request_id": fmt.Sprintf("00000000-0000-4000-8000-%012d", c.id)})
}

// refuse sends Error and ends the call, as the API does.
func (d *deepgramBot) refuse(c *call, description string) error {
	c.wmu.Lock()
	err := c.writeJSON(map[string]any{"type": "Error", "code": "UNPARSABLE_CLIENT_MESSAGE", "description": description})
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	return &transport.ProtocolError{Protocol: ProtocolDeepgram, Reason: description}
}

func (d *deepgramBot) handle(c *call, typ websocket.MessageType, msg []byte) error {
	if typ == websocket.MessageBinary {
		switch {
		case !d.settings:
			return d.refuse(c, "audio before Settings")
		case !c.acked.Load():
			return d.refuse(c, "audio before SettingsApplied")
		}
		f := c.outFormat()
		if len(msg)%f.SampleBytes() != 0 {
			return d.refuse(c, fmt.Sprintf("audio of %d bytes is not whole %s samples", len(msg), f.Encoding))
		}
		c.received(msg, f)
		return c.echo(msg)
	}
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(msg, &head) != nil || head.Type == "" {
		c.event("", truncate(string(msg), 200), nil)
		return d.refuse(c, "a text message that is not a JSON object with a string type")
	}
	switch head.Type {
	case "Settings":
		return d.applySettings(c, msg)
	case "KeepAlive":
		c.event(head.Type, "", nil)
		return nil
	}
	c.event(head.Type, "", nil)
	if !d.settings {
		return d.refuse(c, head.Type+" before Settings")
	}
	return nil
}

// applySettings checks Settings and answers SettingsApplied.
func (d *deepgramBot) applySettings(c *call, msg []byte) error {
	c.event("Settings", "", func(r *Call) { r.Sessions = appendCapped(c, r, r.Sessions, truncate(string(msg), maxExcerpt)) })
	var s deepgramSettings
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return d.refuse(c, "Settings: "+err.Error())
	}
	switch {
	case d.settings:
		return d.refuse(c, "Settings may be sent once")
	case s.Audio.Input == nil || s.Audio.Output == nil:
		return d.refuse(c, "Settings: the simulator needs audio.input and audio.output")
	case s.Agent == nil || s.Agent.Think == nil || s.Agent.Think.Provider == nil || s.Agent.Think.Provider.Type == "" || s.Agent.Think.Provider.Model == "":
		return d.refuse(c, "Settings: agent.think.provider needs a type and a model")
	case s.Agent.Think.Provider.Type == "groq" && s.Agent.Think.Provider.Model != "openai/gpt-oss-20b":
		// The SDK's Groq type has this one model.
		return d.refuse(c, "Settings: agent.think.provider: groq runs openai/gpt-oss-20b only, not "+s.Agent.Think.Provider.Model)
	case s.Audio.Output.Container != "" && s.Audio.Output.Container != "none":
		return d.refuse(c, "Settings: the simulator sends raw audio, container none, not "+s.Audio.Output.Container)
	}
	inF, err := deepgramFormat(s.Audio.Input.Encoding, s.Audio.Input.SampleRate)
	if err != nil {
		return d.refuse(c, "Settings: audio.input: "+err.Error())
	}
	outF, err := deepgramFormat(s.Audio.Output.Encoding, s.Audio.Output.SampleRate)
	if err != nil {
		return d.refuse(c, "Settings: audio.output: "+err.Error())
	}
	if inF != outF {
		return d.refuse(c, fmt.Sprintf("Settings: the simulator echoes, so it takes one format both ways, not %v in and %v out", inF, outF))
	}
	d.settings = true
	msg = bytes.Clone(msg) // for started, perhaps after the reader has moved on
	return c.acknowledge(func() error {
		if err := c.writeJSON(map[string]any{"type": "SettingsApplied"}); err != nil {
			return err
		}
		c.started(msg, inF, outF)
		return nil
	})
}

// audio renders a chunk of the agent's audio, a binary message, after
// AgentStartedSpeaking if the answer has not begun.
func (d *deepgramBot) audio(c *call, chunk []byte) (websocket.MessageType, []byte) {
	if !d.speaking {
		_ = d.begin(c) // a failed write fails the chunk's too
	}
	return websocket.MessageBinary, chunk
}

// begin sends AgentStartedSpeaking, with the latencies the type has.
func (d *deepgramBot) begin(c *call) error {
	if d.speaking {
		return nil
	}
	d.speaking = true
	return c.writeJSON(map[string]any{"type": "AgentStartedSpeaking", "total_latency": 0.1, "tts_latency": 0.05, "ttt_latency": 0.05})
}

// end sends AgentAudioDone.
func (d *deepgramBot) end(c *call, _ string, _ bool) error {
	if !d.speaking {
		return nil
	}
	d.speaking = false
	return c.writeJSON(map[string]any{"type": "AgentAudioDone"})
}

// interrupt sends UserStartedSpeaking, as the agent does when it hears
// the caller; its answer under way ends there.
func (d *deepgramBot) interrupt(c *call) error {
	d.speaking = false
	return c.writeJSON(map[string]any{"type": "UserStartedSpeaking"})
}

// narrate sends ConversationText of both sides, a FunctionCallRequest and
// a type the API does not have.
func (d *deepgramBot) narrate(c *call) error {
	for _, m := range []map[string]any{
		{"type": "ConversationText", "role": "user", "content": "Where is my order?"},
		{"type": "ConversationText", "role": "assistant", "content": "Let me look it up."},
		{"type": "FunctionCallRequest", "functions": []map[string]any{{"id": "call_1", "name": "lookup_order", "arguments": `{"order":"A-1"}`, "client_side": true}}},
		{"type": "SomethingNew"},
	} {
		if err := c.writeJSON(m); err != nil {
			return err
		}
	}
	return nil
}
