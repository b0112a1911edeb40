//go:build !linux

package bench

import (
	"errors"
	"os/exec"
)

// cpuSet stands for the cores set apart, which only Linux pins.
type cpuSet struct{}

// splitCores sets no core apart: pinning is Linux's.
func splitCores() (server int, others cpuSet, ok bool) { return 0, cpuSet{}, false }

func pinSelf(cpuSet) (func(), error) { return nil, errors.New("pinning needs Linux") }

func startPinned(cmd *exec.Cmd, _ int) error { return cmd.Start() }
