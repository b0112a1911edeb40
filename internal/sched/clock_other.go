//go:build !linux

package sched

import "time"

// ThreadCPUTime falls back to the monotonic clock where the host has no
// per-thread CPU clock: descheduled time then counts against budgets and
// shares.
func ThreadCPUTime() time.Duration { return time.Since(clockBase) }
