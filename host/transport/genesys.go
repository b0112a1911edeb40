package transport

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/voxhost/voxhost/host/codec"
)

const genesysName = "genesys"

// Genesys returns Genesys Cloud's AudioHook protocol, version 2, as its
// Audio Connector speaks it to a voice bot. The message types are Genesys'
// own (github.com/purecloudlabs/audiohook-reference-implementation,
// app/audiohook/src/protocol/message.ts, and the Audio Connector's
// github.com/GenesysCloudBlueprints/audioconnector-server-reference-implementation,
// src/protocol/voice-bots.ts); the protocol is described at
// https://developer.genesys.cloud/devapps/audiohook.
//
// Every text message is a JSON object {"version":"2","type":T,"seq":N,
// "id":SESSION,"parameters":{...}}. The client's (Genesys') messages also
// carry "serverseq", the last seq it had from the server, and "position",
// its audio stream's position as an ISO 8601 duration ("PT1.5S"); the
// server's carry "clientseq", the last seq it had from the client. Each
// side numbers its messages 1, 2, 3, ... with no gap: the session checks
// the client's and counts its own, across every message it renders.
//
// Genesys opens with open {organizationId, conversationId, participant
// {id, ani, aniName, dnis}, media: the formats it offers, inputVariables};
// the session answers at once (Inbound.Reply) with opened {startPaused:
// false, media: [the one chosen]}. It chooses a mono offer of the
// external channel (the customer), PCMU before L16, at 8000 Hz; with none,
// a stereo offer, whose audio interleaves its channels in the offer's
// order, and takes the external channel out of it. Genesys then sends
// binary audio (the reference client sends 200 ms frames, 1600 bytes of
// PCMU: run with limits.max_frame_ms of 200 or more) and text: ping
// (answered with pong), dtmf {digit}, paused and resumed (the customer on
// hold: KindPause and KindResume hold a relay's playout), error
// (KindError), update, discarded, playback_started and playback_completed
// (ignored), and finally close, answered with closed (KindStop).
//
// The host sends binary audio in the chosen format (mono, whatever the
// offer), a barge-in as event {entities:[{type:"barge_in",data:{}}]} and,
// when it ends the call, disconnect {reason:"completed"}, or {reason:
// "error", info} after a malformed message. AudioHook has no marks, so the
// host paces what it sends and acknowledges a bot's marks on its own clock:
// Buffers is false. Genesys rate-limits the binary messages it takes (5 a
// second on average, bursts of 25): an echo answers Genesys' 200 ms frames
// one for one, and a relay must join its 20 ms frames into messages of
// 200 ms (AudioChunk). Only the Audio Connector takes audio from the
// server at all; AudioHook Monitor is listen-only and refuses it.
func Genesys() Protocol { return genesysProtocol }

func init() {
	RegisterProtocol(genesysProtocol)
	RegisterDialect(genesysDialect{})
}

type genesys struct{ endpoint }

var genesysProtocol = genesys{endpoint{name: genesysName, path: "/genesys"}}

// MinFrameMs is 200: Genesys streams 200 ms frames (1,600 bytes of PCMU),
// longer than the host's default frame limit.
func (genesys) MinFrameMs() int { return 200 }

// RepliesInOrder is true: every AudioHook message carries the next seq,
// and Genesys ends a session that gets one out of order.
func (genesys) RepliesInOrder() bool { return true }

// genesysChunkMs is the shortest audio message the host sends Genesys:
// its limit of 5 binary messages a second on average (bursts of 25,
// developer.genesys.cloud/organization/organization/limits#audiohook)
// holds at 200 ms a message, the size of the frames Genesys' own client
// sends.
const genesysChunkMs = 200

// AudioChunk is Genesys' rule for the audio sent to it: 200 ms a message at
// least (1600 bytes of PCMU, 3200 of L16), in whole milliseconds.
func (genesys) AudioChunk(f codec.Format) (minBytes, multiple int) {
	return genesysChunkMs * f.BytesPerMs(), f.BytesPerMs()
}

