package uncomplicated

import "github.com/uncomplicated-mutex/uncomplicated/internal/config"

// The tick. A waiter tries again after a random sleep below a tick,
// whether or not a hand-off wakes it; its place in the queue counts it
// alive for a few ticks after each attempt; its patience with a holder
// counts in the same clock's time (WithClock). The ticks are sub-second,
// so a stuck or dead waiter costs the others little, and random, so that
// the waiters of many processes do not try in step. The engine keeps the
// schedule (internal/config).

// WithTicks sets how finely a waiter divides the timeout. Between attempts
// it sleeps a random time below min(timeout/ticks, 1s), a bound raised to
// 1ms if smaller. Default 100; must be positive.
func WithTicks(n int) Option {
	return Option(config.WithTicks(n))
}
