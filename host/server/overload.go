package server

import (
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// CPUSampler reads the CPU time a process has used since it started (user
// and system time of all its threads) and the time it read it at. The
// server samples it to tell when the calls it runs want more of the
// machine than there is. The reading carries its own time so that a
// sampler and the server never disagree on how long a sample lasted.
type CPUSampler interface {
	CPUTime() (used time.Duration, at time.Time, err error)
}

// ProcessCPU is the CPUSampler of this process: getrusage(RUSAGE_SELF),
// one system call and no allocation. Where the platform has no getrusage
// it returns an error, and CPU shedding stays off.
func ProcessCPU() CPUSampler { return rusage{} }

// DefaultCPUSampleInterval is how often CPU use is sampled.
const DefaultCPUSampleInterval = 100 * time.Millisecond

// cpuSmoothing is the weight of each new sample in the moving average:
// with 0.2, the average follows a step in load with a time constant of
// about 4.5 samples (450 ms at the default interval). One sample alone
// would trip on a garbage collection cycle (a quarter of the cores for a
// few milliseconds) or a burst of call set-ups; a longer average would let
// a real overload starve calls for seconds before new ones are refused.
const cpuSmoothing = 0.2

// cpuMonitor samples the process's CPU use, keeps a moving average of it
// as a share of the cores the Go scheduler runs on (GOMAXPROCS), and says
// whether the process is overloaded, with hysteresis: from the moment the
// average reaches the high-water mark until it falls to the low one.
type cpuMonitor struct {
	sampler   CPUSampler
	interval  time.Duration
	high, low float64
	log       *slog.Logger

	util       atomic.Uint64 // math.Float64bits of the average, 0–1
	overloaded atomic.Bool

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func newCPUMonitor(s CPUSampler, interval time.Duration, high, low float64, log *slog.Logger) *cpuMonitor {
	return &cpuMonitor{sampler: s, interval: interval, high: high, low: low, log: log,
		stop: make(chan struct{}), done: make(chan struct{})}
}

// run samples until close. A sampler that fails is logged once and the
// process is then never called overloaded: shedding calls on a reading
// the host cannot make would refuse every call.
func (m *cpuMonitor) run() {
	defer close(m.done)
	last, lastAt, err := m.sampler.CPUTime()
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for err == nil {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		var cpu time.Duration
		var at time.Time
		if cpu, at, err = m.sampler.CPUTime(); err == nil {
			m.observe(cpu-last, at.Sub(lastAt), runtime.GOMAXPROCS(0))
			last, lastAt = cpu, at
		}
	}
	m.overloaded.Store(false)
	m.log.Warn("not shedding calls on CPU use: cannot read the process's CPU time", "err", err)
}

// observe folds one sample — cpu used over wall time on procs cores —
// into the average and moves the overload state across its marks.
func (m *cpuMonitor) observe(cpu, wall time.Duration, procs int) {
	if wall <= 0 || procs < 1 {
		return
	}
	sample := min(max(float64(cpu)/(float64(wall)*float64(procs)), 0), 1)
	util := m.utilization()*(1-cpuSmoothing) + sample*cpuSmoothing
	m.util.Store(math.Float64bits(util))
	switch {
	case util >= m.high && !m.overloaded.Load():
		m.overloaded.Store(true)
		m.log.Warn("overloaded: refusing new calls", "cpu", percent(util), "cores", procs, "high_water", percent(m.high), "low_water", percent(m.low))
	case util <= m.low && m.overloaded.Load():
		m.overloaded.Store(false)
		m.log.Info("no longer overloaded: accepting calls", "cpu", percent(util), "cores", procs)
	}
}

// utilization is the moving average of CPU use, 0–1 of GOMAXPROCS cores.
func (m *cpuMonitor) utilization() float64 { return math.Float64frombits(m.util.Load()) }

// close stops the sampling and waits for it to end.
func (m *cpuMonitor) close() {
	m.stopOnce.Do(func() { close(m.stop) })
	<-m.done
}

// percent shows a share as people read it in logs and refusals: "93%".
func percent(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }
