package uncomplicated

import (
	"context"
	"sync"

	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
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
type RWMutex struct {
	base
	x      exclusive // the writer
	reader *spec

	mu      sync.Mutex // guards readers
	readers []*hold    // the read holds of RLock, most recent last
}

// NewRW returns the RWMutex of obj, named as New names a Mutex; opts
// override the Client's. Bad input gives an error wrapping
// ErrInvalidArgument; nothing is sent to Redis.
func NewRW[K any](c *Client, obj interface{ ID() K }, opts ...Option) (*RWMutex, error) {
	return newRWMutex(c, obj, opts)
}

// newRWMutex checks opts, names obj's lock and makes its RWMutex.
func newRWMutex[K any](c *Client, obj interface{ ID() K }, opts []Option) (*RWMutex, error) {
	b, err := newBase(c, obj, opts)
	if err != nil {
		return nil, err
	}
	rw := &RWMutex{base: b}
	prefix, key := b.cfg.prefix, b.name
	keys := rwKeysOf(prefix, key)
	channel := wakeChannel(prefix, key, c.id)
	rw.x = exclusive{b: &rw.base, sem: make(chan struct{}, 1), spec: &spec{
		primitive: inspection.KindRWMutex, kind: writerKind, keys: keys, channel: channel, acquire: lua.RWLock, takeOver: lua.RWLock,
		args:   writerArgs,
		writer: writerKind, holder: readerKind, entry: entryExclusive, who: "the same holders",
	}}
	rw.reader = &spec{
		primitive: inspection.KindRWMutex, kind: readerKind, keys: keys, channel: channel, acquire: lua.RWRLock, takeOver: lua.RWRLock,
		args:   readerArgs,
		writer: writerKind, holder: readerKind, entry: entryShared, who: "the same holders",
	}
	return rw, nil
}

// Name returns the name of the lock, such as lock:orders.Order:42; its
// keys in Redis are derived from it.
func (rw *RWMutex) Name() string {
	if rw == nil {
		return ""
	}
	return rw.name
}

// Fence returns the fencing token of the current write hold: higher than
// that of every earlier write hold of this lock. It returns 0 when this
// RWMutex holds no write lock; read locks have no fence.
func (rw *RWMutex) Fence() uint64 {
	if rw == nil {
		return 0
	}
	return rw.x.fence()
}

// Lock acquires the write lock, waiting while another goroutine of this
// process has it, then while Redis has a writer or readers. While it waits
// it keeps new readers out. Blockers unchanged for their patience are
// stale: Lock returns an error wrapping ErrStale, or with WithTakeOver evicts
// them. Its errors wrap ErrNotObtained and their cause, as Mutex.Lock's
// do; on failure it lets new readers in again.
func (rw *RWMutex) Lock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	_, err := rw.acquiring(ctx, "Lock", inspection.KindRWMutex, rw.x.lock, nil)
	return err
}

// TryLock makes one attempt at the write lock and never waits nor takes
// over. It returns (false, nil) when the lock is held, here or elsewhere,
// and an error only when Redis fails (wrapping ErrNotObtained), the Client
// is closed or the input is invalid.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	return rw.acquiring(ctx, "TryLock", inspection.KindRWMutex, rw.x.tryLock, nil)
}

// Unlock releases the write lock if Redis still has it, and hands the lock
// on. It returns an error wrapping ErrNotHeld when this RWMutex holds no
// write lock, and one wrapping ErrLost and ErrNotHeld when Redis no longer
// has it (its lease ended, or a waiter took it over). The hold ends in
// this process whatever Redis answers. After Client.Close it still
// releases, and reports ErrClosed as well.
func (rw *RWMutex) Unlock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	return opError("Unlock", rw.name, rw.x.unlock(ctx, nil))
}

// Do runs fn while holding the write lock, as Mutex.Do does.
func (rw *RWMutex) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := rw.check(ctx, fn); err != nil {
		return err
	}
	_, err := rw.x.withLock(ctx, "Do", rw.x.lock, fn)
	return err
}

// TryDo runs fn as Do does if one attempt, as TryLock makes it, gets the
// write lock; see Mutex.TryDo.
func (rw *RWMutex) TryDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if err := rw.check(ctx, fn); err != nil {
		return false, err
	}
	return rw.x.withLock(ctx, "TryDo", rw.x.tryLock, fn)
}

// Refresh proves the writer alive, as Mutex.Refresh does. Read holds are
// renewed by RDo with WithAutoRefresh.
func (rw *RWMutex) Refresh(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	return opError("Refresh", rw.name, rw.x.refresh(ctx))
}

// Held asks Redis whether it still has this RWMutex's write hold, as
// Mutex.Held does.
func (rw *RWMutex) Held(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	held, err := rw.x.held(ctx)
	return held, opError("Held", rw.name, err)
}

