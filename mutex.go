package uncomplicated

import (
	"context"

	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
)

// A Mutex is one lock in Redis. It is safe for concurrent use: goroutines
// sharing a Mutex take turns as with sync.Mutex, and across processes one
// holder at a time has the lock, as long as its lease lasts. Make one with
// New; the zero value returns ErrInvalidArgument.
type Mutex struct{ e *engine.Mutex }

// inner is m's lock in the engine; nil for a nil Mutex.
func (m *Mutex) inner() *engine.Mutex {
	if m == nil {
		return nil
	}
	return m.e
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
	inner, err := engine.New(c.inner(), obj, options(opts)...)
	if err != nil {
		return nil, err
	}
	return &Mutex{inner}, nil
}

// Name returns the Redis key of the lock, such as lock:orders.Order:42.
func (m *Mutex) Name() string {
	return m.inner().Name()
}

// Fence returns the fencing token of the current hold. It is higher than
// that of every earlier hold of this lock name, also when Redis has lost
// the lock's keys: Redis's clock in microseconds when Redis granted it,
// or just above the fence it had to pass (see the README's guarantees).
// It returns 0 when the lock is not held.
func (m *Mutex) Fence() uint64 {
	return m.inner().Fence()
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
// the Redis error. Through a Redis restart or failover (a refused, broken
// or silent connection, LOADING, READONLY, MASTERDOWN, CLUSTERDOWN,
// TRYAGAIN) Lock tries again on its ticks until ctx ends, and the error
// then also says what Redis last answered; any other Redis error ends it
// at once. On failure Lock leaves the lock as it found it.
func (m *Mutex) Lock(ctx context.Context) error {
	return m.inner().Lock(ctx)
}

// TryLock makes one attempt and never waits nor takes over. It returns
// (false, nil) when the lock is held, here or elsewhere, and an error only
// when Redis fails (wrapping ErrNotObtained), the Client is closed or the
// input is invalid.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return m.inner().TryLock(ctx)
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
	return m.inner().Unlock(ctx)
}

// Refresh proves the holder alive and restarts the lease. If Redis still
// holds our token, it replaces it with a new one, which tells waiters the
// lock is busy rather than stuck, and restarts the lease. The fence does
// not change. It returns an error wrapping ErrNotHeld when the lock is not
// ours any more (and ErrLost when it was), and ErrClosed after
// Client.Close; the hold stays until Unlock. When the reply is lost, the
// next Refresh or Unlock accepts either token.
func (m *Mutex) Refresh(ctx context.Context) error {
	return m.inner().Refresh(ctx)
}

// Held asks Redis whether the lock still holds this hold's token. It
// returns (false, nil) when nothing is held here, and when the lock has
// another token or none, which also closes Lost's channel. On a Redis
// error it returns false and the error, and changes nothing; after
// Client.Close, ErrClosed.
func (m *Mutex) Held(ctx context.Context) (bool, error) {
	return m.inner().Held(ctx)
}

// Lost returns a channel that is closed when the current hold is known to
// be lost. That is when Refresh, Held or Unlock found another token or no
// key, Do's auto-refresh could not renew the lease before it ended, or the
// Client saw Redis restart and the key gone. Each hold has its own channel;
// an Unlock that releases the lock leaves it open. When nothing is held,
// Lost returns a closed channel.
func (m *Mutex) Lost() <-chan struct{} {
	return m.inner().Lost()
}

// Do runs fn while holding the lock: Lock, fn, Unlock, and Unlock also when
// fn panics (the panic then goes on). fn's ctx carries the hold's fence for
// FenceOf. fn's ctx is cancelled, with a cause wrapping ErrLost, when the
// hold is found lost (see Lost); with WithAutoRefresh, the lock is
// refreshed while fn runs, which finds that too. The Unlock ignores ctx's
// cancellation, so that a lock is released even when fn returned because
// ctx ended, but it ends 50ms after ctx's deadline, if ctx has one, and
// after 5s otherwise, or 0.5s once the lock is known lost; a release cut
// short then goes on in the background, as far as Client.Close. Do returns
// Lock's error without running fn, or fn's error joined with Unlock's. When
// the lock was lost while fn ran, the error wraps ErrLost, also when fn
// returned nil, and Unlock's own error is left out unless ctx ended.
func (m *Mutex) Do(ctx context.Context, fn func(context.Context) error) error {
	return m.inner().Do(ctx, fn)
}

// TryDo runs fn as Do does if one attempt, as TryLock makes it, gets the
// lock: flock -n for a fleet. It returns (false, nil) without running fn
// when the lock is held, here or elsewhere; otherwise true and what Do
// returns.
func (m *Mutex) TryDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	return m.inner().TryDo(ctx, fn)
}

// FenceOf returns the fence of the hold that Do runs fn under, given fn's
// ctx or one derived from it. Inside fn of Mutex.Do, RWMutex.Do and
// Semaphore.Do it returns the hold's fence and true, so that code deep
// inside fn can pass the fence to the store it writes to. Inside fn of
// RWMutex.RDo (read holds have no fence), outside any Do, and for a nil ctx
// it returns 0, false.
func FenceOf(ctx context.Context) (uint64, bool) {
	return engine.FenceOf(ctx)
}
