package sip

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
