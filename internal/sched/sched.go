// Package sched shares the cores between calls: plugin work (every call
// into WebAssembly) runs in one of a bounded number of slots, about the
// cores Go has, taken earliest deadline first, with each call's CPU time
// accounted over a sliding window. A call that used more than its fair
// share of the cores over the window waits behind the calls that did not
// (for up to DemotionPenalty), and a call that holds a slot past a quantum
// while a more urgent call waits gives the slot up at the next budget tick
// of its plugin (Yield): no call keeps the cores while another misses its
// deadline.
//
// A slot is a right to run, not a goroutine: the call's own goroutine runs
// its plugins once it holds one, so an uncontended frame pays two
// lock-protected counter updates and two readings of the monotonic clock,
// and no goroutine handoff (RATIONALE.md, "Real time between calls", has
// the alternatives measured). Work long enough to reach its plugin's
// budget tick is charged in the thread's CPU time from there on.
package sched

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Window is how far back a call's CPU use is counted: its share, its quota
// and the route costs admission predicts from are all over the last Window.
const Window = time.Second

// buckets divide the window; a call's use is the sum of its buckets, so a
// burst ages out of the window one bucket (125 ms) at a time.
const buckets = 8

const bucketNs = int64(Window) / buckets

// DefaultQuantum is how long a call may hold its slot while a more urgent
// call waits before it gives the slot up at its plugin's next budget tick.
// It is a tenth of a 5 ms frame budget: a healthy call behind a heavy one
// waits at most about this long (plus a tick interval, 15 µs to 1 ms).
const DefaultQuantum = 500 * time.Microsecond

// DemotionPenalty is how much later than its deadline (or than now, for
// work already late) demoted work is queued: work of a call over its fair
// share, and work that is late or has run for longDemotion quanta. It
// waits behind all other work due up to 100 ms after it — five frames —
// and no longer: a strict
// priority starved a call that a busy machine's descheduling had pushed
// over its share, behind a queue that never emptied (200 calls on two
// slots under the race detector, some of whose frames waited 10 s).
const DemotionPenalty = 100 * time.Millisecond

// longDemotion is how many quanta one piece of work may run before it
// waits behind work that has not: 2 ms at the default quantum, a hundred
// times a frame of the stock DSP chain, an eighth of a frame that uses 16
// ms of every 20.
const longDemotion = 4

// Options configure a Scheduler.
type Options struct {
	// Slots is how many calls may run plugin code at once; 0 means
	// runtime.GOMAXPROCS(0).
	Slots int
	// Quantum is DefaultQuantum when 0.
	Quantum time.Duration
	// OnWait, if not nil, hears how long each acquisition that found no
	// slot free waited for one, for a histogram.
	OnWait func(time.Duration)
	// MeasureAbove is DefaultMeasureAbove when 0: the use, in cores, past
	// which a call's short holds are charged in thread CPU time too.
	MeasureAbove float64
}

// DefaultMeasureAbove is the use past which a call is measured in thread
// CPU time on every hold (Options.MeasureAbove): 5% of a core, twenty
// times what the stock DSP chain uses. Below it a hold that ends before
// its plugin's first budget tick is charged in wall time, which costs two
// readings of the monotonic clock instead of two system calls; but wall
// time counts the moments the thread was descheduled, and on a busy
// machine a passthrough call seemed to use 50% of a core and was degraded
// for a quota it never used. Wall time is never less than the CPU time it
// stands for, so a call under the mark is under it, and one over it is
// measured from then on, its window emptied of what wall time charged.
const DefaultMeasureAbove = 0.05

// Scheduler hands out slots for plugin work. Create it with New; it is safe
// for concurrent use.
type Scheduler struct {
	slots   int
	quantum int64
	// measureAbove is Options.MeasureAbove as ns over the window.
	measureAbove int64

	mu      sync.Mutex
	free    int
	waiting waitHeap
	seq     uint64
	// calls counts the open Calls, for the fair share.
	calls atomic.Int64

	// nwait mirrors len(waiting) for Yield's lock-free fast path.
	nwait atomic.Int32
	// contended counts the acquisitions that waited, for Stats. Only
	// they pay for it: a shared counter of every acquisition would be a
	// cache line every core writes on every frame.
	contended atomic.Int64
	onWait    func(time.Duration)
}

