//go:build unix

package server

import (
	"syscall"
	"time"
)

// rusage reads the process's CPU time with getrusage(RUSAGE_SELF).
type rusage struct{}

func (rusage) CPUTime() (time.Duration, time.Time, error) {
	var ru syscall.Rusage
	err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Now(), err
}
