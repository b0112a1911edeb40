package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/httpguard"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/transport"
)

// Options configures a Server.
type Options struct {
	// Runtime is the plugin runtime the pipelines were loaded into.
	Runtime *plugin.Runtime
	// Routes are the named routes a call may ask for (?pipeline=NAME, or
	// Twilio's custom parameter "pipeline"); EchoRoutes makes them of
	// bare pipelines.
	Routes map[string]*Route
	// DefaultRoute serves calls that name none.
	DefaultRoute string
	// Registerer is where the server's metrics are registered; nil means
	// a registry of the server's own. GET /metrics serves it when it is
	// also a prometheus.Gatherer (a *prometheus.Registry is).
	Registerer prometheus.Registerer
	// MaxCalls caps concurrent calls; further ones get HTTP 503.
	MaxCalls int
	// MaxMessageBytes caps one WebSocket message.
	MaxMessageBytes int
	// MaxFrameMs caps one audio frame, in ms.
	MaxFrameMs int
	// IdleTimeout ends a call that sends no audio for this long.
	IdleTimeout time.Duration
	// DrainTimeout is how long Drain lets active calls finish; 0 means
	// DefaultDrainTimeout, NoDrain cuts them at once.
	DrainTimeout time.Duration
	// ReadyHighWater is the active-call count at which /readyz turns
	// false; 0 means MaxCalls. ReadyLowWater is the count at or below
	// which it turns true again; 0 means 90% of the high-water mark.
	ReadyHighWater, ReadyLowWater int
	// Tokens, when not empty, are the accepted bearer tokens.
	Tokens []string
	// Origins are the browser Origin host patterns allowed; non-browser
	// clients send no Origin and are always allowed.
	Origins []string
	// Logger receives call and plugin logs; nil means slog.Default().
	Logger *slog.Logger
	// HTTP bounds each connection Serve accepts: header, body and idle
	// timeouts, the header size, and the connections of one source
	// address (0 means MaxCalls + 64 here: a carrier or a load balancer
	// may bring every call from one address).
	HTTP httpguard.Limits
	// AllowedHosts are the Host header patterns Serve's listener answers
	// to (httpguard.Hosts): with none, a listener bound to loopback answers
	// loopback names only, others every name.
	AllowedHosts []string

	// CPUHighWater is the share of the process's cores (GOMAXPROCS), from
	// 0 to 1, that its CPU use, averaged over about 150 ms, may
	// reach before the server counts as overloaded: new calls are refused
	// with HTTP 503 before the upgrade and /readyz turns false until the
	// average falls to CPULowWater. Calls already running go on: each one
	// that stays inside its plugins' budgets has a right to finish, and
	// refusing new ones is what gives their frames the CPU back.
	//
	// 0 turns CPU shedding off. That is the default here, because
	// getrusage counts the whole process and a program embedding the
	// server may do other work in it; voxhost serve turns it on
	// (limits.cpu_high_water_percent).
	CPUHighWater float64
	// CPULowWater is the share at or below which an overloaded server
	// takes calls again; 0 means 0.15 below CPUHighWater, but not below
	// half of it.
	CPULowWater float64
	// CPUWaitHighWater is how long goroutines that became runnable may
	// wait for a core (the 90th percentile, averaged as CPU use is) before
	// the server counts as overloaded, as with CPUHighWater. It sees what
	// CPU use cannot: a process that gets fewer cores than GOMAXPROCS
	// because other processes have them (a node without CPU limits, a
	// shared machine). A burst of new calls makes goroutines wait too, so
	// it refuses part of a burst the host could have absorbed: set it
	// where the host shares its cores. 0 turns it off, the default
	// (limits.cpu_wait_high_water in voxhost serve's config).
	CPUWaitHighWater time.Duration
	// CPUWaitLowWater is the wait at or below which an overloaded server
	// takes calls again; 0 means a fifth of CPUWaitHighWater.
	CPUWaitLowWater time.Duration
	// CPUSampler samples the process's CPU; nil means ProcessCPU().
	CPUSampler CPUSampler
	// CPUSampleInterval is how often the CPU is sampled; 0 means
	// DefaultCPUSampleInterval.
	CPUSampleInterval time.Duration

	// MaxSetups caps the call set-ups that run at once. A set-up
	// instantiates a call's pipeline, running each plugin's start
	// function, _initialize and vox_init under the runtime's init budget;
	// with no cap, a burst of new calls could take every core from the
	// calls already running. 0 means DefaultMaxSetups, in one gate shared
	// by every Server of the process that takes the default.
	MaxSetups int
	// SetupWait is how long a new call may wait for a set-up slot before
	// it is refused; 0 means DefaultSetupWait.
	SetupWait time.Duration

	// PlayoutQueue bounds the bot audio a relayed call holds for its
	// caller, in audio time; a bot that sends more is held back (it is
	// not read) until the caller has heard enough, and each time counts
	// as a playout overflow. 0 means DefaultPlayoutQueue.
	PlayoutQueue time.Duration
	// SendAhead is how far ahead of real time the host sends bot audio to
	// a caller whose protocol buffers it (Twilio); callers whose protocol
	// does not (raw) are paced at real time. 0 means DefaultSendAhead;
	// NoSendAhead paces every caller.
	SendAhead time.Duration
	// StallTimeout ends a relayed call whose caller or bot has not taken a
	// message the host is writing to it for this long (a peer that stopped
	// reading); 0 means DefaultStallTimeout.
	StallTimeout time.Duration
	// SampleEvery is how often a call's frame is timed plugin by plugin
	// (voxhost_plugin_frame_seconds, Calls) and end to end
	// (voxhost_frame_processing_seconds, voxhost_relay_frame_seconds): one
	// frame in SampleEvery. 0 means DefaultSampleEvery; NoSampling turns
	// the per-plugin timing off and times every frame end to end.
	SampleEvery int

	// PluginSlots is how many calls may run plugin code at once (the
	// scheduler's slots); 0 means GOMAXPROCS.
	PluginSlots int
	// CallCPUShare is the most of one core a call's plugins may use over
	// the scheduler's window (sched.Window) before its route's over_quota
	// policy degrades or ends it; 0 means DefaultCallCPUShare.
	CallCPUShare float64
	// FrameDeadline is how long after a caller's frame was read its
	// answer is due: what orders the scheduler's queue and what
	// voxhost_frames_late_total counts against; 0 means
	// DefaultFrameDeadline.
	FrameDeadline time.Duration
	// CallCostPrior is the CPU, in cores, admission assumes a call costs
	// the host outside its plugins until enough calls ran to measure it;
	// 0 means DefaultCallCostPrior. Admission is on when CPUHighWater is.
	CallCostPrior float64
}