// New makes a Scheduler.
func New(opts Options) *Scheduler {
	if opts.Slots <= 0 {
		opts.Slots = runtime.GOMAXPROCS(0)
	}
	if opts.Quantum <= 0 {
		opts.Quantum = DefaultQuantum
	}
	if opts.MeasureAbove <= 0 {
		opts.MeasureAbove = DefaultMeasureAbove
	}
	return &Scheduler{slots: opts.Slots, free: opts.Slots, quantum: int64(opts.Quantum), onWait: opts.OnWait,
		measureAbove: int64(opts.MeasureAbove * float64(Window)), waiting: make(waitHeap, 0, 64)}
}

// Slots is how many calls may run plugin code at once.
func (s *Scheduler) Slots() int { return s.slots }

// Stats are a Scheduler's totals since it was made.
type Stats struct {
	// Contended counts the slot acquisitions (and re-acquisitions after
	// a yield) that had to wait (their times go to Options.OnWait).
	Contended int64
	// Waiting is how many calls wait for a slot now.
	Waiting int
}

// Stats returns the totals so far.
func (s *Scheduler) Stats() Stats {
	return Stats{Contended: s.contended.Load(), Waiting: int(s.nwait.Load())}
}

// share is the fair share of one call: the slots over the open calls, in
// cores (at most one: a call runs on one core at a time).
func (s *Scheduler) share() float64 {
	return min(float64(s.slots)/float64(max(s.calls.Load(), 1)), 1)
}

// Call is one call's CPU account: its use over the window, which decides
// whether it is within its share, and its total. Its plugin work runs under
// its Leases, one for each goroutine that runs its plugins (the caller's,
// and in a relay the bot reader's).
type Call struct {
	s *Scheduler

	// mu guards the window: CPU ns in each bucket, and the bucket the
	// newest charge went to.
	mu     sync.Mutex
	window [buckets]int64
	epoch  int64
	total  atomic.Int64
	// recent is the window's sum at the last charge (Recent).
	recent atomic.Int64

	// onCharge, if not nil, hears of every charge (the route's cost).
	onCharge func(ns int64)
	closed   atomic.Bool
	// measured: every hold is charged in thread CPU time, since the call
	// passed Options.MeasureAbove.
	measured atomic.Bool
}

// NewCall opens a call's account. onCharge, which may be nil, hears the CPU
// time of each slot hold, in ns, on the goroutine that held it.
func (s *Scheduler) NewCall(onCharge func(ns int64)) *Call {
	s.calls.Add(1)
	return &Call{s: s, onCharge: onCharge}
}

// Close takes the call out of the fair share. Its leases must not hold
// their slots.
func (c *Call) Close() {
	if c.closed.CompareAndSwap(false, true) {
		c.s.calls.Add(-1)
	}
}

// Lease runs one goroutine's share of a call's plugin work: it waits for
// a slot, holds it and gives it back. Its methods are called from that
// goroutine only. It is the plugin.Yielder of the pipeline it runs.
type Lease struct {
	call *Call
	wake chan struct{}

	// Queue state, under s.mu: the work's deadline, and its key in the
	// queue, the deadline pushed back by DemotionPenalty for work that is
	// demoted (over its call's share, late or long).
	deadline int64
	key      int64
	seq      uint64

	// Holding state. A hold is charged in wall time (chargedTo) until
	// its plugin's first budget tick, which comes only after 15 µs to 1 ms
	// of plugin code; from there on in the thread's CPU time (cpuFrom),
	// with the goroutine locked to its thread (onCPU). Most frames end
	// before a tick and pay two readings of the monotonic clock, not two
	// system calls.
	holding   bool
	heldSince int64
	// started is when the work under way first took its slot.
	started   int64
	chargedTo int64
	onCPU     bool
	cpuFrom   time.Duration
}

// NewLease makes a lease on the call's account for one goroutine.
func (c *Call) NewLease() *Lease { return &Lease{call: c, wake: make(chan struct{}, 1)} }

var clockBase = time.Now()

// Now is the scheduler's clock, monotonic nanoseconds: the deadline of
// work due now.
func Now() int64 { return int64(time.Since(clockBase)) }

// Acquire waits for a slot for work due by deadline (on the clock of Now) and
// returns how long it waited.
func (l *Lease) Acquire(deadline int64) time.Duration { return l.AcquireAt(Now(), deadline) }

