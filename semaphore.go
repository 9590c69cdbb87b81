package uncomplicated

import (
	"context"

	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
)

// A Semaphore lets at most a given number of holders in at once, across
// processes. Each Acquire gets a Permit with its own token, lease and
// fence. A holder that dies gives its permit back when its lease ends; one
// that keeps its token for its patience (see WithTimeout) while a waiter
// waits is stale, and the waiter fails with ErrStale or, with WithTakeOver,
// evicts it and takes its permit. It is safe for concurrent use; make one
// with NewSemaphore. The zero value returns
// ErrInvalidArgument.
//
// The number of permits is the caller's: each attempt lets its caller in
// only while fewer holders than its own number are in. Processes that
// disagree on it each get what they ask for: one that asks for 5 gets in
// while 4 hold permits, even if the 4 asked for 3.
type Semaphore struct{ e *engine.Semaphore }

// inner is s's lock in the engine; nil for a nil Semaphore.
func (s *Semaphore) inner() *engine.Semaphore {
	if s == nil {
		return nil
	}
	return s.e
}

// NewSemaphore returns the Semaphore of obj with permits permits, named as
// New names a Mutex; opts override the Client's. Bad input, permits below 1
// or above 10,000 included, gives an error wrapping ErrInvalidArgument;
// nothing is sent to Redis.
func NewSemaphore[K any](c *Client, obj interface{ ID() K }, permits int, opts ...Option) (*Semaphore, error) {
	inner, err := engine.NewSemaphore(c.inner(), obj, permits, options(opts)...)
	if err != nil {
		return nil, err
	}
	return &Semaphore{inner}, nil
}

// Name returns the name of the semaphore, such as lock:orders.Order:42;
// its keys in Redis are derived from it.
func (s *Semaphore) Name() string {
	return s.inner().Name()
}

// Acquire waits for a permit. It tries at once and then after random
// sub-second ticks, and joins the semaphore's queue, so that a Release
// hands its permit to the oldest waiter. A holder that keeps one token for
// its patience is stale: Acquire then returns an error wrapping ErrStale,
// or with WithTakeOver evicts that holder and takes its permit, atomically and
// only if it is still there. Its errors wrap ErrNotObtained and their
// cause, as Mutex.Lock's do. On failure it holds no permit.
func (s *Semaphore) Acquire(ctx context.Context) (*Permit, error) {
	inner, err := s.inner().Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &Permit{inner}, nil
}

// TryAcquire makes one attempt and never waits nor takes over. It returns
// (nil, false, nil) when every permit is taken, and an error only when
// Redis fails (wrapping ErrNotObtained), the Client is closed or the input
// is invalid.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Permit, bool, error) {
	inner, ok, err := s.inner().TryAcquire(ctx)
	if inner == nil {
		return nil, ok, err
	}
	return &Permit{inner}, ok, err
}

// Do runs fn while holding a permit: Acquire, fn, Release, as Mutex.Do
// does with Lock and Unlock, auto-refresh and the lost signal included.
// fn's ctx carries the permit's fence for FenceOf.
func (s *Semaphore) Do(ctx context.Context, fn func(context.Context) error) error {
	return s.inner().Do(ctx, fn)
}

// TryDo runs fn as Do does if one attempt, as TryAcquire makes it, gets a
// permit; see Mutex.TryDo.
func (s *Semaphore) TryDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	return s.inner().TryDo(ctx, fn)
}

// A Permit is one holder's share of a Semaphore. It is safe for concurrent
// use.
type Permit struct{ e *engine.Permit }

// inner is p's lock in the engine; nil for a nil Permit.
func (p *Permit) inner() *engine.Permit {
	if p == nil {
		return nil
	}
	return p.e
}

// Release gives the permit back, handing it to the semaphore's oldest
// waiter. It
// returns an error wrapping ErrLost and ErrNotHeld when Redis no longer has
// it (its lease ended, or a waiter took it over), and ErrNotHeld when it
// was released already. The permit ends in this process whatever Redis
// answers. After Client.Close it still releases, and reports ErrClosed as
// well.
func (p *Permit) Release(ctx context.Context) error {
	return p.inner().Release(ctx)
}

// Refresh proves the holder alive: it gives the permit a new token, which
// tells waiters it is busy rather than stuck, and restarts its lease. The
// fence does not change. It returns an error wrapping ErrLost and
// ErrNotHeld when Redis no longer has the permit.
func (p *Permit) Refresh(ctx context.Context) error {
	return p.inner().Refresh(ctx)
}

// Held asks Redis whether it still has the permit. It returns (false, nil)
// when not, which also closes Lost's channel, and after Release.
func (p *Permit) Held(ctx context.Context) (bool, error) {
	return p.inner().Held(ctx)
}

// Fence returns the permit's fencing token: higher than that of every
// permit of this semaphore acquired before it.
func (p *Permit) Fence() uint64 {
	return p.inner().Fence()
}

// Lost returns a channel closed when the permit is known to be lost. That
// is when Refresh, Held or Release found it gone, Do's auto-refresh could
// not renew it in time, or the Client saw Redis restart without it. After
// Release it returns a closed channel.
func (p *Permit) Lost() <-chan struct{} {
	return p.inner().Lost()
}
