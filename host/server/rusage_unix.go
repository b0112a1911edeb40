//go:build unix

package server

import (
	"syscall"
	"time"
)

// rusageCPU is the process's CPU time: getrusage(RUSAGE_SELF), one
// system call and no allocation.
func rusageCPU() (time.Duration, error) {
	var ru syscall.Rusage
	err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), err
}
