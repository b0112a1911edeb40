package plugin

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/internal/preempt"
	"github.com/voxhost/voxhost/internal/sched"
)

// Budgets. Every module is instrumented at load time (internal/preempt): each
// loop and each function that makes calls starts by subtracting its size
// from a fuel counter, and calls the host function below, the tick, when
// the fuel runs out: every 15 µs to a millisecond of plugin code (see
// preempt.Refill). The tick runs on the goroutine of the call. The first
// check of a call notes the time; a later one that finds the call has run
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
	// checkedCall is the call the last check belonged to, started the
	// wall time of that call's first check, and cpuFrom the thread's CPU
	// time when the call began to be counted in CPU time (see checkBudget).
	checkedCall uint64
	started     time.Duration
	cpuFrom     time.Duration
	overBudget  bool
	// threadLocked: the call is counted in CPU time, on the thread it is
	// locked to, which call unlocks when the call returns.
	threadLocked bool
}

// clockBase makes monotonic readings small durations.
var clockBase = time.Now()

// errBudget is what a check panics with; the instance's overBudget flag,
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
// for longer than its limit since its first check.
func budgetTick(ctx context.Context, stack []uint64) {
	stack[0] = preempt.Refill
	if in := callerOf(ctx); in != nil {
		in.checkBudget()
	}
}

// checkBudget stops the call under way, by panicking, once it has run half
// its limit in wall time since its first check and then the other half in
// CPU time. The tick calls it, and so do host functions whose work grows
// with their arguments (WASI output and random bytes), as they go: their
// time counts like the plugin's own.
//
// All the time between two checks counts, however much: the
// instrumentation bounds the work between two checks, so a long gap is an
// operation the host did not see coming, never time to forgive (an earlier
// cap of 1 ms of wall time per gap let a loop of 16 MiB fills run for
// seconds). The second half is the thread's CPU time (sched.ThreadCPUTime), so a
// healthy plugin on a busy host, whose thread waits for a core, is not
// stopped for the host's business: a call gets at least half its budget of
// CPU time, and its whole budget when the host is not overloaded. The
// first half is the wall clock, which costs 50 ns a check where the
// thread's clock costs a system call of 700 ns: nearly every call that
// checks at all is over long before its first half is, and never pays for
// the thread's clock, nor for locking the goroutine to its thread, which
// the second half needs so that every reading is of the same thread.
func (in *Instance) checkBudget() {
	if in.yielder != nil {
		if waited := in.yielder.Yield(); waited > 0 && in.checkedCall == in.calls {
			in.started += waited // the wall-clock half counts running, not waiting
		}
	}
	now := time.Since(clockBase)
	if in.checkedCall != in.calls {
		in.checkedCall, in.started = in.calls, now
		return
	}
	half := in.limit / 2
	if now-in.started < half {
		return // the CPU time is no more than the wall time
	}
	if !in.threadLocked {
		runtime.LockOSThread()
		in.threadLocked = true
		in.cpuFrom = sched.ThreadCPUTime()
		return
	}
	if sched.ThreadCPUTime()-in.cpuFrom >= in.limit-half {
		in.overBudget = true
		panic(errBudget)
	}
}

// call calls fn with the instance's stack, under its budget.
func (in *Instance) call(fn api.Function) error {
	in.calls++
	in.hostCalls, in.outputBytes = 0, 0
	err := fn.CallWithStack(in.ctx, in.stack)
	if in.threadLocked {
		in.threadLocked = false
		runtime.UnlockOSThread()
	}
	return err
}