// AcquireAt is Acquire for a caller that has just read the clock: now is
// that reading of Now. A frame reads it once for its deadline and for the
// start of its hold.
func (l *Lease) AcquireAt(now, deadline int64) time.Duration {
	s := l.call.s
	s.mu.Lock()
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		l.deadline = deadline
		s.mu.Unlock()
		l.hold(now)
		return 0
	}
	s.mu.Unlock()
	// Only work that queues needs its call's share: it orders the queue.
	key := deadline
	if l.call.Usage() > s.share() {
		key += int64(DemotionPenalty)
	}
	s.mu.Lock()
	l.deadline, l.key = deadline, key
	var waited time.Duration
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		s.mu.Unlock()
	} else {
		waited = l.queue(nil)
		if s.onWait != nil {
			s.onWait(waited)
		}
		now = Now()
	}
	l.hold(now)
	return waited
}

// hold starts holding the slot, taken at now.
func (l *Lease) hold(now int64) {
	l.holding = true
	l.heldSince = now
	l.started, l.chargedTo = now, now
	if l.call.measured.Load() {
		l.countCPU()
	}
}

// queue puts the lease in the queue, with s.mu held, hands the slot to
// next if not nil, and returns once a releasing lease handed the slot
// back, with how long that took.
func (l *Lease) queue(next *Lease) time.Duration {
	s := l.call.s
	s.seq++
	l.seq = s.seq
	s.waiting.push(l)
	s.nwait.Store(int32(len(s.waiting)))
	s.mu.Unlock()
	if next != nil {
		next.wake <- struct{}{}
	}
	t0 := Now()
	<-l.wake
	waited := time.Duration(Now() - t0)
	s.contended.Add(1)
	return waited
}

// Release gives the slot back, to the most urgent waiting lease if any,
// and charges the time the work held it.
func (l *Lease) Release() {
	l.charge()
	l.holding = false
	if l.onCPU {
		l.onCPU = false
		runtime.UnlockOSThread()
	}
	s := l.call.s
	s.mu.Lock()
	if len(s.waiting) == 0 {
		s.free++
		s.mu.Unlock()
		return
	}
	next := s.waiting.pop()
	s.nwait.Store(int32(len(s.waiting)))
	s.mu.Unlock()
	next.wake <- struct{}{}
}

// charge adds what the work used since the last charge to the call's
// account: the thread's CPU time once counted in it, the wall time before.
func (l *Lease) charge() {
	var ns int64
	now := Now()
	if l.onCPU {
		cpu := ThreadCPUTime()
		ns = int64(cpu - l.cpuFrom)
		l.cpuFrom = cpu
	} else {
		ns = now - l.chargedTo
		l.chargedTo = now
		if l.call.measured.Load() {
			// Another of the call's leases switched it to thread CPU time
			// while this hold ran in wall time, which on a starved machine
			// is mostly time descheduled: a passthrough call's two leases
			// charged 50% of a core this way, at a load average of 20, and
			// were bypassed for it. The work's own CPU counts from its next
			// hold.
			return
		}
	}
	if ns <= 0 {
		return
	}
	l.call.add(ns, now)
	if !l.onCPU && l.call.recent.Load() > l.call.s.measureAbove && l.call.measured.CompareAndSwap(false, true) {
		l.call.Forgive()
	}
}

// countCPU switches the hold to the thread's CPU time, charging the wall
// time until now.
func (l *Lease) countCPU() {
	l.charge()
	runtime.LockOSThread()
	l.onCPU = true
	l.cpuFrom = ThreadCPUTime()
}

// add charges ns of use at now.
func (c *Call) add(ns, now int64) {
	c.mu.Lock()
	c.rotate(now)
	c.window[c.epoch%buckets] += ns
	var sum int64
	for _, b := range c.window {
		sum += b
	}
	c.mu.Unlock()
	c.recent.Store(sum)
	c.total.Add(ns)
	if c.onCharge != nil {
		c.onCharge(ns)
	}
}

