package uncomplicated

import (
	"context"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
)

// A Leader is the leader of an Election, as Redis shows it: what
// Election.Leader returns and Election.Observe receives.
type Leader struct {
	// Value is what the leader announced in Campaign.
	Value string
	// Fence is the fence of the leader's hold: it rises with every new
	// leader, so it tells leaders apart and which came later.
	Fence uint64
	// Since is when the leader was elected, by Redis's clock.
	Since time.Time
}

// leaderOf is the engine's Leader l, as users see it. The two have the
// same fields, so a field added to one alone fails to build here.
func leaderOf(l engine.Leader) Leader { return Leader(l) }

// An Election elects one leader among the processes that campaign in it.
// Make one with Client.Election. It is safe for concurrent use: it leads
// once at a time, and its Lead calls run one after the other.
type Election struct{ e *engine.Election }

// inner is e's lock in the engine; nil for a nil Election.
func (e *Election) inner() *engine.Election {
	if e == nil {
		return nil
	}
	return e.e
}

// Election returns the Election name on c, with opts over c's options. Its
// lock lives in a key space of its own, so it never meets a Mutex named
// name. Its lease, unless WithLease (here or on c) sets one, is 15s, or
// twice the timeout if shorter, so that a leader that died or froze makes
// way within it. A leader stuck for its timeout is taken over, unless
// WithTakeOver(false) says otherwise: campaigning for ever behind a frozen
// leader is rarely what anyone wants. The leader's hold is always
// refreshed, every third of the lease (or of the timeout, if shorter)
// unless WithAutoRefresh says otherwise (a period too long for the
// default lease is ignored), and so needs a lease. An empty
// name, a lease of 0 or a bad option gives an error wrapping
// ErrInvalidArgument.
func (c *Client) Election(name string, opts ...Option) (*Election, error) {
	inner, err := c.inner().Election(name, options(opts)...)
	if err != nil {
		return nil, err
	}
	return &Election{inner}, nil
}

// Name returns the Redis key of the election's lock, such as
// lock:election:scheduler.
func (e *Election) Name() string {
	return e.inner().Name()
}

// Campaign blocks until this process leads, announcing value (at most 64
// bytes, as a holder label, which anyone who can read Redis can read). An
// Election that already leads returns nil at once, its value unchanged. It
// returns an error wrapping ErrNotObtained and the cause when ctx ends or
// the Client closes first, or Redis fails as it fails Mutex.Lock (which
// waits out a restart or failover). Closing the Client ends the
// leadership: it resigns, and Close waits for that.
func (e *Election) Campaign(ctx context.Context, value string) error {
	return e.inner().Campaign(ctx, value)
}

// Resign gives leadership up, and hands it to the oldest campaigner at
// once. It returns an error wrapping ErrNotHeld when this Election does not
// lead, and ErrLost too when its leadership was lost meanwhile.
func (e *Election) Resign(ctx context.Context) error {
	return e.inner().Resign(ctx)
}

// Leader returns the current leader, or an error wrapping ErrNoLeader when
// there is none. It costs Redis one GET.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	l, err := e.inner().Leader(ctx)
	return leaderOf(l), err
}

// Observe returns a channel that receives the current leader at once, if
// there is one, and then every new leader, until ctx ends or the Client
// closes; then it is closed. It never receives a zero Leader, nor one
// leader twice in a row. Leaders that follow each other faster than the
// receiver reads may be coalesced, but the last is never missed; a new
// leader arrives within a second of its election, at once when its
// announcement reaches this Client.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	return engine.Observe(ctx, e.inner(), leaderOf)
}

// Lead campaigns with value, runs fn while leading and resigns when fn
// returns, also when fn panics (the panic then goes on). fn's ctx carries
// the leader's fence for FenceOf, and is cancelled when the leadership
// ends: lost (the error then wraps ErrLost), resigned, or ended by
// Client.Close. Lead calls on one Election run one after the other; an
// Election that already leads (an earlier Campaign) runs fn under that
// leadership, and resigns it. It returns Campaign's error without running
// fn, or fn's error joined with Resign's. The Resign ignores ctx's
// cancellation, as Do's unlock does.
func (e *Election) Lead(ctx context.Context, value string, fn func(ctx context.Context) error) (err error) {
	return e.inner().Lead(ctx, value, fn)
}

// Lost returns a channel that is closed when this process's leadership is
// known to be lost: a Refresh found another token or none, or the lease
// ended before one got through. Each leadership has its own channel; a
// Resign leaves it open. When this Election does not lead, Lost returns a
// closed channel.
func (e *Election) Lost() <-chan struct{} {
	return e.inner().Lost()
}

// IsLeader reports whether this process leads, as far as it knows: it has
// won a Campaign, not resigned, and not found its leadership lost.
func (e *Election) IsLeader() bool {
	return e.inner().IsLeader()
}
