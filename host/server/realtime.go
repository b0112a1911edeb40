package server

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/sched"
)

// Real time between calls (RATIONALE.md, "Real time between calls"): every
// call into a plugin runs in a slot of the server's scheduler, earliest
// deadline first, with the call's CPU time accounted; a call past its quota
// is degraded by its route's policy; a new call is admitted only while the
// calls admitted are predicted to fit; and when the calls admitted no
// longer fit (their plugins got heavier), the costliest are shed.

// QuotaPolicy is what a route does to a call whose plugins use more than
// Options.CallCPUShare of a core.
type QuotaPolicy int

const (
	// QuotaBypass bypasses the call's costliest stage (the one whose
	// sampled frames took longest), one at a time, and ends the call when
	// none is left that can be bypassed.
	QuotaBypass QuotaPolicy = iota
	// QuotaEndCall ends the call, with the reason in the close frame.
	QuotaEndCall
)

// ParseQuotaPolicy reads a policy as configs spell it ("bypass_costliest",
// "end_call").
func ParseQuotaPolicy(s string) (QuotaPolicy, error) {
	switch s {
	case "", "bypass_costliest":
		return QuotaBypass, nil
	case "end_call":
		return QuotaEndCall, nil
	}
	return 0, fmt.Errorf("unknown over_quota policy %q (want bypass_costliest or end_call)", s)
}

// Defaults of the real-time options.
const (
	// DefaultCallCPUShare lets a call's plugins use half of one core over
	// the scheduler's window: 10 ms of every 20 ms frame, two default
	// budgets' worth. The stock DSP chain uses 0.03%.
	DefaultCallCPUShare = 0.5
	// DefaultFrameDeadline is how long after a caller's frame was read its
	// answer may go out: one frame time.
	DefaultFrameDeadline = 20 * time.Millisecond
	// DefaultCallCostPrior is the CPU the host spends on a call outside
	// its plugins (socket, codec, scheduling), in cores: what a raw call
	// of 20 ms frames cost on one core of this project's 2-vCPU machines,
	// measured on a quiet box at 367 and 420 steady default-pipeline
	// calls (0.00107 and 0.00129). It is what admission assumes until 16
	// calls run, and the floor of what it measures after: a slower
	// machine measures more. A surge is admitted on it and the route's
	// warm cost alone, before anything is measured: at 0.0012 a surge of
	// 1,440 let up to 425 calls in, and those above ~400 were late (p99
	// 21-28 ms); at 0.00125, 372-420 and p99 6.7-24 ms; at 0.0013,
	// 349-413 and 3.5-15 ms, where the core serves ~480 on time without
	// a surge (BENCHMARKS.md, "Admission priced by the route's warm
	// cost").
	DefaultCallCostPrior = 0.00125
	// measureCalls is how many calls must run before the host's cost per
	// call is measured rather than assumed: with fewer, the process's own
	// idle work (metrics, GC) would be charged to too few calls.
	measureCalls = 16
	// shedLateShare is the share of a sample interval's frames that may be
	// late before the costliest call is degraded; shedLateFrames the
	// fewest frames an interval must have to judge by, and shedLateStreak
	// how many intervals in a row must be late (300 ms at the default
	// interval): a stray late frame, a garbage collection or one slow
	// interval of a shared machine is not the calls' doing.
	shedLateShare  = 0.01
	shedLateFrames = 5
	// admitLateFrames is shedLateFrames for admission, which refuses
	// calls while frames are late: more, since refusing a call is a
	// decision about every caller, and a test box's stray late frames
	// beside a few calls must not turn callers away.
	admitLateFrames = 50
	shedLateStreak  = 3
	// The call shed for late frames must use more than its fair share,
	// and at least shedMinUse of a core: 5%, a millisecond of plugin time
	// in every 20 ms frame, 150 times the stock chain's. Passthrough calls on an overloaded machine (a busy box, the
	// race detector) are admission's to bound, not a reason to cut one of
	// them (100 of them were cut one by one in TestReplaceUnderLoad).
	shedMinUse = 0.05
)

// Reasons a call is shed or degraded, as voxhost_calls_shed_total counts
// them.
const (
	// shedPredicted: admitting the call would take the predicted CPU of
	// the admitted calls past the high-water mark.
	shedPredicted = "predicted_cpu"
	// shedQuota: the call's plugins used more than its CPU quota.
	shedQuota = "cpu_quota"
	// shedLate: frames were late and this was the costliest call.
	shedLate = "late_frames"
)

