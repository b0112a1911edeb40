package sip

import (
	"testing"
	"time"
)

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

// waitFor polls cond until it holds or a minute passes: the tests wait
// on conditions, never on the machine's speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitFor is waitFor for the package's external tests.
var WaitFor = waitFor
