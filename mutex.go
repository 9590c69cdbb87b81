package uncomplicated

import (
	"context"

	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
)

// A Mutex is one lock in Redis. It is safe for concurrent use: goroutines
// sharing a Mutex take turns as with sync.Mutex, and across processes one
// holder at a time has the lock, as long as its lease lasts. Make one with
// New; the zero value returns ErrInvalidArgument.
type Mutex struct {
	base
	x exclusive
}

// New returns the Mutex of obj's lock, named lock:<package>.<Type>:<ID>.
//
// Any domain object with an ID method can be locked: ID() int64, string,
// uuid.UUID...; the ID's fmt %v form names the lock. When obj also has a
// method LockType() string, its result replaces <package>.<Type>, so that
// the lock survives a rename of the Go package or type, and Go types with
// the same LockType share their locks; LockType "election" is the
// Elections'. opts override the Client's. Bad input (a nil obj, an ID that
// panics or prints empty, an empty LockType, a bad option) gives an error
// wrapping ErrInvalidArgument, and nothing is sent to Redis.
func New[K any](c *Client, obj interface{ ID() K }, opts ...Option) (*Mutex, error) {
	return newMutex(c, obj, opts)
}

// newMutex checks opts, names obj's lock and makes its Mutex.
func newMutex[K any](c *Client, obj interface{ ID() K }, opts []Option) (*Mutex, error) {
	b, err := newBase(c, obj, opts)
	if err != nil {
		return nil, err
	}
	return mutexOf(b), nil
}

// mutexOf makes the Mutex of the lock b names.
func mutexOf(b base) *Mutex {
	m := &Mutex{base: b}
	prefix, key, c := b.cfg.prefix, b.name, b.c
	m.x = exclusive{b: &m.base, sem: make(chan struct{}, 1), spec: &spec{
		primitive: inspection.KindMutex, kind: mutexKind,
		keys:    mutexKeysOf(prefix, key),
		channel: wakeChannel(prefix, key, c.id), acquire: lua.Acquire, takeOver: lua.TakeOver,
		args:   mutexArgs,
		writer: mutexKind, entry: entryExclusive, who: "one holder token",
	}}
	return m
}

// Name returns the Redis key of the lock, such as lock:orders.Order:42.
func (m *Mutex) Name() string {
	if m == nil {
		return ""
	}
	return m.name
}

// Fence returns the fencing token of the current hold. It is higher than
// that of every earlier hold of this lock name, also when Redis has lost
// the lock's keys: Redis's clock in microseconds when Redis granted it,
// or just above the fence it had to pass (see the README's guarantees).
// It returns 0 when the lock is not held.
func (m *Mutex) Fence() uint64 {
	if m == nil {
		return 0
	}
	return m.x.fence()
}

// Lock acquires the lock, waiting while another holder or goroutine has it.
//
// In Redis it joins the lock's queue of waiters and is woken when a release
// hands the lock to it; it also tries again after random sub-second ticks,
// and joins the queue only once its Client listens for hand-offs. A holder
// that keeps one token for its patience (see WithTimeout) is stale: Lock
// then returns an error wrapping ErrStale, or with WithTakeOver replaces the
// holder. Every failure wraps ErrNotObtained and its cause: ctx.Err() when
// ctx ends (the message names who held the lock), ErrClosed, ErrStale, or
// the Redis error, which ends Lock at once but for LOADING (a restarted
// Redis reading its data), which Lock waits out. On failure Lock leaves
// the lock as it found it.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	_, err := m.acquiring(ctx, "Lock", inspection.KindMutex, m.x.lock, nil)
	return err
}

// TryLock makes one attempt and never waits nor takes over. It returns
// (false, nil) when the lock is held, here or elsewhere, and an error only
// when Redis fails (wrapping ErrNotObtained), the Client is closed or the
// input is invalid.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	return m.acquiring(ctx, "TryLock", inspection.KindMutex, m.x.tryLock, nil)
}

// Unlock releases the lock if Redis still holds our token, handing it to
// the oldest waiter. It returns an error wrapping ErrNotHeld when the lock
// is not ours: never locked here, expired, taken over or overwritten (then
// it wraps ErrLost too); the other holder's key is left alone. Unlock ends
// the hold in this process whatever Redis answers; when Redis cannot be
// reached, or ctx ends while a Refresh is under way, the key stays until
// its lease ends or a waiter takes it over. After Client.Close it still
// releases, and reports ErrClosed as well.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	return opError("Unlock", m.name, m.x.unlock(ctx, nil))
}

// Refresh proves the holder alive and restarts the lease. If Redis still
// holds our token, it replaces it with a new one, which tells waiters the
// lock is busy rather than stuck, and restarts the lease. The fence does
// not change. It returns an error wrapping ErrNotHeld when the lock is not
// ours any more (and ErrLost when it was), and ErrClosed after
// Client.Close; the hold stays until Unlock. When the reply is lost, the
// next Refresh or Unlock accepts either token.
func (m *Mutex) Refresh(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	return opError("Refresh", m.name, m.x.refresh(ctx))
}

// Held asks Redis whether the lock still holds this hold's token. It
// returns (false, nil) when nothing is held here, and when the lock has
// another token or none, which also closes Lost's channel. On a Redis
// error it returns false and the error, and changes nothing; after
// Client.Close, ErrClosed.
func (m *Mutex) Held(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	held, err := m.x.held(ctx)
	return held, opError("Held", m.name, err)
}

// Lost returns a channel that is closed when the current hold is known to
// be lost. That is when Refresh, Held or Unlock found another token or no
// key, Do's auto-refresh could not renew the lease before it ended, or the
// Client saw Redis restart and the key gone. Each hold has its own channel;
// an Unlock that releases the lock leaves it open. When nothing is held,
// Lost returns a closed channel.
func (m *Mutex) Lost() <-chan struct{} {
	if m == nil {
		return closed
	}
	return m.x.lost()
}

// Do runs fn while holding the lock: Lock, fn, Unlock, and Unlock also when
// fn panics (the panic then goes on). fn's ctx carries the hold's fence for
// FenceOf. With WithAutoRefresh, the lock is refreshed while fn runs, and
// fn's ctx is cancelled when the lock is lost. The Unlock ignores ctx's
// cancellation, so that a lock is released even when fn returned because
// ctx ended, but it ends 50ms after ctx's deadline, if ctx has one, and
// after 5s otherwise, or 0.5s once the lock is known lost; a release cut
// short then goes on in the background, as far as Client.Close. Do returns
// Lock's error without running fn, or fn's error joined with Unlock's. When
// the lock was lost while fn ran, the error wraps ErrLost, also when fn
// returned nil, and Unlock's own error is left out unless ctx ended.
func (m *Mutex) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := m.check(ctx, fn); err != nil {
		return err
	}
	_, err := m.x.withLock(ctx, "Do", m.x.lock, fn)
	return err
}

// TryDo runs fn as Do does if one attempt, as TryLock makes it, gets the
// lock: flock -n for a fleet. It returns (false, nil) without running fn
// when the lock is held, here or elsewhere; otherwise true and what Do
// returns.
func (m *Mutex) TryDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if err := m.check(ctx, fn); err != nil {
		return false, err
	}
	return m.x.withLock(ctx, "TryDo", m.x.tryLock, fn)
}

// check reports a nil or zero Mutex, a nil ctx and a nil fn.
func (m *Mutex) check(ctx context.Context, fn ...func(context.Context) error) error {
	var b *base
	if m != nil {
		b = &m.base
	}
	return b.check("*Mutex", ctx, fn...)
}