// realtime is a server's share of the cores between its calls.
type realtime struct {
	sched    *sched.Scheduler
	quota    float64
	deadline time.Duration
	// late counts frames answered after their deadline, by direction,
	// and frames the count of late ones is over, for shedding.
	lateIn, lateOut prometheus.Counter
	late, frames    atomic.Int64
	// lateStreak counts the sample intervals in a row with late frames
	// and plugin work that waited for a slot; contended is the
	// scheduler's count of waits at the last look. The sampler alone
	// touches them.
	lateStreak int
	contended  int64
	// lateNow is set while, for shedLateStreak intervals in a row, more
	// than shedLateShare of at least admitLateFrames frames were late:
	// admission refuses new calls then, whatever it predicts; lateCount
	// counts that streak.
	lateNow   atomic.Bool
	lateCount int

	mu     sync.Mutex
	routes map[string]*routeCost
	// priors are the routes' prices before their calls are measured
	// (price); a route without one is priced at prior.
	priors map[string]float64
	// perCall is what the host spends on a call outside its plugins
	// (socket, codec, scheduling), in cores: a moving average of the
	// measured, math.Float64bits; prior until measureCalls run.
	perCall atomic.Uint64
	prior   float64
	// lastActive is the calls admitted at the last sample.
	lastActive int64
	// live counts the calls whose route is known; the rest of s.active
	// are priced as calls of the default route.
	live atomic.Int64
}

// routeCost is what one route's calls cost: their plugin CPU, measured
// per call over each sample interval.
type routeCost struct {
	calls  atomic.Int64
	cpuNs  atomic.Int64
	lastNs int64
	// lastCalls is calls at the last sample.
	lastCalls int64
	perCall   atomic.Uint64 // cores per call, math.Float64bits
}

func newRealtime(opts Options, m *metrics) *realtime {
	rt := &realtime{
		quota:    opts.CallCPUShare,
		deadline: opts.FrameDeadline,
		prior:    opts.CallCostPrior,
		routes:   map[string]*routeCost{},
		lateIn:   m.framesLate.WithLabelValues(DirectionInbound),
		lateOut:  m.framesLate.WithLabelValues(DirectionOutbound),
	}
	rt.perCall.Store(math.Float64bits(opts.CallCostPrior))
	wait := m.schedWait
	// A call is measured in thread CPU time well before its quota: what
	// wall time charged is emptied from its window then, and it must not
	// be what ends a call.
	rt.sched = sched.New(sched.Options{Slots: opts.PluginSlots, MeasureAbove: min(sched.DefaultMeasureAbove, opts.CallCPUShare/2),
		OnWait: func(d time.Duration) {
			if d > 0 {
				wait.Observe(d.Seconds())
			}
		}})
	m.registry.MustRegister(rt)
	return rt
}

// callCPUDesc is voxhost_call_cpu_seconds, which realtime collects from its
// route records: the CPU a frame charged is counted once, in cpuNs.
var callCPUDesc = prometheus.NewDesc("voxhost_call_cpu_seconds",
	"Thread CPU time calls spent in their plugins, by route: what admission predicts a new call of the route costs from.",
	[]string{"route"}, nil)

// Describe implements prometheus.Collector.
func (rt *realtime) Describe(ch chan<- *prometheus.Desc) { ch <- callCPUDesc }

// Collect implements prometheus.Collector.
func (rt *realtime) Collect(ch chan<- prometheus.Metric) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for name, rc := range rt.routes {
		ch <- prometheus.MustNewConstMetric(callCPUDesc, prometheus.CounterValue, float64(rc.cpuNs.Load())/1e9, name)
	}
}

// cost is the route's cost record, made on first use.
func (rt *realtime) cost(name string) *routeCost {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rc := rt.routes[name]
	if rc == nil {
		// Until its calls are measured, a route's plugins are priced at
		// what they cost warm among many calls (price), or, for a route
		// not priced, as the host's part is: a route nobody has called
		// yet must not cost nothing, or a burst into it would all be let
		// in (1,440 calls at once: 831 admitted, p50 47 ms).
		rc = &routeCost{}
		prior, ok := rt.priors[name]
		if !ok {
			prior = rt.prior
		}
		rc.perCall.Store(math.Float64bits(prior))
		rt.routes[name] = rc
	}
	return rc
}

