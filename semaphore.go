package uncomplicated

import (
	"context"
	"fmt"
	"strconv"

	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
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
type Semaphore struct {
	base
	permits int
	spec    *spec
}

// NewSemaphore returns the Semaphore of obj with permits permits, named as
// New names a Mutex; opts override the Client's. Bad input, permits below 1
// or above 10,000 included, gives an error wrapping ErrInvalidArgument;
// nothing is sent to Redis.
func NewSemaphore[K any](c *Client, obj interface{ ID() K }, permits int, opts ...Option) (*Semaphore, error) {
	return newSemaphore(c, obj, permits, opts)
}

// newSemaphore checks opts and permits, names obj's lock and makes its
// Semaphore.
func newSemaphore[K any](c *Client, obj interface{ ID() K }, permits int, opts []Option) (*Semaphore, error) {
	b, err := newBase(c, obj, opts)
	if err != nil {
		return nil, err
	}
	if permits < 1 || permits > limits.Permits {
		return nil, fmt.Errorf("%w: permits must be 1 to %d, got %d", ErrInvalidArgument, limits.Permits, permits)
	}
	s := &Semaphore{base: b, permits: permits}
	prefix, key := b.cfg.prefix, b.name
	s.spec = &spec{
		primitive: inspection.KindSemaphore, kind: permitKind,
		keys:    semKeysOf(prefix, key),
		channel: wakeChannel(prefix, key, c.id), acquire: lua.SemAcquire, takeOver: lua.SemAcquire,
		args: permitArgs, permits: permits,
		holder: permitKind, entry: strconv.Itoa(permits), each: true, who: "the same holders",
	}
	return s, nil
}

// Name returns the name of the semaphore, such as lock:orders.Order:42;
// its keys in Redis are derived from it.
func (s *Semaphore) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Acquire waits for a permit. It tries at once and then after random
// sub-second ticks, and joins the semaphore's queue, so that a Release
// hands its permit to the oldest waiter. A holder that keeps one token for
// its patience is stale: Acquire then returns an error wrapping ErrStale,
// or with WithTakeOver evicts that holder and takes its permit, atomically and
// only if it is still there. Its errors wrap ErrNotObtained and their
// cause, as Mutex.Lock's do. On failure it holds no permit.
func (s *Semaphore) Acquire(ctx context.Context) (*Permit, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var p *Permit
	if _, err := s.acquiring(ctx, "Acquire", inspection.KindSemaphore, s.acquireHold, permit(&p)); err != nil {
		return nil, err
	}
	return p, nil
}

// TryAcquire makes one attempt and never waits nor takes over. It returns
// (nil, false, nil) when every permit is taken, and an error only when
// Redis fails (wrapping ErrNotObtained), the Client is closed or the input
// is invalid.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Permit, bool, error) {
	if err := s.check(ctx); err != nil {
		return nil, false, err
	}
	var p *Permit
	ok, err := s.acquiring(ctx, "TryAcquire", inspection.KindSemaphore, s.tryHold, permit(&p))
	if !ok {
		return nil, false, err
	}
	return p, true, nil
}

// Do runs fn while holding a permit: Acquire, fn, Release, as Mutex.Do
// does with Lock and Unlock, auto-refresh and the lost signal included.
// fn's ctx carries the permit's fence for FenceOf.
func (s *Semaphore) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := s.check(ctx, fn); err != nil {
		return err
	}
	_, err := s.acquiring(ctx, "Do", inspection.KindSemaphore, s.acquireHold, s.run(fn))
	return err
}

// TryDo runs fn as Do does if one attempt, as TryAcquire makes it, gets a
// permit; see Mutex.TryDo.
func (s *Semaphore) TryDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if err := s.check(ctx, fn); err != nil {
		return false, err
	}
	return s.acquiring(ctx, "TryDo", inspection.KindSemaphore, s.tryHold, s.run(fn))
}

// acquireHold and tryHold acquire a permit's hold.
func (s *Semaphore) acquireHold(ctx context.Context, o *observing) (*hold, error) {
	return s.acquire(ctx, s.spec, nil, o)
}

func (s *Semaphore) tryHold(ctx context.Context, o *observing) (*hold, error) {
	return s.try(ctx, s.spec, nil, o)
}

// permit makes the Permit of a hold in *p.
func permit(p **Permit) func(context.Context, *hold) error {
	return func(_ context.Context, h *hold) error {
		*p = &Permit{h: h}
		return nil
	}
}

// run is the part of Do that follows the acquisition: fn, then Release.
func (s *Semaphore) run(fn func(context.Context) error) func(context.Context, *hold) error {
	return func(ctx context.Context, h *hold) error {
		return h.run(ctx, fn, func(ctx context.Context) error { return h.release(ctx, true) })
	}
}

// check reports a nil or zero Semaphore, a nil ctx and a nil fn.
func (s *Semaphore) check(ctx context.Context, fn ...func(context.Context) error) error {
	var b *base
	if s != nil {
		b = &s.base
	}
	return b.check("*Semaphore", ctx, fn...)
}

// A Permit is one holder's share of a Semaphore. It is safe for concurrent
// use.
type Permit struct {
	h *hold
}

// Release gives the permit back, handing it to the semaphore's oldest
// waiter. It
// returns an error wrapping ErrLost and ErrNotHeld when Redis no longer has
// it (its lease ended, or a waiter took it over), and ErrNotHeld when it
// was released already. The permit ends in this process whatever Redis
// answers. After Client.Close it still releases, and reports ErrClosed as
// well.
func (p *Permit) Release(ctx context.Context) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	return opError("Release", p.h.b.name, p.h.release(ctx, false))
}

// Refresh proves the holder alive: it gives the permit a new token, which
// tells waiters it is busy rather than stuck, and restarts its lease. The
// fence does not change. It returns an error wrapping ErrLost and
// ErrNotHeld when Redis no longer has the permit.
func (p *Permit) Refresh(ctx context.Context) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	return opError("Refresh", p.h.b.name, p.h.Refresh(ctx))
}

// Held asks Redis whether it still has the permit. It returns (false, nil)
// when not, which also closes Lost's channel, and after Release.
func (p *Permit) Held(ctx context.Context) (bool, error) {
	if err := p.check(ctx); err != nil {
		return false, err
	}
	held, err := p.h.Held(ctx)
	return held, opError("Held", p.h.b.name, err)
}

// Fence returns the permit's fencing token: higher than that of every
// permit of this semaphore acquired before it.
func (p *Permit) Fence() uint64 {
	if p == nil || p.h == nil {
		return 0
	}
	return p.h.fence
}

// Lost returns a channel closed when the permit is known to be lost. That
// is when Refresh, Held or Release found it gone, Do's auto-refresh could
// not renew it in time, or the Client saw Redis restart without it. After
// Release it returns a closed channel.
func (p *Permit) Lost() <-chan struct{} {
	if p == nil || p.h == nil {
		return closed
	}
	return p.h.Lost()
}

func (p *Permit) check(ctx context.Context) error {
	switch {
	case p == nil || p.h == nil:
		return fmt.Errorf("%w: nil or zero *Permit", ErrInvalidArgument)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	return nil
}