// Defaults for the zero values of Options.
const (
	DefaultMaxCalls        = 1000
	DefaultMaxMessageBytes = 64 << 10
	DefaultMaxFrameMs      = 100
	DefaultIdleTimeout     = 10 * time.Second
	DefaultDrainTimeout    = 30 * time.Second
	DefaultPlayoutQueue    = 20 * time.Second
	DefaultSendAhead       = 200 * time.Millisecond
	DefaultStallTimeout    = 5 * time.Second
	// NoSendAhead as Options.SendAhead paces callers that buffer too.
	NoSendAhead time.Duration = -1
	// DefaultSampleEvery times one frame in 64: a 4-plugin call reads the
	// clock five times every 64 frames, about 2 ns a frame on average —
	// within the noise of BenchmarkSampledTiming's 155 ns for four
	// passthrough hops, and 0.05% of the stock DSP chain's 5.6 µs.
	DefaultSampleEvery = 64
	// NoSampling as Options.SampleEvery times no frame.
	NoSampling = -1
	// NoDrain as Options.DrainTimeout closes active calls as soon as a
	// drain starts (a configured drain_timeout of 0).
	NoDrain time.Duration = -1
	// overloadRetryAfter is the Retry-After of a call refused for CPU, in
	// seconds: the load that passed the mark is the running calls', and
	// those end in their own time, so a client asking again within a
	// second would most likely be refused again.
	overloadRetryAfter = "2"
)

