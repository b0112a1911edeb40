package server

import (
	"fmt"
	"log/slog"
	"math"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// CPUSample is one reading of what the process's calls get of the CPU.
type CPUSample struct {
	// At is when the sample was taken. It travels with the reading so that
	// a sampler and the server never disagree on how long a sample lasted.
	At time.Time
	// Used is the CPU time the process has used since it started: user and
	// system time of all its threads.
	Used time.Duration
	// Wait is how long goroutines that became runnable since the previous
	// sample waited for a core before they ran, at the 90th percentile; 0
	// if none did.
	Wait time.Duration
}

// CPUSampler takes CPUSamples. The server calls it from one goroutine, at
// a steady interval, to tell when the calls it runs want more of the
// machine than they get.
type CPUSampler interface {
	Sample() (CPUSample, error)
}

// ProcessCPU returns a CPUSampler of this process: getrusage(RUSAGE_SELF)
// for the CPU used, and the Go scheduler's own record of how long
// runnable goroutines waited (runtime/metrics /sched/latencies:seconds)
// for the wait. Where the platform has no getrusage it returns an error,
// and overload shedding stays off. It keeps the previous reading, so each
// server needs its own.
func ProcessCPU() CPUSampler {
	return &processCPU{sched: []rtmetrics.Sample{{Name: "/sched/latencies:seconds"}}}
}

type processCPU struct {
	sched []rtmetrics.Sample
	prev  []uint64
}

func (p *processCPU) Sample() (CPUSample, error) {
	used, err := rusageCPU()
	if err != nil {
		return CPUSample{}, err
	}
	return CPUSample{At: time.Now(), Used: used, Wait: p.wait()}, nil
}

// wait is the 90th percentile of the scheduling delays recorded since the
// previous call, as the upper bound of the histogram bucket it falls in.
func (p *processCPU) wait() time.Duration {
	rtmetrics.Read(p.sched)
	h := p.sched[0].Value.Float64Histogram()
	first := p.prev == nil
	if len(p.prev) != len(h.Counts) {
		p.prev = make([]uint64, len(h.Counts))
	}
	defer copy(p.prev, h.Counts)
	var n uint64
	for i, c := range h.Counts {
		n += c - p.prev[i]
	}
	if first || n == 0 {
		return 0
	}
	var seen uint64
	for i, c := range h.Counts {
		if seen += c - p.prev[i]; seen*10 >= n*9 {
			bound := h.Buckets[i+1]
			if math.IsInf(bound, 1) {
				bound = h.Buckets[i]
			}
			return time.Duration(bound * float64(time.Second))
		}
	}
	return 0
}

// DefaultCPUSampleInterval is how often the CPU is sampled.
const DefaultCPUSampleInterval = 100 * time.Millisecond

// cpuSmoothing is the weight of each new sample in the moving averages:
// with 0.5, an average follows a step in load with a time constant of
// about 1.5 samples (150 ms at the default interval), and crosses a mark
// one or two samples after the load does. Calls arrive faster than that:
// with 0.2 (450 ms), ten calls that each want 0.8 of a core, arriving
// 200 ms apart on two cores, got five in before the first was refused;
// with 0.5, three or four, where an 85% mark allows three (RATIONALE.md,
// "Overload"). One sample alone would trip on noise: a garbage collection
// cycle or a stray slow wake-up in a sample with few of them.
const cpuSmoothing = 0.5

// mark is one overload signal: a moving average of its samples, and
// whether it is over, with hysteresis: from the moment the average reaches
// high until it falls to low. A high of 0 turns the signal off.
type mark struct {
	high, low float64
	avg       atomic.Uint64 // math.Float64bits of the average
	over      atomic.Bool
}

// observe folds a sample into the average and reports a change of state.
func (k *mark) observe(sample float64) (changed bool) {
	avg := k.average()*(1-cpuSmoothing) + sample*cpuSmoothing
	k.avg.Store(math.Float64bits(avg))
	switch over := k.over.Load(); {
	case k.high > 0 && avg >= k.high && !over:
		k.over.Store(true)
		return true
	case avg <= k.low && over:
		k.over.Store(false)
		return true
	}
	return false
}

func (k *mark) average() float64 { return math.Float64frombits(k.avg.Load()) }

// cpuMonitor samples what the process gets of the CPU and says whether it
// is overloaded. Two signals, either of which is enough:
//
//   - use: the CPU time used, as a share of the cores the Go scheduler
//     runs on (GOMAXPROCS). It is exact on a machine the process has to
//     itself, but cannot see cores taken by other processes: on a shared
//     machine the process starves at a share it never reaches.
//   - wait: how long runnable goroutines waited for a core. It sees
//     starvation whatever its cause; a lightly loaded process does not
//     wait even when the machine is busy, because Linux runs a thread that
//     wakes from sleep promptly.
type cpuMonitor struct {
	sampler  CPUSampler
	interval time.Duration
	use      mark // share of GOMAXPROCS cores, 0–1
	wait     mark // seconds
	log      *slog.Logger
	// onSample, if not nil, hears each interval's CPU used and wall time,
	// after the signals have been updated.
	onSample func(used, wall time.Duration)

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func newCPUMonitor(s CPUSampler, interval time.Duration, log *slog.Logger) *cpuMonitor {
	return &cpuMonitor{sampler: s, interval: interval, log: log, stop: make(chan struct{}), done: make(chan struct{})}
}

// run samples until close. A sampler that fails is logged and the process
// is then never called overloaded: shedding calls on a reading the host
// cannot make would refuse every call.
func (m *cpuMonitor) run() {
	defer close(m.done)
	last, err := m.sampler.Sample()
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for err == nil {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		var cur CPUSample
		if cur, err = m.sampler.Sample(); err == nil {
			m.observe(cur.Used-last.Used, cur.At.Sub(last.At), runtime.GOMAXPROCS(0), cur.Wait)
			if m.onSample != nil {
				m.onSample(cur.Used-last.Used, cur.At.Sub(last.At))
			}
			last = cur
		}
	}
	m.use.over.Store(false)
	m.wait.over.Store(false)
	m.log.Warn("not shedding calls on CPU: cannot sample the process's CPU", "err", err)
}

// observe folds one sample — used CPU over wall time on procs cores, and
// the goroutines' wait — into the signals, and logs a change of state.
func (m *cpuMonitor) observe(used, wall time.Duration, procs int, wait time.Duration) {
	if wall <= 0 || procs < 1 {
		return
	}
	was := m.overloaded()
	m.use.observe(min(max(float64(used)/(float64(wall)*float64(procs)), 0), 1))
	m.wait.observe(wait.Seconds())
	switch now := m.overloaded(); {
	case now && !was:
		m.log.Warn("refusing new calls: "+m.reason(), "cores", procs)
	case was && !now:
		m.log.Info("no longer overloaded: accepting calls", "cpu", percent(m.use.average()), "wait", m.waitAverage())
	}
}

// overloaded says whether either signal is over its mark.
func (m *cpuMonitor) overloaded() bool { return m.use.over.Load() || m.wait.over.Load() }

// waitAverage is the wait signal's average, rounded for people.
func (m *cpuMonitor) waitAverage() time.Duration {
	return time.Duration(m.wait.average() * float64(time.Second)).Round(10 * time.Microsecond)
}

// reason says which signals are over, for refused clients, /readyz and the
// log: "overloaded: CPU at 93% of 2 cores, past the limit of 85%".
func (m *cpuMonitor) reason() string {
	var parts []string
	if m.use.over.Load() {
		parts = append(parts, fmt.Sprintf("CPU at %s of %d cores, past the limit of %s",
			percent(m.use.average()), runtime.GOMAXPROCS(0), percent(m.use.high)))
	}
	if m.wait.over.Load() {
		parts = append(parts, fmt.Sprintf("calls wait %v for a core (90th percentile), past the limit of %v",
			m.waitAverage(), seconds(m.wait.high)))
	}
	if len(parts) == 0 {
		return "overloaded" // the state changed as this was asked
	}
	return "overloaded: " + strings.Join(parts, "; ")
}

// recovery says when an overloaded server takes calls again.
func (m *cpuMonitor) recovery() string {
	var parts []string
	if m.use.over.Load() {
		parts = append(parts, percent(m.use.low)+" CPU")
	}
	if m.wait.over.Load() {
		parts = append(parts, fmt.Sprintf("a %v wait", seconds(m.wait.low)))
	}
	if len(parts) == 0 {
		return "ready again now"
	}
	return "ready again at " + strings.Join(parts, " and ")
}

// shedReason is the voxhost_calls_shed_total reason of a call refused now.
func (m *cpuMonitor) shedReason() string {
	if m.use.over.Load() {
		return shedCPU
	}
	return shedCPUWait
}

// close stops the sampling and waits for it to end.
func (m *cpuMonitor) close() {
	m.stopOnce.Do(func() { close(m.stop) })
	<-m.done
}

// percent shows a share as people read it in logs and refusals: "93%".
func percent(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

// seconds shows a wait mark, kept in seconds, as a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