// price takes what each route's plugins cost one call warm, in cores
// (warmCost, as the routes were set), as the price of their calls until
// they are measured: warm times atScale, since among many calls their
// code and state are out of the caches at each frame. A route with
// calls keeps what its calls measured; a reload changes its price when
// the sampler measures the new plugins.
func (rt *realtime) price(warm map[string]float64) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.priors == nil {
		rt.priors = map[string]float64{}
	}
	for name, cores := range warm {
		prior := cores * atScale
		rt.priors[name] = prior
		if rc := rt.routes[name]; rc != nil && rc.calls.Load() == 0 && rc.lastNs == 0 {
			rc.perCall.Store(math.Float64bits(prior))
		}
	}
}

// The warm measure of a route's plugins (warmCost).
const (
	// warmPasses of warmFrames frames of synthetic audio are timed, after
	// warmUpFrames untimed (the first frames of an instance touch its
	// memory for the first time); the fastest pass is the warm cost, what
	// the plugins cost when nothing else takes the core from them.
	warmPasses, warmFrames, warmUpFrames = 8, 10, 25
	// warmCPU bounds the time it may take: a plugin that uses its whole
	// budget every frame is priced from the frames that fit.
	warmCPU = 50 * time.Millisecond
	// atScale is what a route's plugins cost at each frame among many
	// calls over their warm cost here: their code and state are out of
	// the caches at each frame. The default chain, 420 calls on one core:
	// 17.2 µs a frame measured by the sampler against 13.7-16.8 warm
	// (BENCHMARKS.md, "Admission priced by the route's warm cost").
	atScale = 1.15
)

// warmCost runs p, a pipeline fed at rate, on frames of synthetic speech
// (noise in syllable-long bursts and pauses, a far-end reference of the
// same where a stage asks for one) and returns what it cost, in cores: the
// thread CPU time of a call-second of its frames, in its fastest pass.
func warmCost(p *pipeline.Pipeline, rate int) float64 {
	n := rate / 50 * abi.SampleBytes
	frame := &pipeline.PCM{Frame: make([]byte, n)}
	var ref []byte
	if p.WantsReference() {
		ref = make([]byte, n)
	}
	seed := uint32(2463534242)
	k := 0
	next := func() bool {
		level := 0
		if k%10 < 6 { // 120 ms of "syllable", 80 ms of pause
			level = 3000
		}
		k++
		for i := 0; i < n; i += 2 {
			seed ^= seed << 13
			seed ^= seed >> 17
			seed ^= seed << 5
			v := int16(int(seed%uint32(2*level+1)) - level)
			frame.Frame[i], frame.Frame[i+1] = byte(v), byte(uint16(v)>>8)
		}
		if ref != nil {
			copy(ref, frame.Frame)
			p.SetReference(ref)
		}
		_, err := p.Process(frame)
		return err == nil
	}
	// One thread, so that its CPU clock is this loop's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range warmUpFrames {
		if !next() {
			return 0
		}
	}
	began, best := sched.ThreadCPUTime(), 0.0
	for range warmPasses {
		start, frames := sched.ThreadCPUTime(), 0
		for frames < warmFrames && next() {
			frames++
			if sched.ThreadCPUTime()-began > warmCPU {
				break
			}
		}
		if frames == 0 {
			break
		}
		cores := (sched.ThreadCPUTime() - start).Seconds() / (float64(frames) * 0.020)
		if best == 0 || cores < best {
			best = cores
		}
		if sched.ThreadCPUTime()-began > warmCPU {
			break
		}
	}
	return best
}

// sample folds one interval of the process's CPU (used over wall) into the
// cost model, with active calls admitted.
func (rt *realtime) sample(used, wall time.Duration, active int64) {
	if wall <= 0 {
		return
	}
	// Costs are measured only while the calls are steady (within 2% of
	// the last sample): while they come in, the process also pays for
	// their handshakes and for refusing others, and calls set up but not
	// yet sending dilute their route's plugin time (a burst of 1,440
	// calls measured the route at a third of its cost and let 655 in).
	rt.mu.Lock()
	var plugins float64
	for _, rc := range rt.routes {
		ns := rc.cpuNs.Load()
		rate := float64(ns-rc.lastNs) / float64(wall)
		rc.lastNs = ns
		plugins += rate
		// A higher cost is taken at once, steady or not: pricing a call
		// too high refuses a few, too low lets a burst in.
		n := rc.calls.Load()
		if perCall := rate / float64(max(n, 1)); n > 0 && (steady(n, rc.lastCalls) || perCall > rc.cost()) {
			ewma(&rc.perCall, perCall)
		}
		rc.lastCalls = n
	}
	rt.mu.Unlock()
	host := max(float64(used)/float64(wall)-plugins, 0) / float64(max(active, 1))
	// The host's part is taken only while the calls are steady, not at
	// once when higher as a route's plugin time is: while calls come in,
	// it holds their set-ups and the refusals of the others, which are
	// not a cost per call-second. Taken at once, a surge of 1,440 calls
	// priced its admitted at up to four times their cost, and 113 to 424
	// of them were admitted from one run to the next; steady only, 425
	// in three runs of three (at the priors), 376 of a 2 s ramp of 400
	// instead of 290.
	if active >= measureCalls && steady(active, rt.lastActive) {
		// Never below the prior: a process that cannot get its cores (a
		// neighbour, a CPU limit) uses only what it gets, so its use per
		// call falls as calls are added and would admit without end (800
		// calls offered to one shared core: 478 admitted at 18.9 ms p50).
		ewma(&rt.perCall, max(host, rt.prior))
	}
	rt.lastActive = active
}

