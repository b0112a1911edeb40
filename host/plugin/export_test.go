package plugin

import (
	"context"
	"fmt"

	"github.com/voxhost/voxhost/internal/sched"
)

// NewRuntimeEnforcing is NewRuntime with budgets enforced ("fuel", what
// NewRuntime does) or not ("none": no fuel checks), so the overhead
// benchmark of RATIONALE.md compares them in one run.
func NewRuntimeEnforcing(ctx context.Context, opts Options, how string) (*Runtime, error) {
	switch how {
	case "fuel":
	case "none":
		opts.unmetered = true
	default:
		return nil, fmt.Errorf("unknown enforcement %q (want fuel or none)", how)
	}
	return NewRuntime(ctx, opts)
}

// ThreadCPUTime is the clock budgets are counted on, for tests that check
// how much of it a stopped call used.
var ThreadCPUTime = sched.ThreadCPUTime

// KeptStackBytes is the machine stack a kept vox_process handle starts with.
const KeptStackBytes = keptStackBytes

// ProcessStackBytes is the length of in's vox_process machine stack, 0
// when the engine's layout is unknown.
func ProcessStackBytes(in *Instance) int { return stackBytes(in.process) }

// NewInterpreterRuntime is NewRuntime with plugins run by wazero's
// interpreter, whose function handles are not the compiler call engine
// rewritingEngine knows: the test of its fallback.
func NewInterpreterRuntime(ctx context.Context, opts Options) (*Runtime, error) {
	opts.interpreter = true
	return NewRuntime(ctx, opts)
}
