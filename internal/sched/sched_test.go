package sched

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// waitFor polls cond until it holds: the tests wait on the scheduler's
// state, never on how long something takes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// queueUp starts a goroutine per lease that acquires with its deadline,
// one at a time so that their order in the queue is known, and records the
// order in which they got the slot.
func queueUp(t *testing.T, s *Scheduler, leases []*Lease, deadlines []int64) (order func() []int, done *sync.WaitGroup) {
	var mu sync.Mutex
	var got []int
	done = &sync.WaitGroup{}
	for i, l := range leases {
		done.Add(1)
		go func() {
			defer done.Done()
			l.Acquire(deadlines[i])
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
			l.Release()
		}()
		waitFor(t, "the lease to queue", func() bool { return s.Stats().Waiting == i+1 })
	}
	return func() []int { mu.Lock(); defer mu.Unlock(); return append([]int(nil), got...) }, done
}

func TestEarliestDeadlineFirst(t *testing.T) {
	s := New(Options{Slots: 1})
	holder := s.NewCall(nil).NewLease()
	holder.Acquire(Now())
	var leases []*Lease
	for range 4 {
		leases = append(leases, s.NewCall(nil).NewLease())
	}
	base := Now()
	// Queued in this order, due in another: 30, 10, 40, 20 ms from now.
	order, done := queueUp(t, s, leases, []int64{base + 30e6, base + 10e6, base + 40e6, base + 20e6})
	holder.Release()
	done.Wait()
	if got, want := order(), []int{1, 3, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("slot went to leases in order %v, want earliest deadline first %v", got, want)
	}
}

func TestCallsOverTheirShareWaitBehind(t *testing.T) {
	s := New(Options{Slots: 1})
	holder := s.NewCall(nil).NewLease()
	holder.Acquire(Now())
	heavy := s.NewCall(nil)
	light := s.NewCall(nil)
	// The heavy call used 0.6 s of CPU in the last second: over the fair
	// share of one slot among three calls (a third of a core).
	heavy.add(int64(600*time.Millisecond), Now())
	if u := heavy.Usage(); u < 0.59 || u > 0.61 {
		t.Fatalf("heavy call's usage %.3f, want 0.6", u)
	}
	base := Now()
	// The heavy call's frame is due first, yet waits behind the light one.
	order, done := queueUp(t, s, []*Lease{heavy.NewLease(), light.NewLease()}, []int64{base, base + 50e6})
	holder.Release()
	done.Wait()
	if got, want := order(), []int{1, 0}; !slices.Equal(got, want) {
		t.Fatalf("slot went to %v (0 heavy, 1 light), want the call within its share first", got)
	}
}

func TestUsageAgesOutOfTheWindow(t *testing.T) {
	s := New(Options{Slots: 1})
	c := s.NewCall(nil)
	c.mu.Lock()
	c.rotate(Now())
	c.window[c.epoch%buckets] = int64(300 * time.Millisecond)
	// As if the charge had been made a whole window ago.
	c.epoch -= buckets
	c.mu.Unlock()
	if u := c.Usage(); u != 0 {
		t.Fatalf("usage %.3f after the window passed, want 0", u)
	}
	c.add(int64(100*time.Millisecond), Now())
	c.Forgive()
	if u := c.Usage(); u != 0 {
		t.Fatalf("usage %.3f after Forgive, want 0", u)
	}
	if c.CPU() != 100*time.Millisecond {
		t.Fatalf("total CPU %v, want the 100ms charged (Forgive keeps the total)", c.CPU())
	}
}

// TestYieldHandsTheSlotToAnEarlierDeadline runs a long piece of work
// that offers the slot at every step, as a plugin's budget tick does,
// while a call with an earlier deadline waits: it gets the slot before the
// long work ends.
func TestYieldHandsTheSlotToAnEarlierDeadline(t *testing.T) {
	s := New(Options{Slots: 1, Quantum: time.Microsecond})
	long := s.NewCall(nil).NewLease()
	urgent := s.NewCall(nil).NewLease()
	base := Now()
	long.Acquire(base + int64(time.Second))

	urgentRan := make(chan struct{})
	go func() {
		urgent.Acquire(base)
		close(urgentRan)
		urgent.Release()
	}()
	waitFor(t, "the urgent lease to queue", func() bool { return s.Stats().Waiting == 1 })
	for s.Stats().Waiting == 1 {
		long.Yield() // spins until the quantum has passed
	}
	select {
	case <-urgentRan:
	default:
		t.Fatal("Yield returned with the slot before the urgent lease ran")
	}
	long.Release()
	if st := s.Stats(); st.Waiting != 0 || freeSlots(s) != 1 {
		t.Fatalf("after both released: %d waiting, %d free slots; want 0 and 1", st.Waiting, freeSlots(s))
	}
}

