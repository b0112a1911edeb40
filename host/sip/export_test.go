package sip

import "github.com/voxhost/voxhost/internal/hosttest"

// SetRinging holds every call between its 180 Ringing and its answer
// until f returns (nil: answer at once); cancelled closes on the caller's
// CANCEL.
func SetRinging(f func(cancelled <-chan struct{})) {
	if f == nil {
		testRinging.Store(nil)
		return
	}
	testRinging.Store(&f)
}

// waitFor polls a condition: the tests wait on conditions, never on the
// machine's speed.
var waitFor = hosttest.WaitFor

// WaitFor is waitFor for the package's external tests.
var WaitFor = waitFor
