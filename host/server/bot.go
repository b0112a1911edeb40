package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/sched"
)

// botMessageBytes caps one message from a bot. Bots send their answer
// faster than real time and in larger chunks than a carrier's 20 ms (an
// OpenAI delta may hold a second of 24 kHz audio, 64 KB of base64), so the
// bound is the callers' limit or 256 KiB, whichever is larger.
func (s *Server) botMessageBytes() int { return max(s.opts.MaxMessageBytes, 256<<10) }

// Who asked for a barge-in, as voxhost_barge_ins_total labels it.
const (
	bargeInPlugin = "plugin"
	bargeInBot    = "bot"
)

// outboundFrameMs is the frame the bot's audio is cut into for the
// outbound pipeline and the playout clock.
const outboundFrameMs = 20

// botLeg is a relayed call's connection to its bot.
type botLeg struct {
	c    *call
	u    *Upstream
	conn *websocket.Conn
	sess transport.BotSession

	// mu serializes what is rendered for and written to the bot: the
	// caller's goroutine sends audio, the bot reader and the playout send
	// mark acknowledgements, and a session renders into one buffer.
	mu     sync.Mutex
	writes writeGauge
	// timer times the bot's messages for the outbound
	// voxhost_relay_frame_seconds; the bot reader uses it.
	timer frameTimer
	// audio holds the inbound pipeline's output in the bot leg's format.
	audio []byte

	// What the bot reader alone touches.
	readBuf []byte
	msg     transport.Inbound
	frame   []byte // the bot's audio being cut into whole frames
	filled  int
	src     codec.Source
	pcm     []byte // a frame decoded, when there is no outbound pipeline
	out     []byte // a frame for the caller, in its format
	// audioMs is the bot's audio cut into frames so far: the time of the
	// outbound plugins' events.
	audioMs int64
	// keysDropped says the bot pressed a key the caller's protocol cannot
	// carry, which the log has said.
	keysDropped bool

	// clearOutbound asks the bot reader to deliver EventClear to the
	// outbound plugins and drop the frame it holds, before its next frame:
	// a barge-in from the caller's side, whose goroutine must not call into
	// the pipeline the reader runs.
	clearOutbound atomic.Bool
	// hungUp is set once the bot ended its stream: the caller hears what
	// is queued, then the call ends.
	hungUp atomic.Bool

	queue *playout

	// setup is the wait for the bot's acknowledgement of its session, under
	// mu; events is the budget of its events, the bot reader's.
	setup  setupHold
	events *rate.Limiter
}

// connectBot dials the route's bot. A bot that cannot be reached ends the
// call, or with on_failure: echo leaves it an echo. The caller is told only
// that the bot cannot be reached: why (refused, a timeout, an HTTP status)
// would let a caller map the bot's network, and the log has it.
func (c *call) connectBot(u *Upstream, info transport.CallInfo) error {
	s := c.s
	timeout := u.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	name := u.Dialect.Name()
	t0 := time.Now()
	dialled, err := transport.ExpandURL(u.URL, info)
	var conn *websocket.Conn
	var header http.Header
	var why, reason string
	if err != nil {
		why, reason = "unsafe_url", err.Error()
		dialled = u.URL // the template, for the log: never the caller's values
	} else if dialled, header, why, reason = signBotURL(u, dialled, timeout); why == "" {
		conn, why, reason = dialBot(u, dialled, header, timeout)
	} else {
		dialled = u.URL
	}
	if conn == nil {
		s.metrics.upstreamFailures.WithLabelValues(name, why).Inc()
		if u.OnFailure == FailEcho {
			c.log.Warn("bot unreachable: the call goes on as an echo", "upstream", redactURL(dialled), "reason", reason)
			return nil
		}
		c.log.Warn("bot unreachable", "upstream", redactURL(dialled), "reason", reason)
		c.end(websocket.StatusTryAgainLater, botUnreachable, "bot_unreachable")
		return errors.New(reason)
	}
	s.metrics.upstreamConnect.WithLabelValues(name).Observe(time.Since(t0).Seconds())
	conn.SetReadLimit(int64(s.botMessageBytes()) + 1)
	frameBytes := outboundFrameMs * u.Format.BytesPerMs()
	maxAudio := c.maxFrameMs * u.Format.BytesPerMs()
	b := &botLeg{
		c:       c,
		u:       u,
		conn:    conn,
		sess:    u.Dialect.NewBotSession(transport.BotConfig{Format: u.Format, MaxAudio: s.botMessageBytes(), Call: info, Options: u.Options}),
		audio:   make([]byte, maxAudio),
		readBuf: make([]byte, initialReadBuffer),
		frame:   make([]byte, frameBytes),
		src:     codec.Source{Format: u.Format},
		pcm:     make([]byte, outboundFrameMs*u.Format.Rate/1000*abi.SampleBytes),
		out:     make([]byte, c.maxFrameMs*c.format.BytesPerMs()),
		queue:   newPlayout(s, c.format),
		timer:   newFrameTimer(s.opts.SampleEvery, s.metrics.relayFrame.WithLabelValues(DirectionOutbound)),
		events:  newEventBudget(),
	}
	if c.proto.Buffers() {
		b.queue.buffers, b.queue.sendAhead = true, max(s.opts.SendAhead, pacedLead)
	}
	if ch, ok := c.proto.(transport.AudioChunker); ok {
		b.queue.chunked(ch.AudioChunk(c.format))
	}
	if err := b.sess.Open(func(typ transport.MessageType, msg []byte) error {
		if !b.writeLocked(typ, msg) {
			return errors.New("write failed")
		}
		return nil
	}); err != nil {
		_ = conn.CloseNow()
		s.metrics.upstreamFailures.WithLabelValues(name, "closed").Inc()
		c.end(websocket.StatusTryAgainLater, "the voice bot closed the connection at once", "bot_unreachable")
		return err
	}
	b.awaitSetup(timeout)
	c.log = c.log.With("upstream", name)
	c.bot = b
	c.botLive.Store(b)
	return nil
}

