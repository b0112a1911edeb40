package transport

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/voxhost/voxhost/host/codec"
)

// The asterisk dialect: voxhost speaks chan_websocket to the bot as
// Asterisk speaks to an application it dials (websocket_client.conf), so
// an application written for Asterisk's media WebSocket (ARI
// externalMedia apps, asterisk-websocket-examples) runs behind voxhost.
//
// To the bot: MEDIA_START (connection_id the stream id, channel_id the
// call id, channel "WebSocket/voxhost-<call id>", the leg's format with
// its optimal_frame_size and a ptime of 20 and, in the JSON form, the
// call's parameters as channel_variables), then the caller's audio as
// binary messages, DTMF_END for keys and MEDIA_MARK_PROCESSED for each
// MARK_MEDIA once the audio before it has played to the caller. As
// Asterisk does, the host ends the stream by closing the socket, with no
// message before.
//
// From the bot: binary audio of any length (Asterisk re-frames it), and
// the commands FLUSH_MEDIA (clear), MARK_MEDIA (mark) and HANGUP (the bot
// ends the call). ANSWER, the media buffering, pause, status and direction
// commands have no use behind the host and are ignored, as are commands
// over the 128 bytes Asterisk reads; a binary message over 65,500 bytes,
// on which Asterisk hangs up, fails the bot leg.
//
// The one option, control_message_format, is chan_websocket.conf's:
// "json" (the default here) or "plain-text".
func init() { RegisterDialect(asteriskDialect{}) }

type asteriskDialect struct{}

func (asteriskDialect) Name() string { return asteriskName }

func (asteriskDialect) CheckFormat(f codec.Format) error {
	if asteriskFormatName(f) == "" {
		return errFormat(asteriskName, f, "μ-law or A-law at 8000 Hz or L16 at 8000, 16000 or 24000 Hz (ulaw, alaw, slin, slin16, slin24)")
	}
	return nil
}

func (asteriskDialect) CheckOptions(opts map[string]string) error {
	_, err := asteriskJSONOption(opts)
	return err
}

// asteriskJSONOption reads the dialect's options: whether control
// messages are JSON.
func asteriskJSONOption(opts map[string]string) (bool, error) {
	isJSON := true
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if k != "control_message_format" {
			return true, fmt.Errorf("the %s dialect has no option %s (it takes control_message_format)", asteriskName, excerpt(k))
		}
		switch v := opts[k]; v {
		case "", "json":
		case "plain-text":
			isJSON = false
		default:
			return true, fmt.Errorf("the %s dialect's control_message_format is json or plain-text, not %s", asteriskName, excerpt(v))
		}
	}
	return isJSON, nil
}

// NewBotSession takes options CheckOptions accepted; others fall back to
// JSON.
func (asteriskDialect) NewBotSession(cfg BotConfig) BotSession {
	isJSON, _ := asteriskJSONOption(cfg.Options)
	return &asteriskBot{binaryBot: newBinaryBot(cfg), json: isJSON}
}

type asteriskBot struct {
	binaryBot
	json bool // control messages in the JSON form, not plain text
}

// Open sends MEDIA_START, as Asterisk does once the socket is up.
func (a *asteriskBot) Open(send func(MessageType, []byte) error) error {
	c, f := a.cfg.Call, a.cfg.Format
	channel := "WebSocket/voxhost-" + c.CallID
	frame := asteriskFrameMs * f.BytesPerMs()
	b := a.out[:0]
	if a.json {
		b = append(b, `{"event":"MEDIA_START","connection_id":`...)
		b = appendQuoted(b, c.streamID())
		b = append(b, `,"channel":`...)
		b = appendQuoted(b, channel)
		b = append(b, `,"channel_id":`...)
		b = appendQuoted(b, c.CallID)
		b = append(b, `,"format":"`...)
		b = append(b, asteriskFormatName(f)...)
		b = append(b, `","optimal_frame_size":`...)
		b = strconv.AppendInt(b, int64(frame), 10)
		b = append(b, `,"ptime":20,"channel_variables":`...)
		b = appendParams(b, c.Params)
		b = append(b, '}')
	} else {
		// The plain-text form has no room for variables; the ids are
		// CheckID's, without white space.
		b = fmt.Appendf(b, "MEDIA_START connection_id:%s channel:%s channel_id:%s format:%s optimal_frame_size:%d ptime:%d",
			c.streamID(), channel, c.CallID, asteriskFormatName(f), frame, asteriskFrameMs)
	}
	a.out = b
	return send(Text, a.out)
}

