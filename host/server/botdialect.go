package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/voxhost/voxhost/host/transport"
)

// What a bot leg does for the speech-to-speech providers' dialects beyond
// audio: it holds the caller's audio until the provider acknowledges the
// session (transport.SetupAcknowledger), passes on what the bot says
// besides audio (transport.BotEvent) within a budget, counts the messages
// its dialect does not know, and fetches a signed URL to dial
// (transport.URLSigner).

// dialectMetrics are the bot leg's metrics of these.
type dialectMetrics struct {
	unknown *prometheus.CounterVec
	events  *prometheus.CounterVec
	held    *prometheus.CounterVec
	setup   *prometheus.HistogramVec
}

func newDialectMetrics(reg prometheus.Registerer) *dialectMetrics {
	m := &dialectMetrics{
		unknown: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_bot_unknown_messages_total",
			Help: "Messages from a bot of a type its dialect does not know, ignored, by upstream protocol.",
		}, []string{"protocol"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_bot_events_total",
			Help: "Transcripts and tool calls a bot sent, by upstream protocol, event (caller_transcript, bot_transcript, tool_call) and result (delivered; dropped_rate over a leg's budget; dropped_size over its bound).",
		}, []string{"protocol", "event", "result"}),
		held: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_bot_held_frames_total",
			Help: "Frames of the caller's audio held until the bot acknowledged its session set-up, by upstream protocol and result (held, then sent; dropped past the bound).",
		}, []string{"protocol", "result"}),
		setup: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "voxhost_bot_setup_seconds",
			Help:    "Time from a bot's session set-up sent to its acknowledgement, by upstream protocol.",
			Buckets: prometheus.ExponentialBuckets(5e-4, 2.5, 12),
		}, []string{"protocol"}),
	}
	reg.MustRegister(m.unknown, m.events, m.held, m.setup)
	return m
}

// setupHoldMs bounds the caller's audio held for a provider's
// acknowledgement: the first second is kept, later frames are dropped
// and counted (the acknowledgement takes a round trip or two).
const setupHoldMs = 1000

// setupHold is a bot leg's wait for its provider's acknowledgement; its
// fields are under botLeg.mu.
type setupHold struct {
	waiting bool
	held    []byte
	dropped int
	since   time.Time
	timer   *time.Timer
}

// awaitSetup begins the wait for the acknowledgement, if the dialect has
// one: the leg ends if it has not come within timeout.
func (b *botLeg) awaitSetup(timeout time.Duration) {
	ack, ok := b.u.Dialect.(transport.SetupAcknowledger)
	if !ok {
		return
	}
	b.setup = setupHold{waiting: true, held: make([]byte, 0, setupHoldMs*b.u.Format.BytesPerMs()), since: time.Now()}
	b.setup.timer = time.AfterFunc(timeout, func() {
		b.mu.Lock()
		waiting := b.setup.waiting
		b.mu.Unlock()
		if waiting && !b.hungUp.Load() { // a bot that hung up has its own reason
			b.failed("setup_timeout", fmt.Sprintf("the voice bot did not acknowledge the session (%s) within %v", ack.Acknowledgement(), timeout), nil)
		}
	})
}

// holdLocked keeps a frame of the caller's audio for after the
// acknowledgement, or drops it past the bound; mu is held.
func (b *botLeg) holdLocked(audio []byte) {
	h := &b.setup
	if len(h.held)+len(audio) > cap(h.held) {
		h.dropped++
		b.c.s.metrics.dialect.held.WithLabelValues(b.u.Dialect.Name(), "dropped").Inc()
		return
	}
	h.held = append(h.held, audio...)
	b.c.s.metrics.dialect.held.WithLabelValues(b.u.Dialect.Name(), "held").Inc()
}