// steady says a count moved by at most 2% since the last sample.
func steady(n, last int64) bool { return max(n-last, last-n) <= n/50 }

// ewma moves an average held as float bits toward sample, as the CPU
// marks do.
func ewma(avg *atomic.Uint64, sample float64) {
	old := math.Float64frombits(avg.Load())
	avg.Store(math.Float64bits(old*(1-cpuSmoothing) + sample*cpuSmoothing))
}

// predicted is the CPU, in cores, that the active calls (and one more of
// route next, when not nil) are predicted to use.
func (rt *realtime) predicted(active int64, fallback, next *routeCost) float64 {
	host := math.Float64frombits(rt.perCall.Load())
	total := float64(active) * host
	rt.mu.Lock()
	for _, rc := range rt.routes {
		total += float64(rc.calls.Load()) * rc.cost()
	}
	rt.mu.Unlock()
	if pending := active - rt.live.Load(); pending > 0 && fallback != nil {
		total += float64(pending) * fallback.cost()
	}
	if next != nil {
		total += host + next.cost()
	}
	return total
}

func (rc *routeCost) cost() float64 { return math.Float64frombits(rc.perCall.Load()) }

// admits says whether one more call of route name fits under the mark of
// cores beside the active calls and held more, or why not.
func (s *Server) admits(name string, held int64) (string, bool) {
	if s.cpu == nil || s.opts.CPUHighWater <= 0 {
		return "", true
	}
	set := s.routes.Load()
	if name == "" {
		name = set.defaultName
	}
	if s.rt.lateNow.Load() {
		return "overloaded: the admitted calls' frames are late (more than 1% of them for 300 ms)", false
	}
	next := s.rt.cost(name)
	fallback := s.rt.cost(set.defaultName)
	cores := float64(s.rt.sched.Slots())
	limit := s.opts.CPUHighWater * cores
	p := s.rt.predicted(s.active.Load()+held, fallback, next)
	if p <= limit {
		return "", true
	}
	return fmt.Sprintf("overloaded: the calls admitted are predicted to use %.0f%% of %d cores with this one (%.2f ms of CPU a second for a call of %s), past the limit of %s",
		p/cores*100, int(cores), (math.Float64frombits(s.rt.perCall.Load())+next.cost())*1000, name, percent(s.opts.CPUHighWater)), false
}

// callCPU is a call's part of the scheduler: its account, and a lease for
// each goroutine that runs its plugins.
type callCPU struct {
	acct    *sched.Call
	in, out *sched.Lease
	route   *routeCost
	// shed is set by the sampler (shedLate) to have the goroutine that
	// runs the call's plugins degrade it by its route's policy.
	shed atomic.Bool
}

// openCPU opens the call's account on its route, before its pipelines are
// made (their plugins yield through the leases).
func (c *call) openCPU(route *Route) {
	rt := c.s.rt
	rc := rt.cost(route.Name)
	rc.calls.Add(1)
	rt.live.Add(1)
	acct := rt.sched.NewCall(func(ns int64) { rc.cpuNs.Add(ns) })
	c.cpu = &callCPU{acct: acct, in: acct.NewLease(), out: acct.NewLease(), route: rc}
	c.cpuLive.Store(c.cpu)
}

// closeCPU closes the account of a call that opened one.
func (c *call) closeCPU() {
	if c.cpu == nil {
		return
	}
	c.cpu.acct.Close()
	c.cpu.route.calls.Add(-1)
	c.s.rt.live.Add(-1)
}

// onTime counts a frame answered at t against its deadline.
func (rt *realtime) onTime(deadline int64, late prometheus.Counter) {
	rt.frames.Add(1)
	if sched.Now() > deadline {
		rt.late.Add(1)
		late.Inc()
	}
}

