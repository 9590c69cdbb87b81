package uncomplicated

import (
	"context"

	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
)

// An RWMutex is a read/write lock in Redis: many readers or one writer at
// a time, across processes, as long as their leases last. It is
// write-preferring: once a writer waits, new readers wait behind it, so a
// steady stream of readers cannot starve writers; readers already in
// finish first. Each reader has its own token and lease, so a reader that
// dies frees its share when its lease ends.
//
// A waiting writer whose blockers (the writer, or the same set of readers)
// stay unchanged for their patience (see WithTimeout) finds them stale:
// it fails with
// ErrStale or, with WithTakeOver, evicts exactly those holders and takes the
// lock, atomically and only if they are still all that blocks it. A
// waiting reader does the same with a stuck writer; a reader waiting
// behind waiting writers is never stale, as the writers wait for readers.
//
// Waiters are served in order: a release hands the lock to the writer at
// the head of the queue, or lets in together the readers queued before the
// next writer, so that neither side starves.
//
// It is safe for concurrent use: goroutines sharing an RWMutex take turns
// as writers, as with sync.RWMutex, while each RLock adds a reader. As
// with sync.RWMutex, a goroutine must not RLock again while it holds a
// read lock: a writer waiting between the two would block the second for
// good. Make one with NewRW; the zero value returns
// ErrInvalidArgument.
type RWMutex struct{ e *engine.RWMutex }

// inner is rw's lock in the engine; nil for a nil RWMutex.
func (rw *RWMutex) inner() *engine.RWMutex {
	if rw == nil {
		return nil
	}
	return rw.e
}

// NewRW returns the RWMutex of obj, named as New names a Mutex; opts
// override the Client's. Bad input gives an error wrapping
// ErrInvalidArgument; nothing is sent to Redis.
func NewRW[K any](c *Client, obj interface{ ID() K }, opts ...Option) (*RWMutex, error) {
	inner, err := engine.NewRW(c.inner(), obj, options(opts)...)
	if err != nil {
		return nil, err
	}
	return &RWMutex{inner}, nil
}

// Name returns the name of the lock, such as lock:orders.Order:42; its
// keys in Redis are derived from it.
func (rw *RWMutex) Name() string {
	return rw.inner().Name()
}

// Fence returns the fencing token of the current write hold: higher than
// that of every earlier write hold of this lock. It returns 0 when this
// RWMutex holds no write lock; read locks have no fence.
func (rw *RWMutex) Fence() uint64 {
	return rw.inner().Fence()
}

// Lock acquires the write lock, waiting while another goroutine of this
// process has it, then while Redis has a writer or readers. While it waits
// it keeps new readers out. Blockers unchanged for their patience are
// stale: Lock returns an error wrapping ErrStale, or with WithTakeOver evicts
// them. Its errors wrap ErrNotObtained and their cause, as Mutex.Lock's
// do; on failure it lets new readers in again.
func (rw *RWMutex) Lock(ctx context.Context) error {
	return rw.inner().Lock(ctx)
}

// TryLock makes one attempt at the write lock and never waits nor takes
// over. It returns (false, nil) when the lock is held, here or elsewhere,
// and an error only when Redis fails (wrapping ErrNotObtained), the Client
// is closed or the input is invalid.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	return rw.inner().TryLock(ctx)
}

// Unlock releases the write lock if Redis still has it, and hands the lock
// on. It returns an error wrapping ErrNotHeld when this RWMutex holds no
// write lock, and one wrapping ErrLost and ErrNotHeld when Redis no longer
// has it (its lease ended, or a waiter took it over). The hold ends in
// this process whatever Redis answers. After Client.Close it still
// releases, and reports ErrClosed as well.
func (rw *RWMutex) Unlock(ctx context.Context) error {
	return rw.inner().Unlock(ctx)
}

// Do runs fn while holding the write lock, as Mutex.Do does.
func (rw *RWMutex) Do(ctx context.Context, fn func(context.Context) error) error {
	return rw.inner().Do(ctx, fn)
}

// TryDo runs fn as Do does if one attempt, as TryLock makes it, gets the
// write lock; see Mutex.TryDo.
func (rw *RWMutex) TryDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	return rw.inner().TryDo(ctx, fn)
}

// Refresh proves the writer alive, as Mutex.Refresh does. Read holds are
// renewed by RDo with WithAutoRefresh.
func (rw *RWMutex) Refresh(ctx context.Context) error {
	return rw.inner().Refresh(ctx)
}

// Held asks Redis whether it still has this RWMutex's write hold, as
// Mutex.Held does.
func (rw *RWMutex) Held(ctx context.Context) (bool, error) {
	return rw.inner().Held(ctx)
}

// Lost returns a channel closed when the write hold is known to be lost,
// as Mutex.Lost does. With no write hold, the channel is closed.
func (rw *RWMutex) Lost() <-chan struct{} {
	return rw.inner().Lost()
}

// RLock acquires a read lock: at once unless Redis has a writer, or a
// waiting writer, and otherwise after waiting as Lock does. Each RLock is
// one reader with its own token and lease; RUnlock releases one. A writer
// that keeps its token for its patience is stale: RLock returns an error
// wrapping ErrStale, or with WithTakeOver evicts it. Its errors wrap
// ErrNotObtained and their cause, as Mutex.Lock's do.
func (rw *RWMutex) RLock(ctx context.Context) error {
	return rw.inner().RLock(ctx)
}

// TryRLock makes one attempt at a read lock and never waits nor takes
// over. It returns false, nil when Redis has a writer or a waiting writer,
// and an error only when Redis fails (wrapping ErrNotObtained), the Client
// is closed or the input is invalid.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	return rw.inner().TryRLock(ctx)
}

// RUnlock releases one read lock of this RWMutex, the most recent, and
// hands the lock on when it was the last reader. It returns an error
// wrapping ErrNotHeld when this RWMutex holds no read lock, and one
// wrapping ErrLost and ErrNotHeld when Redis no longer has that reader.
func (rw *RWMutex) RUnlock(ctx context.Context) error {
	return rw.inner().RUnlock(ctx)
}

// RDo runs fn while holding a read lock of its own, as Do does with the
// write lock; RUnlock does not release it. A read hold has no fence: inside
// fn, FenceOf reports none, even when RDo runs inside a Do.
func (rw *RWMutex) RDo(ctx context.Context, fn func(context.Context) error) error {
	return rw.inner().RDo(ctx, fn)
}

// TryRDo runs fn as RDo does if one attempt, as TryRLock makes it, gets a
// read lock; see Mutex.TryDo.
func (rw *RWMutex) TryRDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	return rw.inner().TryRDo(ctx, fn)
}