// botUnreachable is all a caller learns of a bot dial that failed.
const botUnreachable = "the voice bot cannot be reached"

// errBotRedirect stops a bot dial at a redirect: following it would send
// the route's headers, its credentials, wherever the answer points.
var errBotRedirect = errors.New("the bot answered the handshake with a redirect, which voxhost does not follow; point upstream.url at the final address")

// errBotHost refuses a handshake request to a host other than the one the
// route's URL names (defence in depth: ExpandURL already checks).
var errBotHost = errors.New("refused to send the handshake to a host the route's upstream url does not name")

// dialBot dials the filled URL of u with header, or says why it failed as
// a metric label and in words for the log, with the URL's secrets
// redacted.
func dialBot(u *Upstream, dialled string, header http.Header, timeout time.Duration) (*websocket.Conn, string, string) {
	target, err := url.Parse(dialled)
	if err != nil {
		return nil, "unsafe_url", "the filled upstream url does not parse"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, dialled, &websocket.DialOptions{HTTPClient: pinnedClient(target.Host), HTTPHeader: header, Subprotocols: transport.SubprotocolsOf(u.Dialect)})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		why, reason := dialFailure(err, resp, timeout)
		return nil, why, redactIn(reason, target)
	}
	return conn, "", ""
}

// pinnedClient makes requests to host only, following no redirect: a
// redirect would send the route's headers, its credentials, wherever the
// answer points.
func pinnedClient(host string) *http.Client {
	return &http.Client{
		Transport:     pinnedTransport{host: host, base: http.DefaultTransport},
		CheckRedirect: func(*http.Request, []*http.Request) error { return errBotRedirect },
	}
}

// pinnedTransport sends requests to one host only.
type pinnedTransport struct {
	host string
	base http.RoundTripper
}

// RoundTrip sends r if it goes to the pinned host.
func (p pinnedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.EqualFold(r.URL.Host, p.host) {
		return nil, errBotHost
	}
	return p.base.RoundTrip(r)
}

// redactURL shows a bot's URL in logs without what may be a secret: the
// userinfo and the query.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparseable url)"
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// redactIn removes the secrets redactURL hides from a message about a dial
// of u, whatever library wrote the message. Each is matched with the
// delimiter before or after it, so that a short one ("?k") cannot mangle
// the words around it.
func redactIn(msg string, u *url.URL) string {
	if u.RawQuery != "" {
		msg = strings.ReplaceAll(msg, "?"+u.RawQuery, "?…")
	}
	if u.User != nil {
		msg = strings.ReplaceAll(msg, u.User.String()+"@", "redacted@")
	}
	return msg
}