// Yield is the plugin's budget tick, on the goroutine that holds the slot:
// once the lease has held it for a quantum, and a more urgent lease waits
// (within its share and on time where this call is over its share or past
// its deadline, or due earlier), the slot
// goes to that lease and Yield returns when this one has it again, with
// how long it waited. Once a quantum it also lets other goroutines run
// (runtime.Gosched). It returns how long all that took (0 at once before a
// quantum has passed, and when the lease holds no slot: set-up, which runs
// under its own gate).
func (l *Lease) Yield() time.Duration {
	if !l.holding {
		return 0
	}
	if !l.onCPU {
		l.countCPU()
	}
	s := l.call.s
	t := Now()
	if t-l.heldSince < s.quantum {
		return 0
	}
	// Every quantum, the goroutines of other calls get the core for a
	// moment: they read their frames and queue for a slot only if they
	// run, and Go preempts a goroutine that stays in compiled plugin code
	// only after 10 ms (one healthy call beside six 16 ms frames on one
	// core waited 50 ms at p99 before it could even ask).
	runtime.Gosched()
	after := Now()
	paused := time.Duration(after - t)
	l.heldSince = after
	if s.nwait.Load() == 0 {
		return paused
	}
	t = after
	// Work already past its deadline cannot be on time any more, and work
	// that has run for longDemotion quanta is far longer than a frame's
	// usual: either goes behind all work that still can be on time, as
	// work over its share does, so that one long frame does not make every
	// frame queued behind it late too.
	l.charge()
	key := l.deadline
	if t > l.deadline || t-l.started > longDemotion*s.quantum || l.call.Usage() > s.share() {
		key = max(l.deadline, t) + int64(DemotionPenalty)
	}
	s.mu.Lock()
	if len(s.waiting) == 0 || !s.waiting[0].before(key, ^uint64(0)) {
		s.mu.Unlock()
		return paused
	}
	next := s.waiting.pop()
	// Back in the queue with its deadline, behind what waits with the same.
	l.key = key
	waited := l.queue(next)
	if s.onWait != nil {
		s.onWait(waited)
	}
	l.heldSince = Now()
	l.cpuFrom = ThreadCPUTime()
	return paused + waited
}

// Usage is the call's CPU use over the last Window, in cores (0.5: half of
// one core's time). A call younger than the window is counted over the
// whole window, so a start-up burst is not held against it twice.
func (c *Call) Usage() float64 {
	c.mu.Lock()
	c.rotate(Now())
	var sum int64
	for _, ns := range c.window {
		sum += ns
	}
	c.mu.Unlock()
	return float64(sum) / float64(Window)
}

// Forgive empties the window: after the call was degraded, its share and
// quota judge what it uses from now on.
func (c *Call) Forgive() {
	c.mu.Lock()
	c.window = [buckets]int64{}
	c.mu.Unlock()
	c.recent.Store(0)
}

// Recent is Usage as of the call's last charge, read without a lock: a
// check made after every frame (its quota) reads it, since the frame it
// follows has just charged. It can be higher than Usage, never lower
// between charges, so a check under a limit is exact; one over it asks
// Usage.
func (c *Call) Recent() float64 { return float64(c.recent.Load()) / float64(Window) }

// CPU is the CPU time the call's plugin work used since it began.
func (c *Call) CPU() time.Duration { return time.Duration(c.total.Load()) }

// rotate moves the window to the bucket of t, emptying the buckets it
// passes. c.mu is held.
func (c *Call) rotate(t int64) {
	e := t / bucketNs
	if e <= c.epoch {
		return
	}
	if e-c.epoch >= buckets {
		c.window = [buckets]int64{}
	} else {
		for i := c.epoch + 1; i <= e; i++ {
			c.window[i%buckets] = 0
		}
	}
	c.epoch = e
}

// before orders waiting leases by key (earliest first), then first come.
func (l *Lease) before(key int64, seq uint64) bool {
	if l.key != key {
		return l.key < key
	}
	return l.seq < seq
}

// waitHeap is a binary min-heap of waiting leases by before. It is typed
// (not container/heap) so that pushing and popping box nothing.
type waitHeap []*Lease

func (h waitHeap) less(i, j int) bool { return h[i].before(h[j].key, h[j].seq) }

func (h *waitHeap) push(l *Lease) {
	*h = append(*h, l)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.swap(i, p)
		i = p
	}
}

func (h *waitHeap) pop() *Lease {
	q := *h
	top := q[0]
	last := len(q) - 1
	q.swap(0, last)
	q[last] = nil
	q = q[:last]
	*h = q
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && q.less(l, m) {
			m = l
		}
		if r < len(q) && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.swap(i, m)
		i = m
	}
	return top
}

func (h waitHeap) swap(i, j int) { h[i], h[j] = h[j], h[i] }