// Server accepts calls and runs them. Create it with New.
type Server struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	mux     *http.ServeMux
	// callPaths are the paths of the calls' endpoints, which the door
	// refuses while admission is shut (door.go).
	callPaths map[string]bool

	active   atomic.Int64
	draining atomic.Bool
	// doorHeld counts the calls the door let through whose requests
	// net/http has not read yet (door.go).
	doorHeld atomic.Int64
	// full is the readiness hysteresis: set at the high-water mark,
	// cleared at the low-water mark.
	full   atomic.Bool
	routes atomic.Pointer[routeSet]
	nextID atomic.Uint64
	// cpu is nil when overload shedding is off.
	cpu *cpuMonitor
	// setups bounds the call set-ups that run at once.
	setups *setupGate
	// rt schedules plugin work and prices calls for admission.
	rt *realtime

	// recordingDirs holds the directory of every route whose calls
	// recorded (RecordingDirs).
	recordingDirs sync.Map
	// taps counts the call feeds open (Tap), bounded by MaxTaps.
	taps atomic.Int64

	mu    sync.Mutex
	calls map[*call]struct{}
	idle  chan struct{} // closed and replaced when the last call ends
}

// New checks the options and makes a server. Each pipeline is instantiated
// once here, so a plugin that rejects its config or a chain that does not
// end at 8 kHz fails at start-up, not on the first call.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Runtime == nil {
		return nil, errors.New("server: no plugin runtime")
	}
	setDefault(&opts.MaxCalls, DefaultMaxCalls)
	setDefault(&opts.MaxMessageBytes, DefaultMaxMessageBytes)
	setDefault(&opts.MaxFrameMs, DefaultMaxFrameMs)
	setDefault(&opts.IdleTimeout, DefaultIdleTimeout)
	setDefault(&opts.DrainTimeout, DefaultDrainTimeout)
	opts.DrainTimeout = max(opts.DrainTimeout, 0)
	setDefault(&opts.HTTP.MaxConnsPerIP, opts.MaxCalls+64)
	setDefault(&opts.ReadyHighWater, opts.MaxCalls)
	setDefault(&opts.ReadyLowWater, opts.ReadyHighWater*9/10)
	if opts.ReadyLowWater >= opts.ReadyHighWater || opts.ReadyHighWater > opts.MaxCalls {
		return nil, fmt.Errorf("server: readiness marks must satisfy low (%d) < high (%d) <= max calls (%d)", opts.ReadyLowWater, opts.ReadyHighWater, opts.MaxCalls)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CPUHighWater < 0 || opts.CPUHighWater > 1 || opts.CPULowWater < 0 || opts.CPUHighWater > 0 && opts.CPULowWater >= opts.CPUHighWater {
		return nil, fmt.Errorf("server: CPU marks must satisfy 0 <= low (%g) < high (%g) <= 1", opts.CPULowWater, opts.CPUHighWater)
	}
	if opts.CPUWaitHighWater < 0 || opts.CPUWaitLowWater < 0 || opts.CPUWaitHighWater > 0 && opts.CPUWaitLowWater >= opts.CPUWaitHighWater {
		return nil, fmt.Errorf("server: CPU wait marks must satisfy 0 <= low (%v) < high (%v)", opts.CPUWaitLowWater, opts.CPUWaitHighWater)
	}
	setDefault(&opts.CPULowWater, max(opts.CPUHighWater-0.15, opts.CPUHighWater/2))
	setDefault(&opts.CPUWaitLowWater, opts.CPUWaitHighWater/5)
	if opts.CPUSampler == nil {
		opts.CPUSampler = ProcessCPU()
	}
	setDefault(&opts.CPUSampleInterval, DefaultCPUSampleInterval)
	setDefault(&opts.SetupWait, DefaultSetupWait)
	setDefault(&opts.PlayoutQueue, DefaultPlayoutQueue)
	setDefault(&opts.SendAhead, DefaultSendAhead)
	opts.SendAhead = max(opts.SendAhead, 0)
	setDefault(&opts.StallTimeout, DefaultStallTimeout)
	setDefault(&opts.SampleEvery, DefaultSampleEvery)
	opts.SampleEvery = max(opts.SampleEvery, 0)
	setDefault(&opts.CallCPUShare, DefaultCallCPUShare)
	setDefault(&opts.FrameDeadline, DefaultFrameDeadline)
	setDefault(&opts.CallCostPrior, DefaultCallCostPrior)
	if opts.CallCPUShare < 0 || opts.CallCPUShare > 1 || opts.PluginSlots < 0 || opts.FrameDeadline < 0 || opts.CallCostPrior < 0 {
		return nil, fmt.Errorf("server: call CPU share (%g) must be in 0..1, plugin slots (%d), frame deadline (%v) and call cost prior (%g) not negative",
			opts.CallCPUShare, opts.PluginSlots, opts.FrameDeadline, opts.CallCostPrior)
	}
	if opts.MaxSetups < 0 || opts.SetupWait < 0 {
		return nil, fmt.Errorf("server: max set-ups (%d) and set-up wait (%v) must not be negative", opts.MaxSetups, opts.SetupWait)
	}
	s := &Server{
		opts:   opts,
		log:    opts.Logger,
		calls:  map[*call]struct{}{},
		idle:   make(chan struct{}),
		setups: processSetups(),
	}
	if opts.MaxSetups > 0 {
		s.setups = newSetupGate(opts.MaxSetups)
	}
	if err := s.SetRoutes(ctx, opts.Routes, opts.DefaultRoute); err != nil {
		return nil, err
	}
	s.metrics = newMetrics(opts.Registerer, func() float64 { return float64(opts.Runtime.LiveInstances()) })
	s.rt = newRealtime(opts, s.metrics)
	s.rt.price(s.routes.Load().warm)
	// Readiness as a series too: a pod that is full (or draining) drops
	// out of its Service, and dashboards should show why.
	s.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "voxhost_ready", Help: "1 while /readyz answers 200: not draining, below the high-water mark and not overloaded.",
	}, func() float64 {
		if s.draining.Load() || s.atCapacity() || s.overloaded() {
			return 0
		}
		return 1
	}), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "voxhost_overloaded", Help: "1 while new calls are refused because the process's CPU use or its goroutines' wait for a core passed its mark.",
	}, func() float64 {
		if s.overloaded() {
			return 1
		}
		return 0
	}))
	s.metrics.capacity.Set(float64(opts.MaxCalls))
	if opts.CPUHighWater > 0 || opts.CPUWaitHighWater > 0 {
		m := newCPUMonitor(opts.CPUSampler, opts.CPUSampleInterval, s.log)
		m.use.high, m.use.low = opts.CPUHighWater, opts.CPULowWater
		m.wait.high, m.wait.low = opts.CPUWaitHighWater.Seconds(), opts.CPUWaitLowWater.Seconds()
		s.cpu = m
		m.onSample = func(used, wall time.Duration) {
			s.rt.sample(used, wall, s.active.Load())
			s.shedLate()
		}
		s.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voxhost_cpu_utilization",
			Help: "The process's CPU use as a share of its GOMAXPROCS cores (0-1), averaged over about 150 ms: what overload shedding compares with cpu_high_water_percent.",
		}, m.use.average), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voxhost_cpu_wait_seconds",
			Help: "How long goroutines that became runnable waited for a core (90th percentile), averaged over about 150 ms: what overload shedding compares with cpu_wait_high_water.",
		}, m.wait.average))
		go m.run()
	}
	s.mux = http.NewServeMux()
	s.callPaths = map[string]bool{}
	for _, p := range transport.Protocols() {
		if p.Path() != "" { // a protocol of its own TCP listener (ServeStream)
			s.mux.Handle("GET "+p.Path(), s.CallHandler(p))
			s.callPaths[p.Path()] = true
		}
	}
	if s.metrics.gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.gatherer, promhttp.HandlerOpts{
			// One collector that cannot read (a sandbox hiding /proc/stat)
			// must not turn every other series into an HTTP 500.
			ErrorHandling: promhttp.ContinueOnError,
		}))
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.mux.HandleFunc("GET /readyz", s.handleReady)
	return s, nil
}