// overQuota applies the route's policy to a call whose plugins used more
// than their quota over the window, or that the sampler chose to shed, on
// the goroutine that runs ps (the pipelines whose frame just ran, in the
// order their stages are tried); false ends the call.
func (c *call) overQuota(ps ...*pipeline.Pipeline) bool {
	if c.cpu.acct.Recent() <= c.s.rt.quota && !c.cpu.shed.Load() {
		return true
	}
	used := c.cpu.acct.Usage()
	reason, why := shedQuota, ""
	switch {
	case used > c.s.rt.quota:
		why = fmt.Sprintf("CPU quota: its plugins used %.0f%% of a core over the last %v, past the limit of %s (limits.call_cpu_share)",
			used*100, sched.Window, percent(c.s.rt.quota))
	case c.cpu.shed.Load():
		reason = shedLate
		why = fmt.Sprintf("shed: frames were late, and its plugins used the most CPU (%.1f%% of a core over the last %v)", used*100, sched.Window)
	default:
		return true
	}
	if c.route.OverQuota == QuotaBypass {
		untimed := false
		for _, p := range ps {
			if p == nil {
				continue
			}
			if stage, _, ok := p.Costliest(); ok {
				c.s.metrics.degraded.WithLabelValues(c.route.Name).Inc()
				c.log.Warn("bypassing the call's costliest plugin", "plugin", p.Stages()[stage].Name(), "reason", why)
				p.Bypass(stage, errors.New(why))
				c.cpu.acct.Forgive()
				c.cpu.shed.Store(false)
				return true
			}
			untimed = untimed || canBypass(p)
		}
		if untimed {
			return true // a stage is left but not timed yet: asked again after the next frame
		}
	}
	c.s.metrics.shed.WithLabelValues(reason).Inc()
	c.log.Warn("call ended", "reason", why)
	if reason == shedLate {
		c.end(websocket.StatusTryAgainLater, why+"; try another host", "shed")
	} else {
		c.end(websocket.StatusPolicyViolation, why, "cpu_quota")
	}
	return false
}

// canBypass reports whether a stage is left that could be bypassed once
// timed: one not bypassed yet that keeps the sample rate.
func canBypass(p *pipeline.Pipeline) bool {
	for i, s := range p.Stages() {
		if !p.Bypassed(i) && s.InputRate() == s.OutputRate() {
			return true
		}
	}
	return false
}

// shedLate marks the costliest call (the most plugin CPU over the window;
// of equals, the newest), if it uses more than its fair share and at
// least shedMinUse of a core, to be degraded by its route's policy when, for
// shedLateStreak intervals in a row, more than shedLateShare of the frames
// were late while plugin work waited for a slot: the calls admitted want
// more of the cores than there are. Lateness without waiting plugin work
// (a neighbour process, the sockets) is not the plugins' doing.
func (s *Server) shedLate() {
	rt := s.rt
	late, frames := rt.late.Swap(0), rt.frames.Swap(0)
	contended := rt.sched.Stats().Contended
	waited := contended > rt.contended
	rt.contended = contended
	isLate := frames >= shedLateFrames && float64(late) > float64(frames)*shedLateShare
	if !isLate || frames < admitLateFrames {
		rt.lateCount = 0
		if rt.lateNow.Swap(false) {
			s.log.Info("frames on time again: admitting calls")
		}
	} else if rt.lateCount++; rt.lateCount >= shedLateStreak && !rt.lateNow.Swap(true) {
		s.log.Warn("refusing new calls: frames are late", "late", late, "frames", frames)
	}
	if !isLate || !waited {
		rt.lateStreak = 0
		return
	}
	if rt.lateStreak++; rt.lateStreak < shedLateStreak {
		return
	}
	rt.lateStreak = 0
	s.mu.Lock()
	var worst *callCPU
	var worstUse float64
	var worstStart time.Time
	for c := range s.calls {
		cpu := c.cpuLive.Load()
		if cpu == nil {
			continue
		}
		use := cpu.acct.Usage()
		if worst == nil || use > worstUse || use == worstUse && c.started.After(worstStart) {
			worst, worstUse, worstStart = cpu, use, c.started
		}
	}
	n := float64(max(len(s.calls), 1))
	s.mu.Unlock()
	if worst != nil && worstUse > float64(rt.sched.Slots())/n && worstUse > shedMinUse {
		worst.shed.Store(true)
	}
}