// genesysL16 is AudioHook's L16: 16-bit linear PCM at its only rate, 8000
// Hz, little-endian as the reference implementation reads it.
var genesysL16 = codec.Format{Encoding: codec.L16, Rate: 8000}

// NewSession makes a session for μ-law at 8 kHz until open chooses the
// format.
func (genesys) NewSession(cfg SessionConfig) (Session, error) {
	return &genesysSession{
		cfg:      cfg,
		format:   codec.Telephony,
		channels: 1,
		maxAudio: cfg.maxAudio(codec.Telephony),
		// The external channel of a stereo frame, in either format.
		audio: make([]byte, cfg.maxAudio(genesysL16)),
		reply: make([]byte, 0, 512),
		out:   make([]byte, 0, 512),
	}, nil
}

type genesysSession struct {
	cfg SessionConfig

	// Set by open, before the call's other goroutines exist; read-only
	// after it.
	format   codec.Format
	channels int // interleaved in each binary message: 1 or 2
	external int // the external channel's index among them
	maxAudio int // bytes of one channel
	audio    []byte

	// mu guards what follows: Decode renders its replies on the caller's
	// goroutine, while Clear and Hangup may render on any goroutine of a
	// relayed call (under the call's lock for the caller, which Decode does
	// not hold), and every message takes the next seq.
	mu        sync.Mutex
	id        []byte // the session's id as a JSON string, once open came
	opened    bool
	closed    bool // close came: nothing more is sent
	hungUp    bool // disconnect was rendered
	seq       int64
	clientSeq int64
	failure   string // why the client's last message was refused
	reply     []byte // Decode's last reply
	out       []byte // Clear's or Hangup's last message
}

// genesysMessage is the envelope every AudioHook message has, either way.
type genesysMessage struct {
	Version    *string         `json:"version"`
	Type       string          `json:"type"`
	Seq        *int64          `json:"seq"`
	ServerSeq  *int64          `json:"serverseq"`
	ClientSeq  *int64          `json:"clientseq"`
	ID         string          `json:"id"`
	Position   *string         `json:"position"`
	Parameters json.RawMessage `json:"parameters"`
}

// parseGenesys reads the envelope of a text message of protocol.
func parseGenesys(msg []byte) (genesysMessage, *ProtocolError) {
	var m genesysMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return m, protocolErrorf(genesysName, "bad message: %v", err)
	}
	switch {
	case m.Version == nil:
		return m, protocolErrorf(genesysName, `message without a "version"`)
	case *m.Version != "2":
		err := protocolErrorf(genesysName, "version %s; voxhost speaks AudioHook version 2", excerpt(*m.Version))
		err.Unsupported = true
		return m, err
	case m.Type == "":
		return m, protocolErrorf(genesysName, `message without a "type"`)
	case m.Seq == nil:
		return m, protocolErrorf(genesysName, `%s message without a "seq"`, excerpt(m.Type))
	case m.Position != nil && !isDuration(*m.Position):
		return m, protocolErrorf(genesysName, "%s message with position %s, not a duration such as PT1.5S", excerpt(m.Type), excerpt(*m.Position))
	}
	return m, nil
}

