//go:build !unix

package server

import (
	"errors"
	"runtime"
	"time"
)

// rusage has no getrusage to call here.
type rusage struct{}

func (rusage) CPUTime() (time.Duration, time.Time, error) {
	return 0, time.Time{}, errors.New("no getrusage on " + runtime.GOOS)
}
