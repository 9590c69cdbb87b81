package uncomplicated

import (
	"context"

	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
)

// LockAll locks every Mutex of ms, in the order of their names, so that
// callers locking overlapping sets, in whatever order they list them,
// never deadlock. While it waits for one, those it has locked stay held
// and are refreshed every third of their lease or of their timeout,
// whichever is shorter, however long the wait, so that they neither
// expire nor look stuck. The Mutexes may come from different Clients, on
// different Redis deployments.
//
// It returns nil with all of them held, each with its own fence (Fence),
// or an error wrapping ErrNotObtained and the cause (ctx's error,
// ErrStale, ErrClosed, a Redis error that ends Mutex.Lock, or ErrLost
// when a lock already taken was lost while it waited) with none of them
// held. An empty list, a nil Mutex, or one listed twice (the same *Mutex,
// or the same name on the same Client) returns an error wrapping
// ErrInvalidArgument and locks nothing. Two Clients on one Redis locking the same name in one LockAll
// wait on each other, until ctx ends or the stale policy acts.
func LockAll(ctx context.Context, ms ...*Mutex) error {
	return engine.LockAll(ctx, inners(ms)...)
}

// UnlockAll unlocks every Mutex of ms, in the reverse of LockAll's order
// (names descending), each whatever the others return, and joins their
// errors (see Mutex.Unlock). Bad input, as LockAll has it, unlocks
// nothing.
func UnlockAll(ctx context.Context, ms ...*Mutex) error {
	return engine.UnlockAll(ctx, inners(ms)...)
}

// DoAll runs fn while holding every Mutex of ms: LockAll, fn, UnlockAll,
// and UnlockAll also when fn panics (the panic then goes on). Inside fn
// each Mutex's Fence is its own hold's; fn's ctx carries no fence for
// FenceOf, as there are several. With WithAutoRefresh, the locks are
// refreshed while fn runs, and fn's ctx is cancelled when any of them is
// lost. The unlock ignores ctx's cancellation, as Do's does. DoAll returns
// LockAll's error without running fn, or fn's error joined with
// UnlockAll's; when a lock was lost while fn ran, the error wraps ErrLost.
func DoAll(ctx context.Context, ms []*Mutex, fn func(ctx context.Context) error) error {
	return engine.DoAll(ctx, inners(ms), fn)
}

// inners returns the engine's locks of ms.
func inners(ms []*Mutex) []*engine.Mutex {
	out := make([]*engine.Mutex, len(ms))
	for i, m := range ms {
		out[i] = m.inner()
	}
	return out
}
