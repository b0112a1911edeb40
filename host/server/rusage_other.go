//go:build !unix

package server

import (
	"errors"
	"runtime"
	"time"
)

// rusageCPU has no getrusage to call here.
func rusageCPU() (time.Duration, error) {
	return 0, errors.New("no getrusage on " + runtime.GOOS)
}
