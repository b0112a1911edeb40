package plugin

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/host/preempt"
)

// Budgets. Every module is instrumented at load time (host/preempt): each
// loop and each function that makes calls starts by subtracting its size
// from a fuel counter, and calls the host function below, the tick, when
// the fuel runs out: every 15 µs to a millisecond of plugin code (see
// preempt.Refill). The tick runs on the goroutine of the call. The first
// tick of a call notes the time; a later one that finds the call has run
// for longer than its budget panics, which wazero turns into a trap, and
// the call fails with KindBudget. A call that ends before it has used one
// tank of fuel costs nothing but the checks: no clock is read and no other
// goroutine is told (see RATIONALE.md for what the alternatives cost).
//
// Because the guest leaves its compiled code at every tick, a plugin that
// loops forever still lets the Go scheduler preempt its goroutine and the
// garbage collector stop the world. Go cannot preempt compiled WebAssembly
// otherwise: a stop flag set by a watchdog goroutine (enforceFlag, kept to
// measure it) hangs the process when the garbage collector starts while a
// plugin loops, or when as many plugins loop as there are Ps.

// enforcement is how budgets are enforced. Only enforceFuel is meant for
// production; the others exist so the benchmarks of RATIONALE.md measure
// the alternatives in one run (export_test.go).
type enforcement uint8

const (
	// enforceFuel: fuel checks and the tick, above.
	enforceFuel enforcement = iota
	// enforceNone: no instrumentation; a looping plugin hangs its call.
	enforceNone
	// enforceFlag: preempt.Flag checks of a global that a watchdog
	// goroutine sets.
	enforceFlag
	// enforceContext: wazero's WithCloseOnContextDone, each instance
	// calling with its own context, which the watchdog cancels.
	enforceContext
)

func (e enforcement) instrumentation() (preempt.Mode, bool) {
	switch e {
	case enforceFuel:
		return preempt.Fuel, true
	case enforceFlag:
		return preempt.Flag, true
	}
	return 0, false
}

// startExport names the start function in errors.
const startExport = "the start function"

// budgetState is an instance's part of budget enforcement.
type budgetState struct {
	// calls counts the calls into the instance, so that the tick knows a
	// new call from the one it saw last.
	calls uint64
	// budget caps each call once the instance is set up; limit, in
	// nanoseconds, caps the call under way (the init budget during set-up).
	// limit is atomic only for the watchdog of the alternatives.
	budget time.Duration
	limit  atomic.Int64
	// tickCall is the call the last tick belonged to, tickLast the time of
	// that tick and ran how long the call has run since its first tick.
	tickCall   uint64
	tickLast   time.Duration
	ran        time.Duration
	overBudget bool

	// The watchdog alternatives: busy is the running call's number, 0 when
	// idle, with killBit once the watchdog has claimed the call; killSet
	// says it has set the flag or cancelled the context since.
	watched  bool
	busy     atomic.Uint64
	killSet  atomic.Bool
	stopFlag api.MutableGlobal
	cancel   context.CancelFunc
	// wdCall and wdSeen belong to the watchdog goroutine: the call it saw
	// running and when it first saw it.
	wdCall uint64
	wdSeen time.Time
}

const killBit = 1 << 63

// maxTickGap caps what the time between two ticks of a call adds to the
// time it ran. A tick follows the last within about a millisecond of
// running plugin code at most; a longer gap is time the goroutine spent
// descheduled (the tick and host functions are points where Go may preempt
// it; the OS may preempt it anywhere), which must not count against the
// plugin. Plugin code slower per unit of fuel (cache misses on every load)
// is stopped later, not sooner, than its budget.
const maxTickGap = time.Millisecond

// clockBase makes monotonic readings small durations.
var clockBase = time.Now()

// errBudget is what the tick panics with; the instance's overBudget flag,
// not the error, tells the host what happened.
var errBudget = errors.New("CPU budget exceeded")

// instantiateBudgetModule provides preempt.ImportModule, the host side of
// the instrumentation.
func (r *Runtime) instantiateBudgetModule(ctx context.Context) error {
	_, err := r.rt.NewHostModuleBuilder(preempt.ImportModule).
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(budgetTick), nil, []api.ValueType{api.ValueTypeI32}).
		Export(preempt.ImportTick).
		Instantiate(ctx)
	return err
}

// budgetTick refills the fuel of a call, or stops the call when it has run
// for longer than its limit since its first tick.
func budgetTick(ctx context.Context, stack []uint64) {
	stack[0] = preempt.Refill
	in := callerOf(ctx)
	if in == nil {
		return
	}
	now := time.Since(clockBase)
	if in.tickCall != in.calls {
		in.tickCall, in.tickLast, in.ran = in.calls, now, 0
		return
	}
	in.ran += min(now-in.tickLast, maxTickGap)
	in.tickLast = now
	if in.ran >= time.Duration(in.limit.Load()) {
		in.overBudget = true
		panic(errBudget)
	}
}

// call calls fn with the instance's stack, under its budget.
func (in *Instance) call(fn api.Function) error {
	in.calls++
	if in.watched {
		return in.callWatched(fn)
	}
	return fn.CallWithStack(in.ctx, in.stack)
}

// callWatched is call for the watchdog alternatives: two atomic operations
// per call tell the watchdog which call runs since when.
func (in *Instance) callWatched(fn api.Function) error {
	in.busy.Store(in.calls)
	err := fn.CallWithStack(in.ctx, in.stack)
	if in.busy.Swap(0)&killBit == 0 {
		return err
	}
	// The watchdog claimed this call; wait until it has acted.
	for !in.killSet.Load() {
		runtime.Gosched()
	}
	in.killSet.Store(false)
	if err != nil {
		in.overBudget = true
		return err
	}
	// The call returned just as the watchdog stopped it: undo the stop.
	if in.stopFlag != nil {
		in.stopFlag.Set(0)
	}
	return nil
}

// watchdog checks the busy instances of a runtime every millisecond, for
// the alternatives that need one.
type watchdog struct {
	mu        sync.Mutex
	instances map[*Instance]struct{}
	wake      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newWatchdog() *watchdog {
	w := &watchdog{instances: map[*Instance]struct{}{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *watchdog) add(in *Instance) {
	w.mu.Lock()
	w.instances[in] = struct{}{}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watchdog) remove(in *Instance) {
	w.mu.Lock()
	delete(w.instances, in)
	w.mu.Unlock()
}

func (w *watchdog) close() { w.closeOnce.Do(func() { close(w.done) }) }

// run ticks while there are instances to watch and sleeps otherwise.
func (w *watchdog) run() {
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	for {
		w.mu.Lock()
		idle := len(w.instances) == 0
		w.mu.Unlock()
		if idle {
			select {
			case <-w.wake:
			case <-w.done:
				return
			}
		}
		select {
		case now := <-ticker.C:
			w.check(now)
		case <-w.done:
			return
		}
	}
}

// check stops every call that has been running for longer than its limit
// since the watchdog first saw it.
func (w *watchdog) check(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for in := range w.instances {
		call := in.busy.Load()
		if call == 0 || call&killBit != 0 {
			in.wdCall = 0
			continue
		}
		if call != in.wdCall {
			in.wdCall, in.wdSeen = call, now
			continue
		}
		if now.Sub(in.wdSeen) < time.Duration(in.limit.Load()) || !in.busy.CompareAndSwap(call, call|killBit) {
			continue
		}
		if in.stopFlag != nil {
			in.stopFlag.Set(1)
		}
		if in.cancel != nil {
			in.cancel()
		}
		in.killSet.Store(true)
	}
}
