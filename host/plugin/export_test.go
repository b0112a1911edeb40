package plugin

import (
	"context"
	"fmt"
)

// NewRuntimeEnforcing is NewRuntime with budgets enforced another way, so
// tests and the benchmarks of RATIONALE.md can compare them in one run:
// "fuel" (what NewRuntime does), "none" (no instrumentation), "flag" (a
// stop flag a watchdog goroutine sets) or "context" (wazero's
// WithCloseOnContextDone, a context per instance that the watchdog cancels).
func NewRuntimeEnforcing(ctx context.Context, opts Options, how string) (*Runtime, error) {
	modes := map[string]enforcement{"fuel": enforceFuel, "none": enforceNone, "flag": enforceFlag, "context": enforceContext}
	e, ok := modes[how]
	if !ok {
		return nil, fmt.Errorf("unknown enforcement %q", how)
	}
	opts.enforcement = e
	return NewRuntime(ctx, opts)
}
