package uncomplicated

import (
	"context"
	"fmt"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// MaxPermits bounds the permits of a Semaphore: a waiter's every attempt
// reads the tokens of all holders.
const MaxPermits = 10000

// A Semaphore lets at most a given number of holders in at once, across
// processes: each Acquire gets a Permit with its own token, lease and
// fence. A holder that dies gives its permit back when its lease ends; one
// that keeps its token for the whole timeout while a waiter waits is
// stale, and the waiter fails with ErrStale or, with TakeOver, evicts it
// and takes its permit. It is safe for concurrent use; make one with
// NewSemaphore or Client.NamedSemaphore. The zero value returns
// ErrInvalidArgument.
//
// The number of permits is the caller's: each attempt lets its caller in
// only while fewer holders than its own number are in. Processes that
// disagree on it each get what they ask for: one that asks for 5 gets in
// while 4 hold permits, even if the 4 asked for 3.
type Semaphore struct {
	base
	permits int
	intent  int64  // ms a waiter counts as waiting after each attempt
	keys    [4]any // the holders, their fences, the fence counter and the waiters
	channel string
}

// NewSemaphore returns the Semaphore of obj with permits permits, named as
// New names a Mutex; opts override the Client's. It returns an error
// wrapping ErrInvalidID or ErrInvalidArgument (permits below 1 or above
// MaxPermits) for bad input; nothing is sent to Redis.
func NewSemaphore[K any](c *Client, obj Identifier[K], permits int, opts ...Option) (*Semaphore, error) {
	return c.semaphore(permits, opts, func(prefix string) (string, error) { return objectName(prefix, obj) })
}

// NamedSemaphore returns the Semaphore with a plain name, as Named does for
// a Mutex, and permits permits.
func (c *Client) NamedSemaphore(name string, permits int, opts ...Option) (*Semaphore, error) {
	return c.semaphore(permits, opts, func(prefix string) (string, error) { return plainName(prefix, name) })
}

func (c *Client) semaphore(permits int, opts []Option, name func(prefix string) (string, error)) (*Semaphore, error) {
	b, err := c.base(opts, name)
	if err != nil {
		return nil, err
	}
	if permits < 1 || permits > MaxPermits {
		return nil, fmt.Errorf("%w: permits must be 1 to %d, got %d", ErrInvalidArgument, MaxPermits, permits)
	}
	cfg, key := b.cfg, b.name
	s := &Semaphore{base: b, permits: permits, channel: broadcastChannel(cfg.prefix, key)}
	s.keys = [4]any{
		sharedKey(cfg.prefix, "permits", key), sharedKey(cfg.prefix, "fences", key),
		sharedKey(cfg.prefix, "semfence", key), sharedKey(cfg.prefix, "semwait", key),
	}
	s.intent = intentFor(cfg.tick())
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

// Permits returns the number of permits this Semaphore asks for.
func (s *Semaphore) Permits() int {
	if s == nil {
		return 0
	}
	return s.permits
}

// Acquire waits for a permit: it tries at once and then after random
// sub-second ticks, and at once whenever a permit is released. A holder
// that keeps one token for the whole timeout is stale: Acquire then
// returns an error wrapping ErrStale and ErrNotObtained, or with TakeOver
// evicts that holder and takes its permit, atomically and only if it is
// still there. When ctx ends or the Client closes first, Acquire returns an
// error wrapping ErrNotObtained and ctx.Err() or ErrClosed. On failure it
// holds no permit.
func (s *Semaphore) Acquire(ctx context.Context) (*Permit, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	obs, _ := s.cfg.clock.(settle.Observer)
	if obs != nil {
		obs.Waiting(1)
		defer obs.Waiting(-1)
	}
	token := newToken()
	a := acquisition{
		b: &s.base, what: permitKind.what, channel: s.channel, token: token, each: true,
		try: func(ctx context.Context, stale []string) (grant, error) {
			evict := ""
			if len(stale) > 0 {
				evict = stale[0]
			}
			return s.try(ctx, token, s.intent, evict)
		},
		leave: func(ctx context.Context) { // the waiting set twice: the script takes two
			s.background(ctx, leaveWaitScript, []any{s.keys[3], s.keys[3]}, s.channel, token)
		},
	}
	g, from, err := a.wait(ctx, obs)
	if err != nil {
		return nil, err
	}
	return s.permit(ctx, token, g.fence, from), nil
}

// TryAcquire makes one attempt and never waits nor takes over. It returns
// (nil, false, nil) when every permit is taken, and an error only when
// Redis fails or the input is invalid.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Permit, bool, error) {
	if err := s.ready(ctx); err != nil {
		return nil, false, err
	}
	token := newToken()
	from := s.cfg.clock.Now()
	g, err := s.try(ctx, token, 0, "")
	if err != nil || !g.ok {
		return nil, false, s.gaveUp(ctx, err)
	}
	return s.permit(ctx, token, g.fence, from), true, nil
}

// Do runs fn while holding a permit: Acquire, fn, Release, as Mutex.Do
// does with Lock and Unlock, auto-refresh and the lost signal included.
// fn's ctx carries the permit's fence for FenceOf.
func (s *Semaphore) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalidArgument)
	}
	p, err := s.Acquire(ctx)
	if err != nil {
		return err
	}
	return p.h.run(ctx, fn, func(ctx context.Context) error { return p.h.release(ctx, true) })
}

