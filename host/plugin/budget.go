package plugin

import (
	"context"
	"errors"
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
// otherwise: a stop flag set by a watchdog goroutine hangs the process when
// the garbage collector starts while a plugin loops, or when as many
// plugins loop as there are Ps (RATIONALE.md has the measurements).

// unmetered, for the overhead benchmark only (export_test.go), compiles
// modules without the fuel checks: a looping plugin then hangs its call.

// startExport names the start function in errors.
const startExport = "the start function"

// budgetState is an instance's part of budget enforcement.
type budgetState struct {
	// calls counts the calls into the instance, so that the tick knows a
	// new call from the one it saw last.
	calls uint64
	// budget caps each call once the instance is set up; limit caps the
	// call under way (the init budget during set-up).
	budget time.Duration
	limit  time.Duration
	// tickCall is the call the last tick belonged to, tickLast the time of
	// that tick and ran how long the call has run since its first tick.
	tickCall   uint64
	tickLast   time.Duration
	ran        time.Duration
	overBudget bool
}

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
	if in.ran >= in.limit {
		in.overBudget = true
		panic(errBudget)
	}
}

// call calls fn with the instance's stack, under its budget.
func (in *Instance) call(fn api.Function) error {
	in.calls++
	in.hostCalls = 0
	return fn.CallWithStack(in.ctx, in.stack)
}
