package bench

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// splitCores picks the last core this process may run on for a server and
// leaves it the others; ok is false with fewer than two.
func splitCores() (server int, others unix.CPUSet, ok bool) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() < 2 {
		return 0, others, false
	}
	server = -1
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			server = c
		}
	}
	others = set
	others.Clear(server)
	return server, others, true
}

// pinSelf confines every thread of this process to set (a thread the
// runtime starts later inherits it from the thread that starts it) and
// returns what puts each back where it was.
func pinSelf(set unix.CPUSet) (restore func(), err error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return nil, err
	}
	each := func(s *unix.CPUSet) error {
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, s); err != nil && err != unix.ESRCH {
				return err
			}
		}
		return nil
	}
	if err := each(&set); err != nil {
		_ = each(&was)
		return nil, err
	}
	return func() {
		if tasks, err = os.ReadDir("/proc/self/task"); err == nil {
			_ = each(&was)
		}
	}, nil
}

// startPinned starts cmd on core alone: the child inherits the affinity of
// the thread that forks it, so that thread is moved there for the fork.
func startPinned(cmd *exec.Cmd, core int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var was, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return err
	}
	one.Set(core)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return err
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &was); rerr != nil && err == nil {
		err = rerr
	}
	return err
}