// TestYieldKeepsTheSlotFromLaterDeadlines: a waiting call due later than
// the holder does not take the slot from it.
func TestYieldKeepsTheSlotFromLaterDeadlines(t *testing.T) {
	const quantum = 200 * time.Millisecond
	s := New(Options{Slots: 1, Quantum: quantum})
	holder := s.NewCall(nil).NewLease()
	later := s.NewCall(nil).NewLease()
	base := Now()
	holder.Acquire(base + int64(time.Minute))
	_, done := queueUp(t, s, []*Lease{later}, []int64{base + int64(2*time.Minute)})
	// Past one quantum, so that Yield compares, and short of the
	// demotion of long work at four.
	for Now()-holder.heldSince < int64(quantum) {
		runtime.Gosched()
	}
	holder.Yield()
	if s.Stats().Waiting != 1 {
		t.Fatal("Yield gave the slot up to a call due later")
	}
	holder.Release()
	done.Wait()
}

// TestYieldDemotesWorkPastItsDeadline: a holder whose work is already
// late gives the slot to waiting work that can still be on time, even
// work due later than it (within DemotionPenalty).
func TestYieldDemotesWorkPastItsDeadline(t *testing.T) {
	s := New(Options{Slots: 1, Quantum: time.Nanosecond})
	late := s.NewCall(nil).NewLease()
	onTime := s.NewCall(nil).NewLease()
	base := Now()
	late.Acquire(base - int64(time.Second))
	_, done := queueUp(t, s, []*Lease{onTime}, []int64{base + int64(DemotionPenalty/2)})
	late.Yield()
	if s.Stats().Waiting != 0 {
		t.Fatal("late work kept the slot from work that can be on time")
	}
	late.Release()
	done.Wait()
}

// TestYieldDemotesLongWork: work that has held its slot for many quanta
// gives it to waiting work due later than it (within DemotionPenalty),
// which has not.
func TestYieldDemotesLongWork(t *testing.T) {
	s := New(Options{Slots: 1, Quantum: time.Microsecond})
	long := s.NewCall(nil).NewLease()
	short := s.NewCall(nil).NewLease()
	base := Now()
	long.Acquire(base + int64(DemotionPenalty/10))
	_, done := queueUp(t, s, []*Lease{short}, []int64{base + int64(DemotionPenalty/2)})
	for Now()-long.started <= longDemotion*int64(time.Microsecond) {
	}
	long.Yield()
	if s.Stats().Waiting != 0 {
		t.Fatal("work that ran for many quanta kept the slot from short work")
	}
	long.Release()
	done.Wait()
}

// TestDemotedWorkIsNotStarved: work of a call over its share waits behind
// work due up to DemotionPenalty after it, not behind work due later.
func TestDemotedWorkIsNotStarved(t *testing.T) {
	s := New(Options{Slots: 1})
	holder := s.NewCall(nil).NewLease()
	holder.Acquire(Now())
	heavy := s.NewCall(nil)
	heavy.add(int64(900*time.Millisecond), Now())
	base := Now() + int64(time.Minute)
	order, done := queueUp(t, s, []*Lease{heavy.NewLease(), s.NewCall(nil).NewLease(), s.NewCall(nil).NewLease()},
		[]int64{base, base + int64(DemotionPenalty/2), base + 2*int64(DemotionPenalty)})
	holder.Release()
	done.Wait()
	if got, want := order(), []int{1, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("slot went to %v (0 over its share), want %v", got, want)
	}
}

func TestSlotsBoundConcurrency(t *testing.T) {
	const slots, workers = 2, 8
	s := New(Options{Slots: slots})
	var mu sync.Mutex
	running, most := 0, 0
	var wg sync.WaitGroup
	for range workers {
		l := s.NewCall(nil).NewLease()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				l.Acquire(Now())
				mu.Lock()
				running++
				most = max(most, running)
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
				running--
				mu.Unlock()
				l.Release()
			}
		}()
	}
	wg.Wait()
	if most > slots {
		t.Fatalf("%d leases held slots at once, want at most %d", most, slots)
	}
	if free := freeSlots(s); free != slots {
		t.Fatalf("%d slots free at the end, want %d", free, slots)
	}
}