// routeSet is the named routes calls may ask for. It is replaced whole
// when an operator reloads them; a call keeps the route it started with,
// so calls in flight never see a change.
type routeSet struct {
	byName      map[string]*Route
	defaultName string
	// unfit says, per route and caller rate, why the route cannot take
	// a call at that rate; a rate it takes has no entry.
	unfit map[string]map[int]error
	// warm is what each route's plugins cost one call warm, in cores,
	// measured as the route was set (warmCost): admission's price for
	// them until its calls are measured.
	warm map[string]float64
}

// SetRoutes replaces the routes new calls may ask for. Each pipeline is
// instantiated once first, so a plugin that rejects its config or a chain
// whose rates do not meet is refused here and the previous set stays.
func (s *Server) SetRoutes(ctx context.Context, routes map[string]*Route, defaultName string) error {
	if len(routes) == 0 {
		return errors.New("server: no routes")
	}
	if _, ok := routes[defaultName]; !ok {
		return fmt.Errorf("server: default pipeline %q is not defined (have %s)", defaultName, strings.Join(routeNames(routes), ", "))
	}
	unfit := map[string]map[int]error{}
	warm := map[string]float64{}
	for _, name := range routeNames(routes) {
		r := routes[name]
		if r.Name == "" {
			r.Name = name
		}
		if err := r.check(); err != nil {
			return err
		}
		// A caller leg carries 8 kHz (G.711, most carriers) or L16 at 16 or
		// 24 kHz; a route's stages decide which they can take, so each is
		// tried, and a route that takes none is refused.
		for _, rate := range codec.L16Rates {
			cost, err := s.checkRates(ctx, r, rate, rate == codec.Telephony.Rate)
			if err == nil && rate == codec.Telephony.Rate {
				warm[name] = cost
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				if unfit[name] == nil {
					unfit[name] = map[int]error{}
				}
				unfit[name][rate] = err
			}
		}
		if len(unfit[name]) == len(codec.L16Rates) {
			return unfit[name][codec.Telephony.Rate]
		}
	}
	s.routes.Store(&routeSet{byName: maps.Clone(routes), defaultName: defaultName, unfit: unfit, warm: warm})
	if s.rt != nil {
		s.rt.price(warm)
	}
	for _, name := range routeNames(routes) {
		s.logRouteRates(name, unfit[name], warm[name])
	}
	return nil
}