// run starts the bot leg's goroutines: the bot reader and the playout.
func (b *botLeg) run() {
	b.c.workers.Add(2)
	go b.read()
	go b.c.playout()
}

// write renders nothing; it writes one message the caller's goroutine
// rendered under mu.
func (b *botLeg) write(typ transport.MessageType, msg []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.writeLocked(typ, msg)
}

// writeLocked writes one message to the bot; mu is held. Once the bot has
// hung up, what the caller's side still sends is dropped: the call ends
// when the caller has heard the bot's last words.
func (b *botLeg) writeLocked(typ transport.MessageType, msg []byte) bool {
	if b.hungUp.Load() {
		return true
	}
	b.writes.begin()
	err := b.conn.Write(ctx, websocket.MessageType(typ), msg)
	b.writes.end()
	if err != nil && !b.hungUp.Load() {
		// The caller hears no more than that: the error names the bot's
		// address, which is the operator's business (the log has it).
		b.failed("closed", "the voice bot's connection failed", err)
		return false
	}
	return true
}

// sendAudio encodes a frame of the inbound pipeline's output for the bot
// and sends it.
func (b *botLeg) sendAudio(pcm []byte) bool {
	n := b.u.Format.Encode(b.audio, pcm)
	if n == 0 {
		return true // a plugin swallowed the frame
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.setup.waiting {
		b.holdLocked(b.audio[:n])
		return true
	}
	typ, msg := b.sess.Audio(b.audio[:n])
	return b.writeLocked(typ, msg)
}

// ack tells the bot its mark was played (or cleared).
func (b *botLeg) ack(name, result string) {
	b.c.s.metrics.marks.WithLabelValues(result).Inc()
	b.mu.Lock()
	defer b.mu.Unlock()
	if typ, msg, ok := b.sess.MarkPlayed(name); ok {
		b.writeLocked(typ, msg)
	}
}

// callerPlayed handles a mark the caller returned: when it is the next
// of the bot's marks the caller was sent, the bot hears it played.
func (b *botLeg) callerPlayed(name string) {
	if b.queue.played(name) {
		b.ack(name, "played")
		return
	}
	b.c.log.Debug("mark from the caller that no bot mark matches", "mark", name)
}

// failed ends the call because its bot leg failed: why labels
// voxhost_upstream_failures_total, reason tells the caller, err (when not
// nil) tells the log only.
func (b *botLeg) failed(why, reason string, err error) {
	select {
	case <-b.c.done:
		return // the call was ending anyway
	default:
	}
	b.c.s.metrics.upstreamFailures.WithLabelValues(b.u.Dialect.Name(), why).Inc()
	if err != nil {
		b.c.log.Warn("bot leg failed", "reason", reason, "err", err)
	} else {
		b.c.log.Warn("bot leg failed", "reason", reason)
	}
	b.c.end(websocket.StatusInternalError, reason, "bot_"+why)
}

// close tells the bot the call ended: stop, then a normal close. It runs
// once, from end, and must not block: a bot that stopped reading would
// hold it, so the socket is cut after a moment.
func (b *botLeg) close() {
	go func() {
		b.mu.Lock()
		if typ, msg, ok := b.sess.Stop(); ok {
			b.writeLocked(typ, msg) // a bot that hung up gets nothing
		}
		b.mu.Unlock()
		_ = b.conn.Close(websocket.StatusNormalClosure, "call ended")
	}()
	time.AfterFunc(closeGrace, func() { _ = b.conn.CloseNow() })
}

// finish counts the marks that never reached the caller.
func (b *botLeg) finish() {
	if n := b.queue.unplayedMarks(); n > 0 {
		b.c.s.metrics.marks.WithLabelValues("dropped").Add(float64(n))
	}
}

// summary is what the call-ended log line says of the bot leg.
func (b *botLeg) summary() []any {
	q := b.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	return []any{"bot_audio_ms", q.pushed / int64(q.format.BytesPerMs()), "played_ms", q.popped / int64(q.format.BytesPerMs()),
		"cleared_ms", q.dropped / int64(q.format.BytesPerMs()), "underruns", q.underruns, "overflows", q.overflows}
}

// read is the bot reader: it reads the bot, cuts its audio into frames,
// runs them through the outbound pipeline and queues them for the caller.
func (b *botLeg) read() {
	c := b.c
	defer c.workers.Done()
	for {
		typ, msg, err := readMessage(b.conn, &b.readBuf, c.s.botMessageBytes())
		if err != nil {
			b.readFailed(err)
			return
		}
		t0 := b.timer.start()
		if err := b.sess.Decode(transport.MessageType(typ), msg, &b.msg); err != nil {
			c.log.Info("malformed message from the bot", "err", err)
			b.failed("malformed", "the voice bot sent a malformed message: "+err.Error(), nil)
			return
		}
		if b.msg.Reply != nil && !b.write(b.msg.ReplyType, b.msg.Reply) {
			return // a ping's pong
		}
		if b.msg.Unknown {
			c.s.metrics.dialect.unknown.WithLabelValues(b.u.Dialect.Name()).Inc()
		}
		for i := range b.msg.Events {
			if !b.botEvent(&b.msg.Events[i]) {
				return
			}
		}
		switch b.msg.Kind {
		case transport.KindAudio:
			if !b.audioIn(b.msg.Audio, t0) {
				return
			}
		case transport.KindMark:
			// The audio before the mark is queued before it: a frame cut
			// short goes out as it is.
			if !b.flushFrame(t0) {
				return
			}
			b.queue.mark(b.msg.Mark, c)
		case transport.KindClear:
			c.bargeIn(bargeInBot)
		case transport.KindReady:
			if !b.setupDone() {
				return
			}
		case transport.KindDTMF:
			if !b.digit(b.msg.Digit, t0) {
				return
			}
		case transport.KindStop:
			b.hangUp("the bot ended the stream")
			return
		case transport.KindError:
			c.log.Warn("the bot reported an error", "error", b.msg.Text)
			c.s.metrics.botErrors.WithLabelValues(b.u.Dialect.Name()).Inc()
		}
	}
}

// readFailed handles the end of the bot's side: a close (normal or not)
// while the call runs is the bot hanging up.
func (b *botLeg) readFailed(err error) {
	select {
	case <-b.c.done:
		return
	default:
	}
	switch {
	case errors.Is(err, errTooBig):
		b.failed("malformed", fmt.Sprintf("the voice bot sent a message over %d bytes", b.c.s.botMessageBytes()), nil)
	case websocket.CloseStatus(err) == websocket.StatusNormalClosure || websocket.CloseStatus(err) == websocket.StatusGoingAway:
		b.hangUp("the bot ended the call")
	default:
		b.c.s.metrics.upstreamFailures.WithLabelValues(b.u.Dialect.Name(), "closed").Inc()
		b.hangUp("the bot's connection was lost")
	}
}

// hangUp ends the call once the caller has heard what is queued.
func (b *botLeg) hangUp(reason string) {
	if !b.flushFrame(time.Now()) {
		return
	}
	b.hungUp.Store(true)
	b.queue.hangUp(reason)
}

// audioIn cuts the bot's audio into whole frames for the outbound
// pipeline. A barge-in while a message is being cut (the reader held back
// by a full queue, a long message) drops the rest of that message: the bot
// sent it before it heard of the barge-in.
func (b *botLeg) audioIn(audio []byte, t0 time.Time) bool {
	for first := true; len(audio) > 0; first = false {
		if b.clearOutbound.Load() {
			if !b.deliverClear() {
				return false
			}
			if !first {
				return true
			}
		}
		n := copy(b.frame[b.filled:], audio)
		b.filled += n
		audio = audio[n:]
		if b.filled == len(b.frame) && !b.processFrame(t0) {
			return false
		}
	}
	return true
}

// flushFrame sends on the part of a frame the bot reader holds, cut to
// whole milliseconds (the ABI's frames are).
func (b *botLeg) flushFrame(t0 time.Time) bool {
	b.filled -= b.filled % b.u.Format.BytesPerMs()
	if b.filled == 0 {
		return true
	}
	return b.processFrame(t0)
}

// processFrame runs the frame held through the outbound pipeline and
// queues the result for the caller.
func (b *botLeg) processFrame(t0 time.Time) bool {
	c := b.c
	gen := b.queue.generation()
	b.src.Frame = b.frame[:b.filled]
	b.audioMs += int64(b.filled / b.u.Format.BytesPerMs())
	b.filled = 0
	var pcm []byte
	// Due when the audio queued before it has played, and never sooner
	// than a caller's frame read now.
	rt := c.s.rt
	deadline := sched.Now() + int64(b.queue.ahead()+rt.deadline)
	if c.out != nil {
		var err error
		c.cpu.out.Acquire(deadline)
		pcm, err = c.out.Process(&b.src)
		c.cpu.out.Release()
		if err != nil {
			c.outboundFailed(err)
			return false
		}
	} else {
		pcm = b.pcm[:b.src.Fill(b.pcm)]
	}
	n := c.format.Encode(b.out, pcm)
	if !c.outEvents.empty() && !c.flushOutbound() {
		return false
	}
	if n > 0 {
		direct, ok := b.queue.push(b.out[:n], gen, c.done)
		if direct {
			ok = c.sendPlayout(b.out[:n], gen)
			b.queue.written()
		}
		if !ok {
			return false
		}
	}
	b.timer.done(t0)
	rt.onTime(deadline, rt.lateOut)
	return c.out == nil || c.overQuota(c.out)
}

// deliverClear tells the outbound plugins of a barge-in and drops the
// frame being cut: both were audio from before it.
func (b *botLeg) deliverClear() bool {
	b.clearOutbound.Store(false)
	b.filled = 0
	if b.c.out == nil {
		return true
	}
	lease := b.c.cpu.out
	lease.Acquire(sched.Now())
	err := b.c.out.Event(abi.EventClear, 0, nil)
	lease.Release()
	if err != nil {
		b.c.outboundFailed(err)
		return false
	}
	return b.c.outEvents.empty() || b.c.flushOutbound()
}

// bargeIn empties the playout queue: the caller spoke over the bot (a
// clear from an inbound plugin) or the bot asked (its clear). The caller's
// protocol gets its clear, the marks that were queued are acknowledged as
// their carrier would, the bot hears what the caller heard, and the
// outbound plugins get EventClear before their next frame.
func (c *call) bargeIn(source string) {
	b := c.bot
	// Before the bot hears of it: the bot reader must deliver EventClear
	// before the first frame of the bot's next answer, which can come as
	// soon as the bot is told (set after, a fast answer could reach the
	// outbound plugins, and be played, ahead of its own clear).
	b.clearOutbound.Store(true)
	c.s.metrics.bargeIns.WithLabelValues(source).Inc()
	md, _ := c.proto.(transport.MarkDropper)
	dropsMarks := md != nil && md.ClearDropsMarks()
	c.callerMu.Lock()
	heardMs, cleared := b.queue.clear(dropsMarks)
	if c.far != nil {
		c.far.clear()
	}
	if typ, msg, ok := c.sess.Clear(); ok {
		c.writeCallerLocked(typ, msg)
	}
	c.callerMu.Unlock()
	for _, name := range cleared {
		b.ack(name, "cleared")
	}
	b.mu.Lock()
	if !b.setup.waiting { // before it has acknowledged its set-up, a bot has said nothing
		_ = b.sess.Interrupted(heardMs, source == bargeInBot, func(typ transport.MessageType, msg []byte) error {
			if !b.writeLocked(typ, msg) {
				return errors.New("write failed")
			}
			return nil
		})
	}
	b.mu.Unlock()
	c.log.Debug("barge-in", "source", source, "heard_ms", heardMs, "marks_cleared", len(cleared))
}

// dialFailure classifies a failed dial, as a metric label and in words: a
// timeout, a refused connection, a handshake the bot answered with an HTTP
// error, or another network failure.
func dialFailure(err error, resp *http.Response, timeout time.Duration) (string, string) {
	var opErr *net.OpError
	var urlErr *url.Error
	switch {
	case errors.Is(err, errBotRedirect):
		return "redirect", errBotRedirect.Error()
	case errors.Is(err, errBotHost):
		return "unsafe_url", errBotHost.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "connect_timeout", fmt.Sprintf("no answer within %v", timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused", "connection refused"
	case resp != nil:
		return "handshake", "the bot refused the WebSocket handshake: HTTP " + resp.Status
	case errors.As(err, &opErr):
		return "unreachable", opErr.Err.Error()
	case errors.As(err, &urlErr):
		return "unreachable", urlErr.Err.Error() // its URL is the bot's, query and all
	}
	return "unreachable", err.Error()
}