// DTMF renders DTMF_END; there is none for a byte that is not a key.
func (a *asteriskBot) DTMF(digit byte) (MessageType, []byte, bool) {
	if !validDigit(digit) {
		return 0, nil, false
	}
	b := a.out[:0]
	if a.json {
		b = append(b, `{"event":"DTMF_END","channel_id":`...)
		b = appendQuoted(b, a.cfg.Call.CallID)
		b = append(b, `,"digit":"`...)
		b = append(b, digit, '"', '}')
	} else {
		b = append(b, "DTMF_END digit:"...)
		b = append(b, digit)
		b = append(b, " channel_id:"...)
		b = append(b, a.cfg.Call.CallID...)
	}
	a.out = b
	return Text, a.out, true
}

// MarkPlayed renders MEDIA_MARK_PROCESSED with the mark's correlation id.
func (a *asteriskBot) MarkPlayed(name string) (MessageType, []byte, bool) {
	b := a.out[:0]
	if a.json {
		b = append(b, `{"event":"MEDIA_MARK_PROCESSED","channel_id":`...)
		b = appendQuoted(b, a.cfg.Call.CallID)
		b = append(b, `,"correlation_id":`...)
		b = appendQuoted(b, name)
		b = append(b, '}')
	} else {
		b = append(b, "MEDIA_MARK_PROCESSED"...)
		if name != "" {
			b = append(append(b, ' '), name...)
		}
	}
	a.out = b
	return Text, a.out, true
}

// Interrupted sends nothing: Asterisk tells an application nothing of a
// barge-in, which is the application's to detect. A bot learns of one the
// host detected by its marks coming back early.
func (a *asteriskBot) Interrupted(int64, bool, func(MessageType, []byte) error) error { return nil }

// Event renders nothing: Asterisk has no event that carries an
// application's data.
func (a *asteriskBot) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Stop renders nothing: Asterisk ends the stream by closing the socket.
func (a *asteriskBot) Stop() (MessageType, []byte, bool) { return 0, nil, false }

// Decode reads what an application sends Asterisk: audio, and the
// commands FLUSH_MEDIA, MARK_MEDIA and HANGUP, in the form of the
// dialect's control_message_format, as Asterisk reads them.
func (a *asteriskBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	switch typ {
	case Binary:
		if len(msg) > asteriskMaxMessage {
			return limitError(asteriskName, fmt.Errorf("audio message of %d bytes: chan_websocket hangs up on one over %d", len(msg), asteriskMaxMessage))
		}
		return binaryBotAudio(asteriskName, msg, a.cfg.MaxAudio, a.cfg.Format, in)
	case Text:
		if len(msg) == 0 || len(msg) > asteriskMaxCommand {
			return nil // Asterisk logs it and reads on
		}
		cmd, id, err := a.readCommand(msg)
		if err != nil {
			return err
		}
		switch cmd {
		case "FLUSH_MEDIA":
			in.Kind = KindClear
		case "MARK_MEDIA":
			if err := CheckMark("MARK_MEDIA correlation_id", id); err != nil {
				return limitError(asteriskName, err)
			}
			in.Kind, in.Mark = KindMark, id
		case "HANGUP":
			in.Kind = KindStop
		}
		return nil
	}
	return protocolErrorf(asteriskName, "message of unknown WebSocket type %d", int(typ))
}

// readCommand reads a command and its correlation id: in the plain-text
// form the word before the first space and what follows it, trimmed as
// Asterisk trims the message; in the JSON form the command and
// correlation_id members.
func (a *asteriskBot) readCommand(msg []byte) (cmd, id string, err error) {
	if !a.json {
		cmd, id, _ = strings.Cut(strings.TrimSpace(string(msg)), " ")
		return cmd, id, nil
	}
	var c struct {
		Command       string `json:"command"`
		CorrelationID string `json:"correlation_id"`
	}
	if err := json.Unmarshal(msg, &c); err != nil {
		// Asterisk answers with an ERROR event and reads on; the host
		// fails the leg, as every dialect does on a malformed message.
		return "", "", protocolErrorf(asteriskName, "bad JSON command: %v", err)
	}
	return c.Command, c.CorrelationID, nil
}
