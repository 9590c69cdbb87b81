package engine

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// The tick schedule. A waiter tries again after a random sleep below a
// tick, whether or not a hand-off wakes it; its queue entry counts it
// alive for a few ticks after each attempt; its patience with a holder
// (see patience) counts in the same clock's time. The ticks are
// sub-second, so a stuck or dead waiter costs the others little, and
// random, so waiters of many processes do not try in step.

// tick is the bound of the random sleep between two attempts.
func (c *config) tick() time.Duration {
	return max(min(c.timeout/time.Duration(c.ticks), maxTick), minTick)
}

// sleep is a waiter's random sleep between two attempts, below a tick.
func (c *config) sleep() time.Duration {
	return jitter(c.tick())
}

// expiry is how long a waiter counts as alive after each of its attempts
// (see internal/lua/queue_wait.lua): three ticks and a tenth of a second, so that its next
// attempt, a random time below a tick later, always comes first, while a
// waiter that died holds the queue up only briefly.
func (c *config) expiry() time.Duration {
	return 3*c.tick() + 100*time.Millisecond
}

// jitter returns a random duration in [0, bound), or 0 when bound is not
// positive.
func jitter(bound time.Duration) time.Duration {
	if bound <= 0 {
		return 0
	}
	return rand.N(bound)
}

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

// maxClaim bounds a claim (see Claims, in hold.go).
const maxClaim = time.Second

// claim is how long a hand-off holds the lock for the waiter until the
// waiter takes it: a second, and never more than the lease. It is a whole
// number of milliseconds, at least one.
func (c *config) claim() time.Duration {
	d := maxClaim
	if c.lease > 0 {
		d = min(d, c.lease)
	}
	return max(d.Truncate(time.Millisecond), time.Millisecond)
}

// claims reports whether a hand-off's claim is shorter than the lease, so
// that the holder must take it.
func (c *config) claims() bool {
	return c.lease == 0 || c.claim().Milliseconds() < c.leaseMillis()
}
