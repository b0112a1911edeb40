package botsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// geminiOut is what the Live API answers in, always.
var geminiOut = codec.Format{Encoding: codec.L16, Rate: 24000}

// geminiIn is the input rate the Live API takes natively, until a blob's
// MIME type names another.
var geminiIn = codec.Format{Encoding: codec.L16, Rate: 16000}

// geminiBot is the server's side of the Gemini Live API
// (BidiGenerateContent), as @google/genai's LiveClientMessage and
// LiveServerMessage describe it: nothing until the client's setup, which
// must come first and name a model, answered by setupComplete; the
// caller's audio as realtimeInput.audio blobs of audio/pcm at the rate
// their MIME type names; the model's audio as serverContent.modelTurn
// parts of audio/pcm;rate=24000, its turn ended by generationComplete and
// turnComplete, its barge-in as serverContent.interrupted. Like the
// service, it sends its messages as binary frames and reports a client
// message it cannot take by closing the socket with a policy-violation status
// and the reason, which the host sees as a lost connection. A member the schema
// does not have is such a message: the service's JSON parser refuses
// unknown names.
type geminiBot struct {
	setUp bool // the reader's

	inAudio, pcm []byte // the reader's: a blob's audio, and its conversion
	out          []byte // under wmu: the last chunk rendered
}

// geminiClientMessage is LiveClientMessage, as far as the simulator reads
// it; unknown members are refused.
type geminiClientMessage struct {
	Setup         *geminiSetup         `json:"setup"`
	RealtimeInput *geminiRealtimeInput `json:"realtimeInput"`
	ClientContent json.RawMessage      `json:"clientContent"`
	ToolResponse  json.RawMessage      `json:"toolResponse"`
}

type geminiSetup struct {
	Model            string `json:"model"`
	GenerationConfig *struct {
		ResponseModalities []string        `json:"responseModalities"`
		SpeechConfig       json.RawMessage `json:"speechConfig"`
		Temperature        *float64        `json:"temperature"`
	} `json:"generationConfig"`
	SystemInstruction        json.RawMessage `json:"systemInstruction"`
	Tools                    json.RawMessage `json:"tools"`
	RealtimeInputConfig      json.RawMessage `json:"realtimeInputConfig"`
	SessionResumption        json.RawMessage `json:"sessionResumption"`
	ContextWindowCompression json.RawMessage `json:"contextWindowCompression"`
	InputAudioTranscription  json.RawMessage `json:"inputAudioTranscription"`
	OutputAudioTranscription json.RawMessage `json:"outputAudioTranscription"`
}

type geminiRealtimeInput struct {
	Audio          *geminiBlob     `json:"audio"`
	MediaChunks    []geminiBlob    `json:"mediaChunks"`
	AudioStreamEnd bool            `json:"audioStreamEnd"`
	Text           string          `json:"text"`
	ActivityStart  json.RawMessage `json:"activityStart"`
	ActivityEnd    json.RawMessage `json:"activityEnd"`
}

type geminiBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// geminiInvalid is the service's close for a message it cannot take.
func geminiInvalid(format string, args ...any) error {
	return &transport.ProtocolError{Protocol: ProtocolGemini, Reason: fmt.Sprintf(format, args...)}
}

// open sends nothing: the client speaks first, with setup.
func (g *geminiBot) open(*call) error { return nil }

func (g *geminiBot) handle(c *call, _ websocket.MessageType, msg []byte) error {
	var m geminiClientMessage
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		c.event("", truncate(string(msg), 200), nil)
		return geminiInvalid("Invalid JSON payload received. %v", err)
	}
	switch {
	case m.Setup != nil:
		return g.setup(c, msg, m.Setup)
	case !g.setUp:
		c.event("", truncate(string(msg), 200), nil)
		return geminiInvalid("setup must be the first message")
	case !c.acked.Load():
		c.event("", truncate(string(msg), 200), nil)
		return geminiInvalid("a message before setupComplete: clients should wait for it")
	case m.RealtimeInput != nil:
		return g.realtimeInput(c, m.RealtimeInput)
	case m.ClientContent != nil:
		// "A message here will interrupt any current model generation."
		c.event("clientContent", truncate(string(m.ClientContent), 200), nil)
		c.utterance.Add(1)
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.write(websocket.MessageBinary, []byte(`{"serverContent":{"interrupted":true}}`))
	case m.ToolResponse != nil:
		c.event("toolResponse", "", nil)
	default:
		c.event("", truncate(string(msg), 200), nil)
		return geminiInvalid("message without setup, realtimeInput, clientContent or toolResponse")
	}
	return nil
}

