// Package settle is the contract between package uncomplicated and its test
// clock in uncomplicatedtest: a clock that implements Observer learns when
// waiters start waiting and when they sleep, so that a test can move time
// only once every waiter has done all it can at the current instant.
package settle

import "time"

// Observer is implemented by a clock that follows the library's waiters.
type Observer interface {
	// Waiting is called with +1 when a Lock call starts trying Redis, or a
	// release sends its script, and with -1 when it returns.
	Waiting(delta int)
	// Park is called when a waiter is about to sleep until the given time,
	// on a timer of this clock, or, when until is zero, until another
	// goroutine of its process unlocks. token is the waiter's token in
	// Redis, "" while it waits in its process. The waiter calls wake once
	// it runs again, whatever woke it.
	Park(until time.Time, token string) (wake func())
	// HandOff is called before an Unlock returns when it handed the lock to
	// the waiter with token: that waiter is about to wake, so the clock's
	// waiters have not settled until it does.
	HandOff(token string)
	// Due is called when the library schedules work of its own on a timer
	// of this clock, at the given time (a hold taking its claim): the
	// clock's waiters have not settled at or after that time until done
	// is called, once the work is over or will not run.
	Due(at time.Time) (done func())
}
