//go:build !linux

package plugin

import "time"

// threadCPUTime falls back to the monotonic clock where the host has no
// per-thread CPU clock: descheduled time then counts against the budget.
func threadCPUTime() time.Duration { return time.Since(clockBase) }
