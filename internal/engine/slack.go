package engine

import (
	"sync/atomic"
	"time"
)

// A slack is how much sooner than its caller's deadline, beyond a round
// trip and a millisecond, a waiter stops counting as queued (see
// entryExpiry): on a busy machine a hand-off can take longer to reach a
// waiter than a call takes, and one that comes after the caller gave up
// wastes a release and a round trip. It grows by a millisecond, up to
// maxSlack, each time a hand-off reaches a waiter that gave up at the
// deadline its entry was cut to, and shrinks by a 32nd each time a waiter
// takes one, or is kept out of the queue by it. Safe for concurrent use.
type slack struct{ ns atomic.Int64 }

// maxSlack bounds a slack.
const maxSlack = 100 * time.Millisecond

// get returns the slack.
func (s *slack) get() time.Duration { return time.Duration(s.ns.Load()) }

// late hears of a hand-off that came too late.
func (s *slack) late() {
	for {
		old := s.ns.Load()
		if s.ns.CompareAndSwap(old, min(old+int64(time.Millisecond), int64(maxSlack))) {
			return
		}
	}
}

// taken hears of a hand-off a waiter took; a lost race loses one step.
func (s *slack) taken() {
	if old := s.ns.Load(); old > 0 {
		s.ns.CompareAndSwap(old, old-old/32-1)
	}
}