// checkRates instantiates a route's pipelines once for a caller leg at
// rate, each pipeline from the rate it will be fed at, and checks that
// they end where their audio goes: the inbound pipeline at the bot leg's
// rate (an echo's: where the outbound starts), the outbound at the
// caller's. With price, it also returns what the pipelines cost a call
// warm, in cores (warmCost): what admission prices the route's calls at
// until they are measured. It is measured for G.711's rate, most calls'.
func (s *Server) checkRates(ctx context.Context, r *Route, rate int, price bool) (float64, error) {
	said := &trialLog{}
	cost := 0.0
	trial := func(d *pipeline.Definition, rate int) (int, error) {
		// A trial set-up costs what a call's does, and a reload runs
		// beside calls: it takes its turn at the gate.
		if !s.setups.acquire(0, ctx.Done()) {
			return 0, ctx.Err()
		}
		defer s.setups.release()
		p, err := d.Instantiate(ctx, pipeline.CallConfig{InputRate: rate, MaxFrameMs: s.opts.MaxFrameMs, Logger: slog.New(said)})
		if err != nil {
			return 0, said.explain(err)
		}
		defer p.Close(ctx)
		if price {
			cost += warmCost(p, rate)
		}
		return p.OutputRate(), nil
	}
	in, err := trial(r.Inbound, rate)
	if err != nil {
		return 0, err
	}
	u := r.Upstream
	if u != nil && in != u.Format.Rate {
		return 0, fmt.Errorf("pipeline %s: for a caller at %d Hz the inbound stages end at %d Hz, but the bot leg (%s, %s) carries %d Hz: end them with a resampler to %d Hz", r.Name, rate, in, u.Dialect.Name(), u.Format, u.Format.Rate, u.Format.Rate)
	}
	out := in
	if r.Outbound != nil {
		if out, err = trial(r.Outbound, in); err != nil {
			return 0, err
		}
	}
	if out != rate {
		what := "the inbound stages end"
		switch {
		case r.Outbound != nil:
			what = "the outbound stages end"
		case u != nil:
			what = fmt.Sprintf("the bot leg carries %s and the route has no outbound stages: it", u.Format)
		}
		return 0, fmt.Errorf("pipeline %s: %s at %d Hz, but the caller hears %d Hz: end them with a resampler to %d Hz", r.Name, what, out, rate, rate)
	}
	return cost, nil
}

// Routes returns the names of the routes new calls may ask for, and the
// default.
func (s *Server) Routes() (names []string, defaultName string) {
	set := s.routes.Load()
	return routeNames(set.byName), set.defaultName
}

// RouteRates returns the caller rates, in Hz, that the route named name
// ("" for the default) takes calls at, ascending, and whether it exists:
// what a client that can send several picks from.
func (s *Server) RouteRates(name string) ([]int, bool) {
	var rates []int
	for _, rate := range codec.L16Rates {
		r, unfit := s.route(name, rate)
		if r == nil {
			return nil, false
		}
		if unfit == nil {
			rates = append(rates, rate)
		}
	}
	return rates, true
}