// TestChargesAreThreadCPUTimeAfterATick: work that reached its plugin's
// budget tick (Yield) is charged the thread's CPU time from there, and
// the call's total is what was charged.
func TestChargesAreThreadCPUTimeAfterATick(t *testing.T) {
	var charged int64
	s := New(Options{Slots: 1})
	l := s.NewCall(func(ns int64) { charged += ns }).NewLease()
	l.Acquire(Now())
	l.Yield()
	if !l.onCPU {
		t.Fatal("the first tick did not switch the hold to the thread's CPU time")
	}
	// Burn CPU until the thread's clock shows 5 ms.
	for start := ThreadCPUTime(); ThreadCPUTime()-start < 5*time.Millisecond; {
	}
	l.Release()
	if charged < int64(5*time.Millisecond) {
		t.Fatalf("charged %v for 5ms of CPU", time.Duration(charged))
	}
	if got := l.call.CPU(); got != time.Duration(charged) {
		t.Fatalf("call's CPU %v, want the %v charged", got, time.Duration(charged))
	}
}

// TestAWallTimeChargeOverMeasureAboveIsMeasuredAfter: a hold that ends
// before a tick is charged in wall time, which counts a thread that was
// descheduled (here: asleep) as busy; once that passes MeasureAbove, the
// window is emptied of it and every hold after is charged the thread's
// CPU time, so the call's use is what it really used.
func TestAWallTimeChargeOverMeasureAboveIsMeasuredAfter(t *testing.T) {
	s := New(Options{Slots: 1, MeasureAbove: 0.01})
	c := s.NewCall(nil)
	l := c.NewLease()
	idleHold := func() {
		l.Acquire(Now())
		time.Sleep(20 * time.Millisecond) // the work under test: a hold that uses no CPU
		l.Release()
	}
	idleHold()
	if c.Usage() != 0 || !c.measured.Load() {
		t.Fatalf("after 20 ms of wall time over a 10 ms mark: use %v, measured %v; want the window emptied and the call measured", c.Usage(), c.measured.Load())
	}
	idleHold()
	if u := c.Usage(); u >= 0.005 {
		t.Fatalf("a measured call asleep for 20 ms charged %.1f ms", u*1000)
	}
	l.Acquire(Now())
	for start := ThreadCPUTime(); ThreadCPUTime()-start < 20*time.Millisecond; {
	}
	l.Release()
	if u := c.Usage(); u < 0.02 {
		t.Fatalf("a measured call that used 20 ms of CPU charged %.1f ms", u*1000)
	}
}

// TestAHoldInWallTimeEndsUnchargedOnceTheCallIsMeasured: of a call's two
// leases, one holds its slot in wall time while the other's charge makes
// the call measured; what the first held in wall time is not charged
// after the switch, since on a starved machine it is time descheduled.
func TestAHoldInWallTimeEndsUnchargedOnceTheCallIsMeasured(t *testing.T) {
	s := New(Options{Slots: 2, MeasureAbove: 0.01})
	c := s.NewCall(nil)
	in, out := c.NewLease(), c.NewLease()
	out.Acquire(Now())
	in.Acquire(Now())
	time.Sleep(20 * time.Millisecond) // the work under test: holds that use no CPU
	in.Release()
	if !c.measured.Load() || c.Usage() != 0 {
		t.Fatalf("after 20 ms of wall time over a 10 ms mark: measured %v, use %v; want measured and the window emptied", c.measured.Load(), c.Usage())
	}
	out.Release()
	if u := c.Usage(); u >= 0.005 {
		t.Fatalf("the other lease's 20 ms in wall time charged %.1f ms after the call was measured", u*1000)
	}
}

func TestAcquireReleaseAllocatesNothing(t *testing.T) {
	s := New(Options{Slots: 1})
	l := s.NewCall(nil).NewLease()
	if n := testing.AllocsPerRun(1000, func() {
		l.Acquire(Now())
		l.Yield()
		l.Release()
	}); n != 0 {
		t.Fatalf("%v allocations per acquisition", n)
	}
}

func freeSlots(s *Scheduler) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.free
}
