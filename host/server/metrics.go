package server

import (
	"regexp"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/recording"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus series, registered on the
// Registerer of Options or on a registry of the server's own, so that
// several servers (tests) can live in one process.
type metrics struct {
	registry prometheus.Registerer
	// gatherer serves GET /metrics; nil when the Registerer is not one.
	gatherer      prometheus.Gatherer
	activeCalls   prometheus.Gauge
	calls         *prometheus.CounterVec
	framesIn      *prometheus.CounterVec
	framesOut     *prometheus.CounterVec
	frameSeconds  *prometheus.HistogramVec
	pluginErrors  *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	doorRefused   prometheus.Counter
	malformed     *prometheus.CounterVec
	pluginEvents  *prometheus.CounterVec
	emitsDropped  *prometheus.CounterVec
	instancesLive prometheus.GaugeFunc
	callSeconds   *prometheus.HistogramVec
	capacity      prometheus.Gauge
	shed          *prometheus.CounterVec
	setupWait     prometheus.Histogram

	upstreamConnect  *prometheus.HistogramVec
	upstreamFailures *prometheus.CounterVec
	botErrors        *prometheus.CounterVec
	relayFrame       *prometheus.HistogramVec
	playoutDepth     prometheus.Histogram
	underruns        prometheus.Counter
	overflows        prometheus.Counter
	marks            *prometheus.CounterVec
	bargeIns         *prometheus.CounterVec
	pluginFrame      *prometheus.HistogramVec
	farEnd           *farEndMetrics
	taps             *tapMetrics

	framesLate *prometheus.CounterVec
	schedWait  prometheus.Histogram
	degraded   *prometheus.CounterVec

	recording *recording.Metrics
	dialect   *dialectMetrics
}

// Directions of a call's pipelines, as the direction label spells them.
const (
	// DirectionInbound is the caller's audio: caller → inbound pipeline →
	// bot (or, in an echo, on to the outbound pipeline).
	DirectionInbound = "inbound"
	// DirectionOutbound is what the caller hears: bot → outbound pipeline →
	// playout queue.
	DirectionOutbound = "outbound"
)

// Reasons a call is shed: refused because the process is overloaded,
// rather than full, draining or unauthorized.
const (
	// shedCPU: the process's CPU use passed its high-water mark.
	shedCPU = "cpu"
	// shedCPUWait: its goroutines waited for a core past their mark.
	shedCPUWait = "cpu_wait"
	// shedSetup: no call set-up slot came free within the set-up wait.
	shedSetup = "setup_queue"
)

func newMetrics(reg prometheus.Registerer, liveInstances func() float64) *metrics {
	own := reg == nil
	if own {
		reg = prometheus.NewRegistry()
	}
	gatherer, _ := reg.(prometheus.Gatherer)
	m := &metrics{
		registry: reg,
		gatherer: gatherer,
		activeCalls: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "voxhost_active_calls", Help: "Calls in progress.",
		}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_calls_total", Help: "Calls ended, by protocol and outcome.",
		}, []string{"protocol", "outcome"}),
		framesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_frames_in_total", Help: "Audio frames received.",
		}, []string{"protocol"}),
		framesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_frames_out_total", Help: "Audio frames sent.",
		}, []string{"protocol"}),
		frameSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "voxhost_frame_processing_seconds",
			Help:    "Time to decode, run the pipeline on and encode one frame, sampled (one frame in sample_every per call).",
			Buckets: prometheus.ExponentialBuckets(1e-6, 2.5, 12),
		}, []string{"pipeline"}),
		pluginErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_plugin_errors_total", Help: "Plugin failures, by plugin and kind (trap, status, contract).",
		}, []string{"plugin", "kind"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_rejected_connections_total", Help: "Connections refused before upgrade, by reason.",
		}, []string{"reason"}),
		doorRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxhost_door_refusals_total", Help: "Calls of voxhost_rejected_connections_total answered at the door: refused in the accept loop, before net/http parsed the request.",
		}),
		malformed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_malformed_messages_total", Help: "Calls ended by malformed input, by protocol and reason.",
		}, []string{"protocol", "reason"}),
		pluginEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_plugin_events_total", Help: "Events emitted by plugins, by plugin and name (the well-known names, plugin_error for a failure, other for the rest).",
		}, []string{"plugin", "name"}),
		emitsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_plugin_emits_dropped_total", Help: "Emits the host dropped instead of sending on (ABI.md §4), by plugin and reason (rate_limited, bad_name, oversize_data, out_of_bounds, invalid_data); counted when the call ends.",
		}, []string{"plugin", "reason"}),
	}
	m.callSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "voxhost_call_duration_seconds",
		Help:    "Call lengths, by protocol: what a drain timeout has to cover.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600},
	}, []string{"protocol"})
	m.capacity = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "voxhost_calls_capacity", Help: "Most concurrent calls this server accepts (max_calls).",
	})
	m.shed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voxhost_calls_shed_total", Help: "Calls refused or ended because the process is overloaded, by reason: refused at the door (cpu, cpu_wait, setup_queue, predicted_cpu), ended while running (cpu_quota: past limits.call_cpu_share; late_frames: the costliest call when frames were late).",
	}, []string{"reason"})
	// Every reason from the start, so that an alert on its rate sees 0
	// rather than no series.
	for _, r := range []string{shedCPU, shedCPUWait, shedSetup, shedPredicted, shedQuota, shedLate} {
		m.shed.WithLabelValues(r)
	}
	m.setupWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "voxhost_call_setup_wait_seconds",
		Help:    "How long new calls waited for a set-up slot (max_concurrent_setups): a queue building up before calls are refused.",
		Buckets: prometheus.ExponentialBuckets(1e-4, 4, 8),
	})
	m.instancesLive = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "voxhost_plugin_instances", Help: "Plugin instances alive.",
	}, liveInstances)
	m.upstreamConnect = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "voxhost_upstream_connect_seconds",
		Help:    "Time to dial a bot and finish the WebSocket handshake, by upstream protocol.",
		Buckets: prometheus.ExponentialBuckets(5e-4, 2.5, 10),
	}, []string{"protocol"})
	m.upstreamFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voxhost_upstream_failures_total",
		Help: "Bot legs that failed, by upstream protocol and reason (connect_timeout, refused, handshake, redirect, unsafe_url, signed_url, unreachable, closed, stalled, malformed, setup_timeout).",
	}, []string{"protocol", "reason"})
	m.botErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voxhost_bot_errors_total",
		Help: "Errors a bot reported in a message, each logged with its text, by upstream protocol (OpenAI's error, Gemini's goAway, Deepgram's Error and Warning, ElevenLabs' error).",
	}, []string{"protocol"})
	m.relayFrame = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "voxhost_relay_frame_seconds",
		Help:    "Time the host adds to a relayed frame, by direction: inbound from the caller's message read to the bot's written, outbound from the bot's audio read to its frame queued for the caller; sampled (one message in sample_every per leg).",
		Buckets: prometheus.ExponentialBuckets(1e-6, 2.5, 14),
	}, []string{"direction"})
	m.playoutDepth = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "voxhost_playout_queue_seconds",
		Help:    "Bot audio queued for the caller, in audio seconds, seen as a frame goes out (one frame in sample_every per call).",
		Buckets: []float64{0.02, 0.04, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 60},
	})
	m.underruns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "voxhost_playout_underruns_total",
		Help: "Times a relayed call's playout queue ran dry and the bot's audio went on less than 100 ms later: a gap the caller heard.",
	})
	m.overflows = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "voxhost_playout_overflows_total",
		Help: "Times a bot sent more audio than the playout queue holds and was held back until the caller had heard enough (nothing is dropped).",
	})
	m.marks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voxhost_marks_total", Help: "Bot marks, by result: played (acknowledged after the audio before it), cleared (acknowledged on barge-in), dropped (the call ended first).",
	}, []string{"result"})
	m.bargeIns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voxhost_barge_ins_total", Help: "Playout queues emptied on barge-in, by who asked: plugin (a clear event on the inbound path) or bot.",
	}, []string{"source"})
	m.pluginFrame = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "voxhost_plugin_frame_seconds",
		Help:    "Time of one frame in one plugin, sampled (one frame in sample_every per call), by route (pipeline), direction (inbound, outbound) and plugin.",
		Buckets: prometheus.ExponentialBuckets(1e-7, 2.5, 14),
	}, []string{"pipeline", "direction", "plugin"})
	m.framesLate = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voxhost_frames_late_total", Help: "Frames answered after their deadline (limits.frame_deadline after the caller's frame was read; a bot's frame after it was due to play), by direction.",
	}, []string{"direction"})
	for _, d := range []string{DirectionInbound, DirectionOutbound} {
		m.framesLate.WithLabelValues(d)
	}
	m.schedWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "voxhost_scheduler_wait_seconds",
		Help:    "How long plugin work that found every scheduler slot taken waited for one (earliest deadline first); work that found one free is not observed.",
		Buckets: prometheus.ExponentialBuckets(1e-5, 3, 10),
	})
	m.degraded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voxhost_calls_degraded_total", Help: "Plugins bypassed in calls over their CPU quota (over_quota: bypass_costliest), by route.",
	}, []string{"route"})
	m.farEnd = newFarEndMetrics(m.registry)
	m.taps = newTapMetrics(m.registry)
	m.registry.MustRegister(m.pluginFrame, m.framesLate, m.schedWait, m.degraded)
	m.recording = recording.NewMetrics(m.registry)
	m.dialect = newDialectMetrics(m.registry)
	m.registry.MustRegister(m.upstreamConnect, m.upstreamFailures, m.botErrors, m.relayFrame, m.playoutDepth, m.underruns, m.overflows, m.marks, m.bargeIns)
	m.registry.MustRegister(m.activeCalls, m.capacity, m.callSeconds, m.calls, m.framesIn, m.framesOut, m.frameSeconds,
		m.pluginErrors, m.rejected, m.doorRefused, m.malformed, m.pluginEvents, m.emitsDropped, m.instancesLive, m.shed, m.setupWait)
	if own {
		// A program that passes its own Registerer has its own Go and
		// process collectors; registering them twice would panic.
		m.registry.MustRegister(
			// The GC pause histogram lets a load test show the tail has no
			// GC stalls (go_sched_pauses_total_gc_seconds), and the
			// scheduler's histogram of how long runnable goroutines waited
			// for a core (go_sched_latencies_seconds) shows a tail that is
			// CPU queueing.
			collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
				collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sched/(pauses/total/gc|latencies):seconds$`)})),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// frameTimer times one frame in every (and every frame when every is 0)
// for the end-to-end frame histograms (voxhost_frame_processing_seconds,
// voxhost_relay_frame_seconds): reading the clock twice and observing a
// histogram every call shares costs ~120 ns a frame, 0.4% of a frame's
// ~30 µs of server CPU, where one frame in 64 costs ~2 ns. The frames it
// skips are like those it times, as the per-plugin sample's are. The zero
// value times nothing (a call before its stream starts); one goroutine
// uses a frameTimer.
type frameTimer struct {
	every, n uint64
	obs      prometheus.Observer
}

// newFrameTimer times one frame in every; 0 times none.
func newFrameTimer(every int, obs prometheus.Observer) frameTimer {
	return frameTimer{every: uint64(max(every, 0)), obs: obs}
}

// start returns the time a sampled frame starts, and the zero time for
// the others.
func (t *frameTimer) start() time.Time {
	t.n++
	if t.every == 0 || t.n%t.every != 0 {
		return time.Time{}
	}
	return time.Now()
}

// done observes a sampled frame that started at t0.
func (t *frameTimer) done(t0 time.Time) {
	if !t0.IsZero() {
		t.obs.Observe(time.Since(t0).Seconds())
	}
}

// countDroppedEmits adds what the host dropped from p's plugins during a
// call, read once at its end rather than on every drop: the frame path
// touches no metric for it.
func (m *metrics) countDroppedEmits(p *pipeline.Pipeline) {
	p.EachDroppedEmits(func(name string, drops plugin.EmitDrops) {
		for r, n := range drops {
			if n > 0 {
				m.emitsDropped.WithLabelValues(name, plugin.DropReason(r).String()).Add(float64(n))
			}
		}
	})
}

// faultEvent is the event the host sends a client when a plugin fails.
const faultEvent = "plugin_error"

// otherEvent is the label of every event name outside the well-known set.
const otherEvent = "other"

// eventLabel bounds the name label of voxhost_plugin_events_total. A
// plugin may emit any valid name, and every distinct label value is a
// series Prometheus keeps for good: one plugin counting through names
// would grow thousands. So only the names abi defines keep their own
// label, and the rest share "other". A plugin that emits "plugin_error"
// itself is "other" too, so the label only counts the host's fault
// notices.
func eventLabel(name string) string {
	switch name {
	case abi.EmitClear, abi.EmitSpeechStart, abi.EmitSpeechEnd, abi.EmitDTMF:
		return name
	}
	return otherEvent
}
