package sched

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTime is Linux's CLOCK_THREAD_CPUTIME_ID.
const clockThreadCPUTime = 3

// ThreadCPUTime is the CPU time the calling thread has used. The plugin
// budget and the scheduler's accounts count it rather than the wall clock:
// a call whose thread the kernel deschedules, on a host busy with other
// work, has not used its budget or its share meanwhile. Readings are of one
// call's work only while its goroutine is locked to its thread
// (runtime.LockOSThread), as Acquire and the budget's CPU half do. A raw
// system call: about 300 ns here, and it never blocks.
func ThreadCPUTime() time.Duration {
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return time.Since(clockBase)
	}
	return time.Duration(ts.Nano())
}
