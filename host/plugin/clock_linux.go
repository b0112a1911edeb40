package plugin

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTime is Linux's CLOCK_THREAD_CPUTIME_ID.
const clockThreadCPUTime = 3

// threadCPUTime is the CPU time the calling thread has used. The budget
// counts it rather than the wall clock: a call whose thread the kernel
// deschedules, on a host busy with other work, has not used its budget
// meanwhile. The check that first reads it locks the goroutine to its
// thread for the rest of the call (checkBudget), so that every later
// reading is of the same thread, and of this call's work only. A raw
// system call: it takes a few hundred nanoseconds and never blocks, and a
// check comes at most every 15 µs of plugin code.
func threadCPUTime() time.Duration {
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return time.Since(clockBase)
	}
	return time.Duration(ts.Nano())
}
