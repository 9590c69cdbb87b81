package engine

import (
	"math/rand/v2"
	"time"
)

// The tick schedule. A waiter tries again after a random sleep below a
// tick, whether or not a hand-off wakes it; its queue entry counts it
// alive for a few ticks after each attempt; its patience with a holder
// (see patience) counts in the same clock's time. The ticks are
// sub-second, so a stuck or dead waiter costs the others little, and
// random, so waiters of many processes do not try in step.

// The bound of the random sleep between two attempts is timeout/ticks, but
// at most maxTick, so that a waiter never sleeps a second or more at a time,
// and at least minTick, so that no waiter spins on Redis.
const (
	maxTick = time.Second
	minTick = time.Millisecond
)

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

// expiryMillis is expiry in whole milliseconds, as Redis takes it.
func (c *config) expiryMillis() int64 {
	return c.expiry().Milliseconds()
}

// jitter returns a random duration in [0, bound), or 0 when bound is not
// positive.
func jitter(bound time.Duration) time.Duration {
	if bound <= 0 {
		return 0
	}
	return rand.N(bound)
}

// maxClaim bounds a claim (see claim.go).
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
