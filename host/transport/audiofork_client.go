package transport

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/voxhost/voxhost/host/codec"
)

// The audiofork, audiostream and jambonz dialects: voxhost speaks to the
// bot as the FreeSWITCH module does to its WebSocket server (see
// audiofork.go and jambonz.go), so a server written for mod_audio_fork,
// mod_audio_stream or jambonz's listen verb runs behind voxhost. The
// dialect dials with the module's subprotocol.
//
// To the bot: the metadata, a JSON object {"sampleRate":N,"mixType":"mono",
// "callSid":C,"accountSid":A,...} with the call's parameters after the
// host's members (a parameter of the same name as one is left out) and
// accountSid only when known; then the caller's audio as binary L16
// frames; keys as {"event":"dtmf","dtmf":"5"}, jambonz's passDtmf form
// without its duration, which the host does not know; for jambonz, each of
// the bot's marks once played, {"type":"mark","data":{"name":…,
// "event":"playout"}} (or "cleared" by a barge-in). The host ends the
// stream by closing the socket, as the modules do.
//
// From the bot: mod_audio_fork's playAudio and mod_audio_stream's
// streamAudio of raw L16 at the leg's rate (the host does not resample,
// and a wave or mp3 file is refused); jambonz's binary L16 frames. Then
// killAudio (clear) and disconnect (the bot ends the call) where the
// module has them, jambonz's mark; everything else, and binary frames to
// the two modules that discard them, is ignored.

// forkDialect is a module of the family as a Dialect.
type forkDialect struct{ fl *forkFlavor }

func init() {
	RegisterDialect(forkDialect{audiofork})
	RegisterDialect(forkDialect{audiostream})
}

func (d forkDialect) Name() string { return d.fl.name }

// CheckFormat takes L16 at the rates a leg carries: the modules stream
// L16 only.
func (d forkDialect) CheckFormat(f codec.Format) error {
	if f.Encoding != codec.L16 || f.Check() != nil {
		return errFormat(d.fl.name, f, "L16 at 8000, 16000 or 24000 Hz")
	}
	return nil
}

// Subprotocols lists what the dialect offers when it dials the bot.
func (d forkDialect) Subprotocols() []string { return slices.Clone(d.fl.subprotocols) }

func (d forkDialect) NewBotSession(cfg BotConfig) BotSession {
	checkMaxAudio(cfg.MaxAudio)
	return &forkBot{fl: d.fl, cfg: cfg, audio: payloadBuffer(cfg.MaxAudio), out: make([]byte, 0, 256)}
}

type forkBot struct {
	binaryAudio
	fl  *forkFlavor
	cfg BotConfig
	// The reading goroutine's.
	audio   []byte // the decoded audio of the bot's last playback message
	scratch []byte // its base64 with JSON escapes resolved
	// The writing goroutine's.
	out []byte
}

// forkMetadataKeys are the members the host's metadata starts with.
var forkMetadataKeys = []string{"sampleRate", "mixType", "callSid", "accountSid"}

// Open sends the metadata.
func (b *forkBot) Open(send func(MessageType, []byte) error) error {
	c := b.cfg.Call
	out := append(b.out[:0], `{"sampleRate":`...)
	out = strconv.AppendInt(out, int64(b.cfg.Format.Rate), 10)
	out = append(out, `,"mixType":"mono","callSid":`...)
	out = appendQuoted(out, c.CallID)
	if c.AccountID != "" {
		out = append(out, `,"accountSid":`...)
		out = appendQuoted(out, c.AccountID)
	}
	params := make(map[string]string, len(c.Params))
	for k, v := range c.Params {
		if !slices.Contains(forkMetadataKeys, k) {
			params[k] = v
		}
	}
	if rest := appendParams(nil, params); len(rest) > 2 {
		out = append(append(out, ','), rest[1:]...) // the members, without their own '{'
	} else {
		out = append(out, '}')
	}
	b.out = out
	return send(Text, b.out)
}

// DTMF renders a dtmf event; there is none for a byte that is not a key.
func (b *forkBot) DTMF(digit byte) (MessageType, []byte, bool) {
	return textDigit(&b.out, `{"event":"dtmf","dtmf":"`, digit)
}