// route returns the route named name, or the default for "" (nil if there
// is none), and why it cannot take a caller at rate (nil if it can).
func (s *Server) route(name string, rate int) (*Route, error) {
	set := s.routes.Load()
	if name == "" {
		name = set.defaultName
	}
	return set.byName[name], set.unfit[name][rate]
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func routeNames(m map[string]*Route) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Handle mounts handler at pattern on the server's own mux, beside its
// endpoints, so that Serve serves it too (voxhost serve's console: true).
// It panics, as http.ServeMux does, on a pattern that conflicts.
func (s *Server) Handle(pattern string, handler http.Handler) { s.mux.Handle(pattern, handler) }

// Handler serves the server's endpoints.
func (s *Server) Handler() http.Handler { return s.mux }

// Registry is where the server's metrics are registered, so that what runs
// beside it (the admin API) can add its own to GET /metrics.
func (s *Server) Registry() prometheus.Registerer { return s.metrics.registry }

// ActiveCalls counts the calls in progress.
func (s *Server) ActiveCalls() int { return int(s.active.Load()) }

func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	switch {
	case s.draining.Load():
		http.Error(w, "draining", http.StatusServiceUnavailable)
	case s.atCapacity():
		http.Error(w, fmt.Sprintf("at capacity: %d active calls (ready again at %d)", s.active.Load(), s.opts.ReadyLowWater), http.StatusServiceUnavailable)
	case s.overloaded():
		http.Error(w, s.cpu.reason()+" ("+s.cpu.recovery()+")", http.StatusServiceUnavailable)
	default:
		fmt.Fprintln(w, "ready")
	}
}

// atCapacity applies the readiness hysteresis to the active-call count.
func (s *Server) atCapacity() bool {
	active := s.active.Load()
	switch {
	case active >= int64(s.opts.ReadyHighWater):
		s.full.Store(true)
	case active <= int64(s.opts.ReadyLowWater):
		s.full.Store(false)
	}
	return s.full.Load()
}

// overloaded says whether the process's CPU is past its marks.
func (s *Server) overloaded() bool { return s.cpu != nil && s.cpu.overloaded() }

