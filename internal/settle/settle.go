// Package settle is the contract between package uncomplicated and its test
// clock in uncomplicatedtest: a clock that implements Observer learns when
// waiters start waiting and when they sleep, so that a test can move time
// only once every waiter has done all it can at the current instant.
package settle

import "time"

// Observer is implemented by a clock that follows the library's waiters.
type Observer interface {
	// Waiting is called with +1 when a Lock call starts trying Redis and
	// with -1 when it returns.
	Waiting(delta int)
	// Park is called when a waiter is about to sleep until the given time,
	// on a timer of this clock. The waiter calls wake once it runs again,
	// whatever woke it.
	Park(until time.Time) (wake func())
}