// Lost returns a channel closed when the write hold is known to be lost,
// as Mutex.Lost does. With no write hold, the channel is closed.
func (rw *RWMutex) Lost() <-chan struct{} {
	if rw == nil {
		return closed
	}
	return rw.x.lost()
}

// RLock acquires a read lock: at once unless Redis has a writer, or a
// waiting writer, and otherwise after waiting as Lock does. Each RLock is
// one reader with its own token and lease; RUnlock releases one. A writer
// that keeps its token for its patience is stale: RLock returns an error
// wrapping ErrStale, or with WithTakeOver evicts it. Its errors wrap
// ErrNotObtained and their cause, as Mutex.Lock's do.
func (rw *RWMutex) RLock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	_, err := rw.acquiring(ctx, "RLock", inspection.KindRWMutex, rw.rlock, nil)
	return err
}

// rlock acquires a read hold and records it for RUnlock.
func (rw *RWMutex) rlock(ctx context.Context, o *observing) (*hold, error) {
	h, err := rw.acquireReader(ctx, o)
	if err == nil {
		rw.addReader(h)
	}
	return h, err
}

// tryRLock makes one attempt at a read hold and records it for RUnlock.
func (rw *RWMutex) tryRLock(ctx context.Context, o *observing) (*hold, error) {
	h, err := rw.tryReader(ctx, o)
	if h != nil {
		rw.addReader(h)
	}
	return h, err
}

// TryRLock makes one attempt at a read lock and never waits nor takes
// over. It returns false, nil when Redis has a writer or a waiting writer,
// and an error only when Redis fails (wrapping ErrNotObtained), the Client
// is closed or the input is invalid.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	return rw.acquiring(ctx, "TryRLock", inspection.KindRWMutex, rw.tryRLock, nil)
}

func (rw *RWMutex) addReader(h *hold) {
	rw.mu.Lock()
	rw.readers = append(rw.readers, h)
	rw.mu.Unlock()
}

// RUnlock releases one read lock of this RWMutex, the most recent, and
// hands the lock on when it was the last reader. It returns an error
// wrapping ErrNotHeld when this RWMutex holds no read lock, and one
// wrapping ErrLost and ErrNotHeld when Redis no longer has that reader.
func (rw *RWMutex) RUnlock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	rw.mu.Lock()
	n := len(rw.readers)
	if n == 0 {
		rw.mu.Unlock()
		return opError("RUnlock", rw.name, rw.afterClose(rw.notHeld("not read-locked")))
	}
	h := rw.readers[n-1]
	rw.readers[n-1] = nil
	rw.readers = rw.readers[:n-1]
	rw.mu.Unlock()
	return opError("RUnlock", rw.name, h.release(ctx, false))
}

// RDo runs fn while holding a read lock of its own, as Do does with the
// write lock; RUnlock does not release it. A read hold has no fence: inside
// fn, FenceOf reports none, even when RDo runs inside a Do.
func (rw *RWMutex) RDo(ctx context.Context, fn func(context.Context) error) error {
	if err := rw.check(ctx, fn); err != nil {
		return err
	}
	_, err := rw.rdo(ctx, "RDo", rw.acquireReader, fn)
	return err
}

// TryRDo runs fn as RDo does if one attempt, as TryRLock makes it, gets a
// read lock; see Mutex.TryDo.
func (rw *RWMutex) TryRDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if err := rw.check(ctx, fn); err != nil {
		return false, err
	}
	return rw.rdo(ctx, "TryRDo", rw.tryReader, fn)
}

// rdo is RDo, or with acquire tryReader TryRDo.
func (rw *RWMutex) rdo(ctx context.Context, op string, acquire func(context.Context, *observing) (*hold, error), fn func(context.Context) error) (bool, error) {
	return rw.acquiring(ctx, op, inspection.KindRWMutex, acquire, func(ctx context.Context, h *hold) error {
		return h.run(ctx, fn, func(ctx context.Context) error { return h.release(ctx, true) })
	})
}

// acquireReader and tryReader acquire a read hold of RDo's own.
func (rw *RWMutex) acquireReader(ctx context.Context, o *observing) (*hold, error) {
	return rw.acquire(ctx, rw.reader, nil, o)
}

func (rw *RWMutex) tryReader(ctx context.Context, o *observing) (*hold, error) {
	return rw.try(ctx, rw.reader, nil, o)
}

// check reports a nil or zero RWMutex, a nil ctx and a nil fn.
func (rw *RWMutex) check(ctx context.Context, fn ...func(context.Context) error) error {
	var b *base
	if rw != nil {
		b = &rw.base
	}
	return b.check("*RWMutex", ctx, fn...)
}
