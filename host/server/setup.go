package server

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// DefaultSetupWait is how long a new call may wait for a set-up slot
// before it is refused. The default pipeline sets up in about half a
// millisecond and a Go guest in 2–3 ms, so a queue seconds long means
// thousands of calls arriving at once or plugins that are slow to start:
// either way this host is the wrong place for more. (Under the race
// detector, 200 calls dialling at once waited up to 1.6 s.)
const DefaultSetupWait = 2 * time.Second

// DefaultMaxSetups is how many call set-ups may run at once by default:
// one fewer than the cores Go runs on (GOMAXPROCS), and at least one. A
// set-up runs each plugin's start function, _initialize and vox_init, and
// each may take up to the runtime's init budget; a burst of calls whose
// set-ups took every core would make the frames of the calls already
// running late, so one core is always left to them.
func DefaultMaxSetups() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// setupGate is a counting semaphore for call set-ups.
type setupGate struct{ slots chan struct{} }

func newSetupGate(n int) *setupGate { return &setupGate{slots: make(chan struct{}, n)} }

// processSetups is the gate of every Server that leaves MaxSetups at 0:
// the cores it protects belong to the process, not to one server. It is
// sized when first used.
var processSetups = sync.OnceValue(func() *setupGate { return newSetupGate(DefaultMaxSetups()) })

// acquire takes a slot, waiting at most wait (no limit if wait is 0) and
// no longer than until done is closed. It says whether it got one.
func (g *setupGate) acquire(wait time.Duration, done <-chan struct{}) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case g.slots <- struct{}{}:
		return true
	case <-timeout:
	case <-done:
	}
	return false
}

func (g *setupGate) release() { <-g.slots }

// setupRefusal is what a call refused for want of a set-up slot is told.
func (s *Server) setupRefusal() string {
	return fmt.Sprintf("overloaded: no call set-up slot free within %v (set-ups run %d at a time); try again later", s.opts.SetupWait, cap(s.setups.slots))
}