// isDuration reports whether s is an AudioHook duration: PT, a
// non-negative decimal number of seconds, S.
func isDuration(s string) bool {
	if len(s) < 4 || s[:2] != "PT" || s[len(s)-1] != 'S' {
		return false
	}
	num, digits, dot := s[2:len(s)-1], 0, false
	for i := 0; i < len(num); i++ {
		switch c := num[i]; {
		case isDigit(c):
			digits++
		case c == '.' && !dot && i < len(num)-1:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

func (g *genesysSession) Format() codec.Format { return g.format }

func (g *genesysSession) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	switch typ {
	case Binary:
		return g.audioIn(msg, in)
	case Text:
	default:
		return protocolErrorf(genesysName, "message of unknown WebSocket type %d", int(typ))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m, perr := parseGenesys(msg)
	if perr == nil {
		perr = g.check(&m)
	}
	if perr != nil {
		g.failure = perr.Reason
		return perr
	}
	g.clientSeq = *m.Seq
	var err error
	switch m.Type {
	case "open":
		err = g.open(&m, in)
	case "ping":
		g.reply = append(g.appendHead(g.reply[:0], "pong"), "{}}"...)
		in.Reply, in.ReplyType = g.reply, Text
	case "close":
		g.reply = append(g.appendHead(g.reply[:0], "closed"), "{}}"...)
		in.Reply, in.ReplyType = g.reply, Text
		g.closed = true
		in.Kind = KindStop
	case "paused":
		in.Kind = KindPause
	case "resumed":
		in.Kind = KindResume
	case "dtmf":
		err = decodeGenesysDTMF(&m, in)
	case "error":
		in.Kind, in.Text = KindError, genesysErrorText(m.Parameters)
	}
	// update, discarded, playback_started, playback_completed and types
	// added after this code need no answer.
	if err != nil {
		*in = Inbound{}
		var p *ProtocolError
		if errors.As(err, &p) {
			g.failure = p.Reason
		}
	}
	return err
}

// check applies the envelope rules of a client message: its seq follows
// the last one, its serverseq is one the session sent, and after open its
// id is the session's.
func (g *genesysSession) check(m *genesysMessage) *ProtocolError {
	typ := excerpt(m.Type)
	switch {
	case *m.Seq != g.clientSeq+1:
		return protocolErrorf(genesysName, "%s message with seq %d after %d: the client numbers its messages 1, 2, 3, ...", typ, *m.Seq, g.clientSeq)
	case m.ServerSeq != nil && (*m.ServerSeq < 0 || *m.ServerSeq > g.seq):
		return protocolErrorf(genesysName, "%s message with serverseq %d; voxhost has sent %d messages", typ, *m.ServerSeq, g.seq)
	case m.Type == "open":
		return nil
	case g.id == nil:
		return protocolErrorf(genesysName, "%s message before open: Genesys opens the session first", typ)
	case !textIs(g.id, m.ID):
		return protocolErrorf(genesysName, "%s message with id %s, not the session's %s", typ, excerpt(m.ID), g.id)
	}
	return nil
}

// genesysOpen is what the host reads of open's parameters.
type genesysOpen struct {
	OrganizationID string `json:"organizationId"`
	ConversationID string `json:"conversationId"`
	Participant    *struct {
		Ani  string `json:"ani"`
		Dnis string `json:"dnis"`
	} `json:"participant"`
	Media          []genesysMedia    `json:"media"`
	Language       string            `json:"language"`
	InputVariables map[string]string `json:"inputVariables"`
}

// genesysMedia is one media format of open's offer or opened's choice.
type genesysMedia struct {
	Type     string   `json:"type"`
	Format   string   `json:"format"`
	Channels []string `json:"channels"`
	Rate     int      `json:"rate"`
}

// open starts the session: it chooses the media, answers opened and
// starts the stream with the conversation's ids and the flow's input
// variables, the caller's ani and dnis as "from" and "to", and its
// language as "language" (an input variable of the same name wins).
func (g *genesysSession) open(m *genesysMessage, in *Inbound) error {
	switch {
	case g.id != nil:
		return protocolErrorf(genesysName, "a second open on one session")
	case m.ID == "":
		return protocolErrorf(genesysName, `open without an "id"`)
	}
	if err := CheckID("id", m.ID); err != nil {
		return limitError(genesysName, err)
	}
	// From here a refusal can be told with a disconnect.
	g.id = appendQuoted(nil, m.ID)
	var p genesysOpen
	if err := unmarshalParameters(m, &p); err != nil {
		return err
	}
	var from, to string
	if p.Participant != nil {
		from, to = p.Participant.Ani, p.Participant.Dnis
	}
	params := withFromTo(p.InputVariables, from, to)
	if p.Language != "" && params["language"] == "" {
		params = withParam(params, "language", p.Language)
	}
	if err := checkCarrierStart(genesysName, params, "open inputVariables", nil,
		[2]string{"organizationId", p.OrganizationID}, [2]string{"conversationId", p.ConversationID}); err != nil {
		return err
	}
	media, ok := chooseGenesysMedia(p.Media)
	if !ok {
		return unsupportedFormat(genesysName, "open offers no media voxhost takes: it takes PCMU or L16 audio at 8000 Hz with the external channel")
	}
	g.format, g.channels = genesysL16, len(media.Channels)
	if media.Format == "PCMU" {
		g.format = codec.Telephony
	}
	for i, c := range media.Channels {
		if c == "external" {
			g.external = i
		}
	}
	g.maxAudio = g.cfg.maxAudio(g.format)
	g.opened = true

	b := g.appendHead(g.reply[:0], "opened")
	b = append(b, `{"startPaused":false,"media":[{"type":"audio","format":`...)
	b = appendQuoted(b, media.Format)
	b = append(b, `,"channels":[`...)
	for i, c := range media.Channels {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuoted(b, c)
	}
	b = append(b, `],"rate":`...)
	b = strconv.AppendInt(b, int64(media.Rate), 10)
	g.reply = append(b, "}]}}"...)
	in.Reply, in.ReplyType = g.reply, Text
	in.Kind = KindStart
	in.Start = &Start{StreamID: m.ID, CallID: p.ConversationID, AccountID: p.OrganizationID, Params: params}
	return nil
}

// withParam returns params with k set to v, in a fresh map.
func withParam(params map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(params)+1)
	for pk, pv := range params {
		out[pk] = pv
	}
	out[k] = v
	return out
}

// chooseGenesysMedia picks the offer the host takes best: audio at 8000
// Hz, PCMU or L16, with the external channel; mono before stereo, then
// PCMU before L16, then the first offered.
func chooseGenesysMedia(offers []genesysMedia) (genesysMedia, bool) {
	best, rank := genesysMedia{}, -1
	for _, o := range offers {
		r := 2 * (len(o.Channels) - 1)
		switch {
		case o.Type != "audio" || o.Rate != 8000:
			continue
		case o.Format == "L16":
			r++
		case o.Format != "PCMU":
			continue
		}
		switch {
		case len(o.Channels) == 1 && o.Channels[0] == "external":
		case len(o.Channels) == 2 && (o.Channels[0] == "external") != (o.Channels[1] == "external"):
		default:
			continue
		}
		if rank < 0 || r < rank {
			best, rank = o, r
		}
	}
	return best, rank >= 0
}

// audioIn decodes a binary message: the external channel of the chosen
// media, taken out of a stereo frame into the session's buffer.
func (g *genesysSession) audioIn(msg []byte, in *Inbound) error {
	if !g.opened || g.closed {
		what := "before the session is open"
		if g.closed {
			what = "after close"
		}
		return g.refuse(protocolErrorf(genesysName, "audio %s", what))
	}
	audio := msg
	if g.channels == 2 {
		sb := g.format.SampleBytes()
		if len(msg)%(2*sb) != 0 {
			return g.refuse(protocolErrorf(genesysName, "stereo audio of %d bytes is not whole %d-byte sample pairs", len(msg), 2*sb))
		}
		n := len(msg) / 2
		if n > g.maxAudio {
			return g.refuse(tooLong(genesysName, n, g.maxAudio))
		}
		for i, off := 0, g.external*sb; i < n; i, off = i+sb, off+2*sb {
			copy(g.audio[i:i+sb], msg[off:off+sb])
		}
		audio = g.audio[:n]
	}
	if err := checkAudio(genesysName, len(audio), g.maxAudio, g.format); err != nil {
		return g.refuse(err)
	}
	in.Kind, in.Audio = KindAudio, audio
	return nil
}

// refuse records why a binary message was refused, for the disconnect.
func (g *genesysSession) refuse(err error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := err.(*ProtocolError); ok {
		g.failure = p.Reason
	}
	return err
}

// unmarshalParameters reads the parameters of m, which its type requires,
// into v.
func unmarshalParameters(m *genesysMessage, v any) error {
	if len(m.Parameters) == 0 {
		return protocolErrorf(genesysName, `%s message without "parameters"`, excerpt(m.Type))
	}
	if err := json.Unmarshal(m.Parameters, v); err != nil {
		return protocolErrorf(genesysName, "bad %s parameters: %v", excerpt(m.Type), err)
	}
	return nil
}

// decodeGenesysDTMF reads dtmf's parameters.digit.
func decodeGenesysDTMF(m *genesysMessage, in *Inbound) error {
	var p struct {
		Digit string `json:"digit"`
	}
	if err := unmarshalParameters(m, &p); err != nil {
		return err
	}
	if d := p.Digit; len(d) != 1 || !validDigit(d[0]) {
		return protocolErrorf(genesysName, "dtmf digit %s is not one of 0-9 * # A-D", excerpt(d))
	}
	in.Kind, in.Digit = KindDTMF, p.Digit[0]
	return nil
}

// genesysErrorText is what an error message says, "CODE: MESSAGE",
// bounded for a log line.
func genesysErrorText(params json.RawMessage) string {
	var p struct {
		Code    json.Number `json:"code"`
		Message string      `json:"message"`
	}
	_ = json.Unmarshal(params, &p)
	text := p.Message
	if p.Code != "" {
		text = string(p.Code) + ": " + text
	}
	return cutText(text, maxBotErrorText)
}

// appendHead appends the start of a server message of type typ, through
// "parameters":, with the next seq; mu is held.
func (g *genesysSession) appendHead(dst []byte, typ string) []byte {
	g.seq++
	dst = append(dst, `{"version":"2","type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","seq":`...)
	dst = strconv.AppendInt(dst, g.seq, 10)
	dst = append(dst, `,"clientseq":`...)
	dst = strconv.AppendInt(dst, g.clientSeq, 10)
	dst = append(dst, `,"id":`...)
	dst = append(dst, g.id...)
	return append(dst, `,"parameters":`...)
}

// Audio renders a binary message of the frame, mono whatever was chosen.
func (g *genesysSession) Audio(frame []byte) (MessageType, []byte) { return Binary, frame }

// Mark renders nothing: AudioHook has no marks.
func (g *genesysSession) Mark(string) (MessageType, []byte, bool) { return 0, nil, false }

// Clear renders the barge-in event, which makes the Audio Connector stop
// playing the audio it holds. There is none outside an open session.
func (g *genesysSession) Clear() (MessageType, []byte, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.opened || g.closed || g.hungUp {
		return 0, nil, false
	}
	g.out = append(g.appendHead(g.out[:0], "event"), `{"entities":[{"type":"barge_in","data":{}}]}}`...)
	return Text, g.out, true
}

// Event renders nothing: AudioHook's event entities are Genesys' own
// (barge_in, bot_turn_response, transcripts), with no place for a
// plugin's.
func (g *genesysSession) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Hangup renders disconnect, which asks Genesys to close the session:
// reason error with what was wrong after a refused message, completed
// otherwise. There is none before open or after close.
func (g *genesysSession) Hangup() (MessageType, []byte, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.id == nil || g.closed || g.hungUp {
		return 0, nil, false
	}
	g.hungUp = true
	b := g.appendHead(g.out[:0], "disconnect")
	if g.failure == "" {
		b = append(b, `{"reason":"completed"}}`...)
	} else {
		b = append(b, `{"reason":"error","info":`...)
		b = appendQuoted(b, cutText(g.failure, maxBotErrorText))
		b = append(b, "}}"...)
	}
	g.out = b
	return Text, g.out, true
}

// The genesys dialect: voxhost dials the bot as Genesys Cloud's Audio
// Connector dials an AudioHook server, so a bot written for it (pipecat's
// GenesysAudioHookSerializer, the Audio Connector reference server) runs
// behind voxhost.
//
// To the bot: open, with the session's id, the call's ids as UUIDs (the
// call's own where it has UUIDs, else name-based ones made from them, the
// same for the same call), the participant's ani and dnis from the call's
// "from" and "to" parameters, one media offer (the leg's PCMU or L16 at
// 8000 Hz, the external channel) and the other parameters as
// inputVariables; then binary audio, dtmf {digit} and, when the caller
// hangs up, close {reason:"end"}. Each message counts seq from 1 and
// carries the last seq it had from the bot as serverseq and the audio sent
// so far as position. AudioHook has no marks and no plugin events to
// carry, and the client does not tell the server of a barge-in.
//
// From the bot: binary audio of any whole number of samples, event with a
// barge_in entity (KindClear), disconnect (KindStop) and error
// (KindError); opened, pong, closed, pause, resume and other events are
// ignored. The bot's seq must count 1, 2, 3, ... and its clientseq must be
// one the host sent.
//
// Not done: the host streams audio from the start, without waiting for
// opened, and through a pause the bot asks for (a server that drops audio
// outside an open session, as pipecat's does, is fine; Genesys'
// reference server ends the session); it sends no ping; and it cannot set
// the Audiohook-Session-Id header per call, which Genesys sends and the
// reference server checks the id against (a route's headers are fixed).
type genesysDialect struct{}

func (genesysDialect) Name() string { return genesysName }

func (genesysDialect) CheckFormat(f codec.Format) error {
	if f != codec.Telephony && f != genesysL16 {
		return errFormat(genesysName, f, "PCMU (μ-law) or L16 at 8000 Hz")
	}
	return nil
}

func (genesysDialect) NewBotSession(cfg BotConfig) BotSession {
	checkMaxAudio(cfg.MaxAudio)
	return &genesysBot{cfg: cfg, id: genesysUUID(cfg.Call.streamID()), out: make([]byte, 0, 256)}
}

type genesysBot struct {
	cfg BotConfig
	id  string // the session's id, a UUID

	// seq is the last seq sent, by the writing goroutine; serverSeq the
	// last the bot sent, by the reading one. Each reads the other's.
	seq, serverSeq atomic.Int64

	// The writing goroutine's.
	samples int64  // audio sent, in samples: the position
	out     []byte // the last rendered message
}

// appendHead appends the start of a client message of type typ, through
// "parameters":, with the next seq.
func (b *genesysBot) appendHead(dst []byte, typ string) []byte {
	dst = append(dst, `{"version":"2","type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","seq":`...)
	dst = strconv.AppendInt(dst, b.seq.Add(1), 10)
	dst = append(dst, `,"serverseq":`...)
	dst = strconv.AppendInt(dst, b.serverSeq.Load(), 10)
	dst = append(dst, `,"id":"`...)
	dst = append(dst, b.id...)
	dst = append(dst, `","position":"PT`...)
	dst = appendSeconds(dst, b.samples, b.cfg.Format.Rate)
	return append(dst, `S","parameters":`...)
}

// appendSeconds appends samples at rate as seconds with three decimals.
func appendSeconds(dst []byte, samples int64, rate int) []byte {
	ms := samples * 1000 / int64(rate)
	dst = strconv.AppendInt(dst, ms/1000, 10)
	frac := ms % 1000
	return append(dst, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// Open sends open.
func (b *genesysBot) Open(send func(MessageType, []byte) error) error {
	c := b.cfg.Call
	from, to, vars := splitFromTo(c.Params)
	format := "PCMU"
	if b.cfg.Format.Encoding == codec.L16 {
		format = "L16"
	}
	o := b.appendHead(b.out[:0], "open")
	o = append(o, `{"organizationId":`...)
	o = appendQuoted(o, genesysUUID(c.AccountID))
	o = append(o, `,"conversationId":`...)
	o = appendQuoted(o, genesysUUID(c.CallID))
	o = append(o, `,"participant":{"id":`...)
	o = appendQuoted(o, genesysUUID("participant:"+c.CallID))
	o = append(o, `,"ani":`...)
	o = appendQuoted(o, from)
	o = append(o, `,"aniName":"","dnis":`...)
	o = appendQuoted(o, to)
	o = append(o, `},"media":[{"type":"audio","format":"`...)
	o = append(o, format...)
	o = append(o, `","channels":["external"],"rate":8000}]`...)
	if lang := vars["language"]; lang != "" {
		o = append(o, `,"language":`...)
		o = appendQuoted(o, lang)
	}
	o = append(o, `,"inputVariables":`...)
	o = appendParams(o, vars)
	b.out = append(o, "}}"...)
	return send(Text, b.out)
}

// Audio sends the audio itself, as a binary message, and moves the
// position on.
func (b *genesysBot) Audio(audio []byte) (MessageType, []byte) {
	b.samples += int64(len(audio) / b.cfg.Format.SampleBytes())
	return Binary, audio
}

// DTMF renders dtmf; there is none for a byte that is not a key.
func (b *genesysBot) DTMF(digit byte) (MessageType, []byte, bool) {
	if !validDigit(digit) {
		return 0, nil, false
	}
	o := append(b.appendHead(b.out[:0], "dtmf"), `{"digit":"`...)
	b.out = append(o, digit, '"', '}', '}')
	return Text, b.out, true
}

// MarkPlayed renders nothing: AudioHook has no marks.
func (b *genesysBot) MarkPlayed(string) (MessageType, []byte, bool) { return 0, nil, false }

// Interrupted sends nothing: the client has no message for a barge-in.
func (b *genesysBot) Interrupted(int64, bool, func(MessageType, []byte) error) error { return nil }

// Event renders nothing: client messages have no place for a plugin's
// event.
func (b *genesysBot) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Stop renders close, the client's end of the session.
func (b *genesysBot) Stop() (MessageType, []byte, bool) {
	b.out = append(b.appendHead(b.out[:0], "close"), `{"reason":"end"}}`...)
	return Text, b.out, true
}

// Decode reads what an AudioHook server sends: binary audio, event,
// disconnect and error; the envelope's counters are checked.
func (b *genesysBot) Decode(typ MessageType, msg []byte, in *Inbound) error {
	*in = Inbound{}
	switch typ {
	case Binary:
		return binaryBotAudio(genesysName, msg, b.cfg.MaxAudio, b.cfg.Format, in)
	case Text:
	default:
		return protocolErrorf(genesysName, "message of unknown WebSocket type %d", int(typ))
	}
	m, perr := parseGenesys(msg)
	if perr != nil {
		return perr
	}
	typName := excerpt(m.Type)
	if last := b.serverSeq.Load(); *m.Seq != last+1 {
		return protocolErrorf(genesysName, "%s message with seq %d after %d: the server numbers its messages 1, 2, 3, ...", typName, *m.Seq, last)
	}
	if sent := b.seq.Load(); m.ClientSeq != nil && (*m.ClientSeq < 0 || *m.ClientSeq > sent) {
		return protocolErrorf(genesysName, "%s message with clientseq %d; voxhost has sent %d messages", typName, *m.ClientSeq, sent)
	}
	b.serverSeq.Store(*m.Seq)
	switch m.Type {
	case "event":
		var p struct {
			Entities []struct {
				Type string `json:"type"`
			} `json:"entities"`
		}
		if err := unmarshalParameters(&m, &p); err != nil {
			return err
		}
		for _, e := range p.Entities {
			if e.Type == "barge_in" {
				in.Kind = KindClear
			}
		}
	case "disconnect":
		in.Kind = KindStop
	case "error":
		in.Kind, in.Text = KindError, genesysErrorText(m.Parameters)
	}
	return nil
}

// genesysUUID returns s if it is a UUID, else a name-based one made from
// it (SHA-1, in the layout of RFC 4122's version 5), so that what a bot is
// told keeps AudioHook's form and a call gets the same ids every time.
func genesysUUID(s string) string {
	if isUUID(s) {
		return s
	}
	h := sha1.Sum([]byte("voxhost:" + s))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	var u [36]byte
	hex.Encode(u[0:8], h[0:4])
	hex.Encode(u[9:13], h[4:6])
	hex.Encode(u[14:18], h[6:8])
	hex.Encode(u[19:23], h[8:10])
	hex.Encode(u[24:36], h[10:16])
	u[8], u[13], u[18], u[23] = '-', '-', '-', '-'
	return string(u[:])
}

// isUUID reports whether s is a UUID in its text form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}
