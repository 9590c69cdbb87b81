// Package trace stamps the steps of a hand-off, for the benchmark
// module's -trace mode, which reads where a hand-off's time goes. Without a
// hook set, a stamp costs one atomic load.
package trace

import "sync/atomic"

// A Step is one step of a hand-off, stamped with the lock's name ("" where
// the step does not know it) and the token of the waiter handed the lock
// ("" before the release's reply names it).
type Step int

const (
	Unlock   Step = iota // the holder's Unlock (a release) began
	Sent                 // the release script is sent
	Reply                // its reply named the waiter handed the lock
	Read                 // the hand-off reached the waiter's Client: the listening connection read it, or the release's reply carried it
	Woken                // the waiter's sleep returned with it, trusted
	Returned             // the waiter's Lock returns
	Taken                // the waiter's Client took the claim (off the critical path)
)

// A Hook hears each step; it reads the clock itself.
type Hook func(step Step, lock, token string)

var hook atomic.Pointer[Hook]

// Set makes h hear every step, until the returned func restores the hook
// before. For the benchmark module and tests.
func Set(h Hook) (restore func()) {
	old := hook.Swap(&h)
	return func() { hook.Store(old) }
}

// Stamp tells the hook, if any, of step of a hand-off of lock to token.
func Stamp(step Step, lock, token string) {
	if h := hook.Load(); h != nil {
		(*h)(step, lock, token)
	}
}
