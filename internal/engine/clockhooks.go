package engine

import (
	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// What a clock that follows the waiters (see internal/settle) hears of a
// lock's releases.

// releasing tells a clock that follows the waiters (see settle) that a
// release is under way until done is called. The clock must not move while
// it runs: once it has stopped its hold's take, the hold's lease may be a
// claim only, and until it has told the clock whom it handed the lock to,
// the waiter it woke looks asleep.
func (b *base) releasing() (done func()) {
	obs, ok := b.cfg.clock.(settle.Observer)
	if !ok {
		return func() {}
	}
	obs.Waiting(1)
	return func() { obs.Waiting(-1) }
}

// handedOff tells a clock that follows the waiters (see settle) that a
// release handed the lock to the waiters of tokens, which are about to
// wake.
func (b *base) handedOff(tokens []string) {
	if obs, ok := b.cfg.clock.(settle.Observer); ok {
		for _, token := range tokens {
			obs.HandOff(token)
		}
	}
}