// setupDone ends the wait: the audio held goes to the bot, in frames of
// the size the caller's goroutine sends, ahead of any that follows.
func (b *botLeg) setupDone() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := &b.setup
	if !h.waiting {
		return true // the dialect waits for none, or it came twice
	}
	h.waiting = false
	h.timer.Stop()
	name := b.u.Dialect.Name()
	b.c.s.metrics.dialect.setup.WithLabelValues(name).Observe(time.Since(h.since).Seconds())
	if h.dropped > 0 {
		b.c.log.Warn("the caller's audio outlasted the bot's session set-up: frames dropped", "held_ms", setupHoldMs, "dropped_frames", h.dropped)
	}
	for held := h.held; len(held) > 0; {
		n := min(len(held), len(b.audio))
		typ, msg := b.sess.Audio(held[:n])
		if !b.writeLocked(typ, msg) {
			return false
		}
		held = held[n:]
	}
	h.held = nil
	return true
}

// Bounds on what a bot may make the host pass on besides audio: a bot
// that floods loses the excess, counted.
const (
	maxBotEventBytes = 8 << 10 // an event's data
	botEventsPerSec  = 25      // a leg's events, on average
	botEventBurst    = 50      // and at once
)

// botEventSource is the plugin name a bot's events carry to the caller.
const botEventSource = "bot"

// newEventBudget makes a leg's budget of events.
func newEventBudget() *rate.Limiter { return rate.NewLimiter(botEventsPerSec, botEventBurst) }

// botEvent passes an event of the bot's on to the caller, as a plugin
// event of botEventSource at the bot's audio time, within the budget.
func (b *botLeg) botEvent(ev *transport.BotEvent) bool {
	name, label := b.u.Dialect.Name(), ev.Name
	if !slices.Contains(transport.BotEventNames, label) {
		label = otherEvent
	}
	events := b.c.s.metrics.dialect.events
	switch {
	case len(ev.Data) > maxBotEventBytes:
		events.WithLabelValues(name, label, "dropped_size").Inc()
		return true
	case !b.events.Allow():
		events.WithLabelValues(name, label, "dropped_rate").Inc()
		return true
	}
	events.WithLabelValues(name, label, "delivered").Inc()
	return b.c.callerEvent(&pending{plugin: botEventSource, name: ev.Name, data: ev.Data}, b.audioMs)
}

// maxSignAnswer bounds the answer of an endpoint that hands out signed
// URLs.
const maxSignAnswer = 16 << 10

// signBotURL asks the provider for the URL to dial when the dialect and
// the route's options want a signed one: it returns the URL and headers
// to dial with (none with a signed URL: the signature is the credential),
// or why it failed as a metric label and in words with no secret in them.
func signBotURL(u *Upstream, dial string, timeout time.Duration) (string, http.Header, string, string) {
	signer, ok := u.Dialect.(transport.URLSigner)
	if !ok {
		return dial, u.Header, "", ""
	}
	endpoint, err := signer.SignURL(dial, u.Options)
	switch {
	case err != nil:
		return "", nil, "signed_url", err.Error()
	case endpoint == "":
		return dial, u.Header, "", ""
	}
	target, err := url.Parse(endpoint)
	if err != nil {
		return "", nil, "signed_url", "the signing endpoint's url does not parse"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return "", nil, "signed_url", "the signing endpoint's url does not make a request"
	}
	req.Header = u.Header.Clone()
	resp, err := pinnedClient(target.Host).Do(req)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err // its URL has the query
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return "", nil, "signed_url", fmt.Sprintf("the signing endpoint gave no answer within %v", timeout)
		}
		return "", nil, "signed_url", "the signing endpoint cannot be reached: " + err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSignAnswer))
	if err != nil {
		return "", nil, "signed_url", "the signing endpoint's answer was cut off"
	}
	signed, err := signer.SignedURL(resp.StatusCode, body)
	if err != nil {
		return "", nil, "signed_url", err.Error()
	}
	if s, err := url.Parse(signed); err != nil || !strings.EqualFold(s.Host, target.Host) {
		return "", nil, "signed_url", "the signed url names a host other than the upstream url's"
	}
	return signed, nil, "", ""
}