// try makes one attempt for token; intent is how long a blocked caller
// counts as waiting (0: not at all), evict a stale holder to evict.
func (s *Semaphore) try(ctx context.Context, token string, intent int64, evict string) (grant, error) {
	undo := func() { s.background(ctx, semReleaseScript, s.holdKeys(), s.channel, token) }
	return s.attempt(ctx, semAcquireScript, s.keys[:], undo, token, s.cfg.leaseMillis(), s.permits, evict, intent)
}

// holdKeys are the KEYS of a permit's scripts: the holders, their fences
// and the waiters.
func (s *Semaphore) holdKeys() []any {
	return []any{s.keys[0], s.keys[1], s.keys[3]}
}

func (s *Semaphore) permit(ctx context.Context, token string, fence uint64, from time.Time) *Permit {
	s.logAcquired(ctx, permitKind.what, fence)
	return &Permit{h: s.newHold(permitKind, s.holdKeys(), s.channel, token, fence, from)}
}

// check reports a nil or zero Semaphore and a nil ctx.
func (s *Semaphore) check(ctx context.Context) error {
	switch {
	case s == nil || s.c == nil:
		return fmt.Errorf("%w: nil or zero *Semaphore", ErrInvalidArgument)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	return nil
}

// ready is check, then whether the Client is open and ctx alive.
func (s *Semaphore) ready(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.open(ctx)
}

// A Permit is one holder's share of a Semaphore. It is safe for concurrent
// use.
type Permit struct {
	h *hold
}

// Release gives the permit back and wakes the semaphore's waiters. It
// returns an error wrapping ErrLost and ErrNotHeld when Redis no longer has
// it (its lease ended, or a waiter took it over), and ErrNotHeld when it
// was released already. The permit ends in this process whatever Redis
// answers.
func (p *Permit) Release(ctx context.Context) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	return p.h.release(ctx, false)
}

// Refresh proves the holder alive: it gives the permit a new token, which
// tells waiters it is busy rather than stuck, and restarts its lease. The
// fence does not change. It returns an error wrapping ErrLost and
// ErrNotHeld when Redis no longer has the permit.
func (p *Permit) Refresh(ctx context.Context) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	return p.h.Refresh(ctx)
}

// Held asks Redis whether it still has the permit. It returns (false, nil)
// when not, which also closes Lost's channel, and after Release.
func (p *Permit) Held(ctx context.Context) (bool, error) {
	if err := p.check(ctx); err != nil {
		return false, err
	}
	if p.h.b.c.closed() {
		return false, fmt.Errorf("%w: %s", ErrClosed, p.h.b.name)
	}
	if err := ctx.Err(); err != nil { // redigo may still send on an ended ctx
		return false, p.h.b.redisError(ctx, err)
	}
	return p.h.verify(ctx)
}

// Fence returns the permit's fencing token: higher than that of every
// permit of this semaphore acquired before it.
func (p *Permit) Fence() uint64 {
	if p == nil || p.h == nil {
		return 0
	}
	return p.h.fence
}

// Lost returns a channel closed when the permit is known to be lost:
// Refresh, Held or Release found it gone, Do's auto-refresh could not renew
// it in time, or the Client saw Redis restart without it. After Release it
// returns a closed channel.
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