// reject refuses a connection before the upgrade, with a reason for the
// client and a count for the operator. The connection is closed after the
// answer: a client that came for a call has nothing else to ask, and a
// surge's refused connections, kept alive, would hold goroutines and
// buffers for the idle timeout and fill http.max_conns_per_ip, so that
// the callers after them were cut off unanswered (372 of a surge of
// 1,440 from one address).
func (s *Server) reject(w http.ResponseWriter, status int, reason, msg string) {
	s.metrics.rejected.WithLabelValues(reason).Inc()
	w.Header().Set("Connection", "close")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="voxhost"`)
	}
	http.Error(w, msg, status)
}

// authorized checks the bearer token in the header or the token query
// parameter, in constant time.
func (s *Server) authorized(r *http.Request) bool {
	if len(s.opts.Tokens) == 0 {
		return true
	}
	token := r.URL.Query().Get("token")
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			token = strings.TrimSpace(rest)
		}
	}
	ok := false
	for _, t := range s.opts.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			ok = true
		}
	}
	return ok
}

// admit reserves a call slot for a call of route (""; the default), or
// says why not: "draining", "capacity", "overloaded" (the CPU marks; see
// cpu.reason) or shedPredicted (admission by measured cost; msg says why).
func (s *Server) admit(route string) (why, msg string, ok bool) {
	if why, msg, refused := s.refusal(route, 0); refused {
		return why, msg, false
	}
	if s.active.Add(1) > int64(s.opts.MaxCalls) {
		s.active.Add(-1)
		return "capacity", capacityRefusal, false
	}
	s.metrics.activeCalls.Inc()
	return "", "", true
}

// refusal says why a call of route would be refused now, as admit does,
// without reserving anything, with held more calls than are active (the
// door's; door.go) priced as calls of the default route; the refusals for
// CPU are counted in voxhost_calls_shed_total here.
func (s *Server) refusal(route string, held int64) (why, msg string, refused bool) {
	if s.draining.Load() {
		return "draining", "draining: the server is shutting down", true
	}
	if s.overloaded() {
		s.metrics.shed.WithLabelValues(s.cpu.shedReason()).Inc()
		return "overloaded", s.cpu.reason() + "; try another host", true
	}
	// Admission reads the count and then adds one: calls arriving at
	// once may each see room for one more, so a burst can pass the mark
	// by the number of handlers that run at that moment (about the cores).
	if msg, fits := s.admits(route, held); !fits {
		s.metrics.shed.WithLabelValues(shedPredicted).Inc()
		return shedPredicted, msg + "; try another host", true
	}
	return "", "", false
}

// capacityRefusal is what a caller refused for limits.max_calls is told.
const capacityRefusal = "at capacity: too many concurrent calls"

// retryAfter is the Retry-After of a call refused for why.
func retryAfter(why string) string {
	if why == "overloaded" || why == shedPredicted {
		return overloadRetryAfter
	}
	return "1"
}

// CallHandler serves the calls of one protocol: the WebSocket upgrade,
// admission (auth, capacity, overload, drain) and the call itself. Handler
// mounts one per protocol; a program with a mux of its own may mount them
// where it likes.
func (s *Server) CallHandler(proto transport.Protocol) http.Handler {
	return s.handleCall(proto)
}

func (s *Server) handleCall(proto transport.Protocol) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			s.reject(w, http.StatusUnauthorized, "auth", "missing or wrong token: send Authorization: Bearer TOKEN or ?token=TOKEN")
			return
		}
		// Query parameters the call keeps (call_id names it in every log
		// line) or echoes (an unknown pipeline) are bounded first.
		query := r.URL.Query()
		if err := transport.CheckID("call_id", query.Get("call_id")); err != nil {
			s.reject(w, http.StatusBadRequest, "bad_query", err.Error())
			return
		}
		name := query.Get("pipeline")
		if err := transport.CheckPipelineName("pipeline", name); err != nil {
			s.reject(w, http.StatusBadRequest, "bad_query", err.Error())
			return
		}
		if proto.StartsOnConnect() {
			// A protocol without a start message carries the call's custom
			// parameters in its URL; the call keeps them.
			if err := transport.CheckParams("query", queryParams(query)); err != nil {
				s.reject(w, http.StatusBadRequest, "bad_query", err.Error())
				return
			}
		}
		if name != "" {
			if set := s.routes.Load(); set.byName[name] == nil {
				s.reject(w, http.StatusNotFound, "unknown_pipeline", fmt.Sprintf("unknown pipeline %q (have %s)", name, strings.Join(routeNames(set.byName), ", ")))
				return
			}
		}
		if why, msg, ok := s.admit(name); !ok {
			w.Header().Set("Retry-After", retryAfter(why))
			s.reject(w, http.StatusServiceUnavailable, why, msg)
			return
		}
		// Until the call's goroutine owns them, the call slot and the
		// set-up slot are given back here.
		var c *call
		handedOver := false
		defer func() {
			if handedOver {
				return
			}
			if c != nil {
				c.releaseSetup()
			}
			s.release()
		}()
		c, err := s.newCall(proto, name, query, r.RemoteAddr)
		if err != nil {
			s.reject(w, http.StatusBadRequest, "bad_query", err.Error())
			return
		}
		if proto.StartsOnConnect() {
			// The pipeline starts at connect: its set-up slot is taken
			// before the upgrade, where a refusal is still an HTTP 503 that
			// a client or balancer can retry elsewhere.
			if !c.awaitSetup(r.Context().Done()) {
				if r.Context().Err() != nil {
					return // the client gave up waiting
				}
				s.metrics.shed.WithLabelValues(shedSetup).Inc()
				w.Header().Set("Retry-After", "1")
				s.reject(w, http.StatusServiceUnavailable, shedSetup, s.setupRefusal())
				return
			}
		}
		conn, err := websocket.Accept(leanHijack{w}, r, &websocket.AcceptOptions{
			Subprotocols:       transport.SubprotocolsOf(proto),
			OriginPatterns:     s.opts.Origins,
			InsecureSkipVerify: slices.Contains(s.opts.Origins, "*"),
		})
		if err != nil {
			s.metrics.rejected.WithLabelValues("upgrade").Inc()
			s.log.Info("websocket upgrade refused", "remote", r.RemoteAddr, "err", err)
			return
		}
		// One byte more than the limit lets the call loop tell an oversize
		// message from one that fills the limit exactly.
		conn.SetReadLimit(int64(s.opts.MaxMessageBytes) + 1)
		c.conn = wsConn{conn}
		// The call runs on a goroutine of its own and the handler returns:
		// net/http then lets go of what it keeps for a request as long as
		// its handler runs (its 4 KiB writer, the response's 2 KiB one, the
		// request and its headers) and of the goroutine's stack, which the
		// HTTP parsing grew; coder/websocket holds the hijacked connection.
		// RATIONALE.md, "Density".
		handedOver = true
		go func() {
			defer s.release()
			defer c.releaseSetup()
			s.serve(c)
		}()
	}
}

// release gives back the call slot admit reserved.
func (s *Server) release() {
	s.metrics.activeCalls.Dec()
	if s.active.Add(-1) == 0 {
		s.mu.Lock()
		close(s.idle)
		s.idle = make(chan struct{})
		s.mu.Unlock()
	}
}

// serve runs a call whose connection is up, where a drain can find it.
func (s *Server) serve(c *call) {
	s.track(c, true)
	c.run()
	s.track(c, false)
}

func (s *Server) track(c *call, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		s.calls[c] = struct{}{}
	} else {
		delete(s.calls, c)
	}
}

// DrainResult says how a drain went.
type DrainResult struct {
	// Finished counts the calls that ended by themselves during the drain.
	Finished int
	// Cut counts the calls still running at the deadline, closed with a
	// going-away code.
	Cut int
}

// Drain stops accepting calls, marks the server not ready, lets active
// calls finish for up to the drain timeout (or until ctx ends), then ends
// the rest with a going-away close.
func (s *Server) Drain(ctx context.Context) DrainResult {
	s.draining.Store(true)
	atStart := int(s.active.Load())
	deadline := time.NewTimer(s.opts.DrainTimeout)
	defer deadline.Stop()
wait:
	for s.active.Load() > 0 {
		s.mu.Lock()
		idle := s.idle
		s.mu.Unlock()
		if s.active.Load() == 0 {
			break
		}
		select {
		case <-idle:
		case <-deadline.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	s.mu.Lock()
	remaining := make([]*call, 0, len(s.calls))
	for c := range s.calls {
		remaining = append(remaining, c)
	}
	s.mu.Unlock()
	if len(remaining) > 0 {
		s.log.Info("drain timeout: ending calls", "calls", len(remaining))
	}
	for _, c := range remaining {
		c.end(websocket.StatusGoingAway, "server shutting down", "drained")
	}
	for s.active.Load() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	return DrainResult{Finished: max(atStart-len(remaining), 0), Cut: len(remaining)}
}

// Close stops the server's background work (the CPU sampling). Serve
// closes the server when it returns; a program that mounts Handler on
// its own mux calls Close after Drain.
func (s *Server) Close() {
	if s.cpu != nil {
		s.cpu.close()
	}
}

// Serve accepts connections on l until ctx ends, then drains, shuts the
// HTTP server down and closes the server. It puts httpguard in front of
// the endpoints: Options.HTTP's timeouts and caps, the Host check against
// Options.AllowedHosts and l's address, and the refusal of cross-origin
// state changes. Handler has none of them: a program that mounts it
// brings its own.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	// The door comes before the cap on a source's connections: a surge's
	// refused connections are closed at once and never hold a place under it.
	l = httpguard.Door(l, s.doorJudge)
	l = s.opts.HTTP.Listener(l, func(net.Addr) { s.metrics.rejected.WithLabelValues("conns_per_ip").Inc() })
	// The Host check comes first: a rebound name must not reach even the
	// page of the console. Calls are GETs, which SameOrigin lets through;
	// coder/websocket checks their Origin.
	h := httpguard.Hosts(s.opts.AllowedHosts, l.Addr(), "allowed_hosts",
		func() { s.metrics.rejected.WithLabelValues("host").Inc() }, httpguard.SameOrigin(s.mux))
	hs := s.opts.HTTP.Server(h, slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	hs.ConnState = s.doorLet
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("draining", "active_calls", s.ActiveCalls(), "timeout", s.opts.DrainTimeout)
	res := s.Drain(context.Background())
	s.log.Info("drained", "finished", res.Finished, "cut", res.Cut)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(shutdownCtx)
	<-errc
	s.Close()
	return err
}