// MarkPlayed renders jambonz's mark event; the other modules have none.
func (b *forkBot) MarkPlayed(name string) (MessageType, []byte, bool) {
	if !b.fl.marks {
		return 0, nil, false
	}
	out := append(b.out[:0], `{"type":"mark","data":{"name":`...)
	out = appendQuoted(out, name)
	b.out = append(out, `,"event":"playout"}}`...)
	return Text, b.out, true
}

// Interrupted sends nothing: the modules tell their server nothing of a
// barge-in. A jambonz bot learns of one by its marks coming back.
func (b *forkBot) Interrupted(int64, bool, func(MessageType, []byte) error) error { return nil }

// Event renders nothing: the modules send their server no events.
func (b *forkBot) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Stop renders nothing: the modules end the stream by closing the socket.
func (b *forkBot) Stop() (MessageType, []byte, bool) { return 0, nil, false }

// Decode reads what a server sends the module. Playback messages are read
// by the scanner, without allocating.
func (b *forkBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	name := b.fl.name
	switch typ {
	case Binary:
		if b.fl.play != nil {
			return nil // mod_audio_fork and mod_audio_stream discard binary frames
		}
		return binaryBotAudio(name, msg, b.cfg.MaxAudio, b.cfg.Format, in)
	case Text:
	default:
		return protocolErrorf(name, "message of unknown WebSocket type %d", int(typ))
	}
	var f forkEvent
	if reason := f.scanPlay(msg, b.fl.play); reason != "" {
		return protocolErrorf(name, "%s", reason)
	}
	switch {
	case f.typ == nil:
		// Not one of the module's messages.
	case b.fl.play != nil && textIs(f.typ, b.fl.play.typ):
		return b.play(&f, in)
	case b.fl.clear && textIs(f.typ, "killAudio"):
		in.Kind = KindClear
	case b.fl.hangup && textIs(f.typ, "disconnect"):
		in.Kind = KindStop
	case b.fl.marks && textIs(f.typ, "mark"):
		return decodeForkMark(name, &f, in)
	}
	return nil
}

// play decodes a playback message's raw audio, which must be at the leg's
// rate.
func (b *forkBot) play(f *forkEvent, in *Inbound) error {
	p, name := b.fl.play, b.fl.name
	switch {
	case !f.hasData:
		return protocolErrorf(name, "%s without a data object", p.typ)
	case f.contentType == nil || !textIs(f.contentType, "raw"):
		var ct string
		if f.contentType != nil {
			_ = json.Unmarshal(f.contentType, &ct)
		}
		return &ProtocolError{Protocol: name, Unsupported: true,
			Reason: p.typ + " data." + p.contentType + " " + excerpt(ct) + `: voxhost takes "raw" L16 audio`}
	case f.content == nil:
		return protocolErrorf(name, "%s without a string data.%s", p.typ, p.content)
	}
	if rate, ok := forkRateToken(f.rate); !ok || rate != b.cfg.Format.Rate {
		return &ProtocolError{Protocol: name, Unsupported: true,
			Reason: p.typ + " data.sampleRate " + excerpt(string(f.rate)) + " is not the leg's " + strconv.Itoa(b.cfg.Format.Rate) + " Hz: voxhost does not resample"}
	}
	n, err := decodeBase64Token(name, p.what, f.content, b.audio, &b.scratch, b.cfg.MaxAudio)
	if err == nil {
		err = checkBotAudio(name, n, b.cfg.MaxAudio, b.cfg.Format)
	}
	if err != nil {
		return err
	}
	in.Kind, in.Audio = KindAudio, b.audio[:n]
	return nil
}

// forkRateToken reads a sampleRate token: a number, or, as jambonz's
// docs write it, a string of one ("16000"), without allocating.
func forkRateToken(tok []byte) (int, bool) {
	if len(tok) >= 2 && tok[0] == '"' {
		tok = tok[1 : len(tok)-1]
	}
	if len(tok) == 0 || len(tok) > 6 {
		return 0, false
	}
	n := 0
	for _, c := range tok {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