// setup checks the session's model and modality and answers
// setupComplete; a second setup is refused, as the service does.
func (g *geminiBot) setup(c *call, msg []byte, s *geminiSetup) error {
	c.event("setup", s.Model, func(r *Call) { r.Sessions = appendCapped(c, r, r.Sessions, truncate(string(msg), maxExcerpt)) })
	switch {
	case g.setUp:
		return geminiInvalid("setup may only be sent once")
	case !strings.HasPrefix(s.Model, "models/") || len(s.Model) == len("models/"):
		return geminiInvalid("setup.model %q is not a model name (models/...)", s.Model)
	case s.GenerationConfig != nil && len(s.GenerationConfig.ResponseModalities) > 1:
		return geminiInvalid("setup.generationConfig.responseModalities takes one modality, got %v", s.GenerationConfig.ResponseModalities)
	case s.GenerationConfig != nil && len(s.GenerationConfig.ResponseModalities) == 1 && s.GenerationConfig.ResponseModalities[0] != "AUDIO":
		return geminiInvalid("the simulator answers with audio only, not %v", s.GenerationConfig.ResponseModalities)
	}
	g.setUp = true
	msg = bytes.Clone(msg) // for started, perhaps after the reader has moved on
	return c.acknowledge(func() error {
		if err := c.write(websocket.MessageBinary, []byte(`{"setupComplete":{}}`)); err != nil {
			return err
		}
		c.started(msg, geminiIn, geminiOut)
		return nil
	})
}

// realtimeInput takes the caller's audio at the rate its MIME type names
// and, in echo mode, answers it at 24 kHz.
func (g *geminiBot) realtimeInput(c *call, in *geminiRealtimeInput) error {
	blobs := in.MediaChunks
	if in.Audio != nil {
		blobs = append(blobs, *in.Audio)
	}
	if len(blobs) == 0 {
		c.event("realtimeInput", "", nil)
		return nil
	}
	for _, b := range blobs {
		f, err := geminiBlobFormat(b.MimeType)
		if err != nil {
			return err
		}
		if g.inAudio, err = base64.StdEncoding.AppendDecode(g.inAudio[:0], []byte(b.Data)); err != nil {
			return geminiInvalid("realtimeInput audio data is not base64: %v", err)
		}
		if len(g.inAudio)%2 != 0 {
			return geminiInvalid("realtimeInput audio of %d bytes is not whole 16-bit samples", len(g.inAudio))
		}
		c.record(func(r *Call) { r.InputFormat = f })
		c.received(g.inAudio, f)
		audio := g.inAudio
		if f.Rate != geminiOut.Rate {
			g.pcm = append(g.pcm[:0], resample(g.inAudio, f.Rate, geminiOut.Rate)...)
			audio = g.pcm
		}
		if err := c.echo(audio); err != nil {
			return err
		}
	}
	return nil
}

// geminiBlobFormat reads an audio blob's MIME type: audio/pcm, with its
// rate (16000 when it names none).
func geminiBlobFormat(mime string) (codec.Format, error) {
	rest, ok := strings.CutPrefix(mime, "audio/pcm")
	if !ok {
		return codec.Format{}, geminiInvalid("realtimeInput audio mimeType %q is not audio/pcm", mime)
	}
	if rest == "" {
		return geminiIn, nil
	}
	rate, err := strconv.Atoi(strings.TrimPrefix(rest, ";rate="))
	if !strings.HasPrefix(rest, ";rate=") || err != nil || rate < 8000 || rate > 48000 {
		return codec.Format{}, geminiInvalid("realtimeInput audio mimeType %q has no rate from 8000 to 48000", mime)
	}
	return codec.Format{Encoding: codec.L16, Rate: rate}, nil
}

// The parts of a serverContent around its audio.
const (
	geminiChunkHead = `{"serverContent":{"modelTurn":{"role":"model","parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000","data":"`
	geminiChunkTail = `"}}]}}}`
)

// audio renders a serverContent with one part of the model's audio.
func (g *geminiBot) audio(_ *call, chunk []byte) (websocket.MessageType, []byte) {
	b := append(g.out[:0], geminiChunkHead...)
	b = base64.StdEncoding.AppendEncode(b, chunk)
	g.out = append(b, geminiChunkTail...)
	return websocket.MessageBinary, g.out
}

// begin sends nothing: a turn begins with its audio.
func (g *geminiBot) begin(*call) error { return nil }

// end closes the model's turn: generationComplete, then turnComplete. A
// turn cut short had its interrupted already, and ends with turnComplete
// alone, as the service's do.
func (g *geminiBot) end(c *call, _ string, cut bool) error {
	if !cut {
		if err := c.write(websocket.MessageBinary, []byte(`{"serverContent":{"generationComplete":true}}`)); err != nil {
			return err
		}
	}
	return c.write(websocket.MessageBinary, []byte(`{"serverContent":{"turnComplete":true}}`))
}

// interrupt sends serverContent.interrupted, as the service does when its
// activity detection hears the caller over the model's turn.
func (g *geminiBot) interrupt(c *call) error {
	return c.write(websocket.MessageBinary, []byte(`{"serverContent":{"interrupted":true}}`))
}

// narrate sends the transcriptions of both sides, a tool call and a
// member no LiveServerMessage has.
func (g *geminiBot) narrate(c *call) error {
	for _, m := range []string{
		`{"serverContent":{"inputTranscription":{"text":"Where is my order?"}}}`,
		`{"serverContent":{"outputTranscription":{"text":"Let me look it up.","finished":true}}}`,
		`{"toolCall":{"functionCalls":[{"id":"call_1","name":"lookup_order","args":{"order":"A-1"}}]}}`,
		`{"somethingNew":{"x":1}}`,
	} {
		if err := c.write(websocket.MessageBinary, []byte(m)); err != nil {
			return err
		}
	}
	return nil
}
