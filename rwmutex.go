package uncomplicated

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// An RWMutex is a read/write lock in Redis: many readers or one writer at
// a time, across processes, as long as their leases last. It is
// write-preferring: once a writer waits, new readers wait behind it, so a
// steady stream of readers cannot starve writers; readers already in
// finish first. Each reader has its own token and lease, so a reader that
// dies frees its share when its lease ends.
//
// A waiting writer whose blockers (the writer, or the same set of readers)
// stay unchanged for the whole timeout finds them stale: it fails with
// ErrStale or, with TakeOver, evicts exactly those holders and takes the
// lock, atomically and only if they are still all that blocks it. A
// waiting reader does the same with a stuck writer; a reader waiting
// behind waiting writers is never stale, as the writers wait for readers.
//
// It is safe for concurrent use: goroutines sharing an RWMutex take turns
// as writers, as with sync.RWMutex, while each RLock adds a reader. As
// with sync.RWMutex, a goroutine must not RLock again while it holds a
// read lock: a writer waiting between the two would block the second for
// good. Make one with NewRW or Client.NamedRW; the zero value returns
// ErrInvalidArgument.
type RWMutex struct {
	base
	keys    [6]any // writer, readers, waiting writers, fence counter, waiting readers, readers' turn
	channel string // where releases wake the lock's waiters
	intent  int64  // ms a waiting writer keeps new readers out after each attempt
	// sem holds a value while a goroutine of this process holds the write
	// lock or is acquiring it.
	sem chan struct{}

	mu      sync.Mutex // guards writer and readers
	writer  *hold      // the write hold; nil when none
	readers []*hold    // the read holds of RLock, most recent last
}

// NewRW returns the RWMutex of obj, named as New names a Mutex; opts
// override the Client's. It returns an error wrapping ErrInvalidID or
// ErrInvalidArgument for bad input; nothing is sent to Redis.
func NewRW[K any](c *Client, obj Identifier[K], opts ...Option) (*RWMutex, error) {
	return c.rwMutex(opts, func(prefix string) (string, error) { return objectName(prefix, obj) })
}

// NamedRW returns the RWMutex with a plain name, as Named does for a
// Mutex.
func (c *Client) NamedRW(name string, opts ...Option) (*RWMutex, error) {
	return c.rwMutex(opts, func(prefix string) (string, error) { return plainName(prefix, name) })
}

func (c *Client) rwMutex(opts []Option, name func(prefix string) (string, error)) (*RWMutex, error) {
	b, err := c.base(opts, name)
	if err != nil {
		return nil, err
	}
	cfg, key := b.cfg, b.name
	rw := &RWMutex{
		base: b, channel: broadcastChannel(cfg.prefix, key),
		intent: intentFor(cfg.tick()), sem: make(chan struct{}, 1),
	}
	rw.keys = [6]any{
		sharedKey(cfg.prefix, "writer", key), sharedKey(cfg.prefix, "readers", key),
		sharedKey(cfg.prefix, "writers", key), sharedKey(cfg.prefix, "rwfence", key),
		sharedKey(cfg.prefix, "waiting", key), sharedKey(cfg.prefix, "turn", key),
	}
	return rw, nil
}

// intentFor is how long, in ms, a waiting writer keeps new readers out
// after each attempt: three ticks and a tenth of a second, so that the
// writer's next attempt, a random time below a tick later, always comes
// first, while a writer that died holds readers back only briefly.
func intentFor(tick time.Duration) int64 {
	return (3*tick + 100*time.Millisecond).Milliseconds()
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
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.writer == nil {
		return 0
	}
	return rw.writer.fence
}

// Lock acquires the write lock, waiting while another goroutine of this
// process has it, then while Redis has a writer or readers. While it waits
// it keeps new readers out. Blockers unchanged for the whole timeout are
// stale: Lock returns an error wrapping ErrStale and ErrNotObtained, or
// with TakeOver evicts them. When ctx ends or the Client closes first, it
// returns an error wrapping ErrNotObtained and ctx.Err() or ErrClosed, and
// lets new readers in again.
func (rw *RWMutex) Lock(ctx context.Context) error {
	_, err := rw.lock(ctx)
	return err
}

func (rw *RWMutex) lock(ctx context.Context) (*hold, error) {
	if err := rw.ready(ctx); err != nil {
		return nil, err
	}
	obs, _ := rw.cfg.clock.(settle.Observer)
	if obs != nil {
		obs.Waiting(1)
		defer obs.Waiting(-1)
	}
	if err := rw.enter(ctx, obs, rw.sem); err != nil {
		return nil, err
	}
	held := false
	defer func() {
		if !held { // also when a Pool or logger panics
			<-rw.sem
		}
	}()
	token := newToken()
	a := acquisition{
		b: &rw.base, what: writerKind.what, channel: rw.channel, token: token,
		try: func(ctx context.Context, stale []string) (grant, error) {
			return rw.tryLock(ctx, token, rw.intent, stale)
		},
		leave: func(ctx context.Context) {
			rw.background(ctx, leaveWaitScript, []any{rw.keys[2], rw.keys[5]}, rw.channel, token)
		},
	}
	g, from, err := a.wait(ctx, obs)
	if err != nil {
		return nil, err
	}
	held = true
	return rw.held(ctx, token, g.fence, from), nil
}

// TryLock makes one attempt at the write lock and never waits nor takes
// over. It returns (false, nil) when the lock is held, here or elsewhere,
// and an error only when Redis fails or the input is invalid.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	if err := rw.ready(ctx); err != nil {
		return false, err
	}
	select {
	case rw.sem <- struct{}{}:
	default:
		return false, nil
	}
	held := false
	defer func() {
		if !held {
			<-rw.sem
		}
	}()
	token := newToken()
	from := rw.cfg.clock.Now()
	g, err := rw.tryLock(ctx, token, 0, nil)
	if err != nil || !g.ok {
		return false, rw.gaveUp(ctx, err)
	}
	held = true
	rw.held(ctx, token, g.fence, from)
	return true, nil
}

// tryLock makes one writer's attempt; intent is how long a blocked writer
// keeps readers out (0: not at all), stale the blockers to evict.
func (rw *RWMutex) tryLock(ctx context.Context, token string, intent int64, stale []string) (grant, error) {
	args := []any{token, rw.cfg.leaseMillis(), intent, "", ""}
	if stale != nil {
		args[3] = "x"
		for _, s := range stale {
			if w, ok := cutWriter(s); ok {
				args[4] = w
			} else {
				args = append(args, s)
			}
		}
	}
	undo := func() { rw.background(ctx, rwUnlockScript, rw.writerKeys(), rw.channel, token) }
	return rw.attempt(ctx, rwLockScript, rw.keys[:], undo, args...)
}

// held records a new write hold.
func (rw *RWMutex) held(ctx context.Context, token string, fence uint64, from time.Time) *hold {
	rw.logAcquired(ctx, writerKind.what, fence)
	h := rw.newHold(writerKind, rw.writerKeys(), rw.channel, token, fence, from)
	rw.mu.Lock()
	rw.writer = h
	rw.mu.Unlock()
	return h
}

// Unlock releases the write lock if Redis still has it, and wakes the
// lock's waiters. It returns an error wrapping ErrNotHeld when this
// RWMutex holds no write lock, and one wrapping ErrLost and ErrNotHeld
// when Redis no longer has it (its lease ended, or a waiter took it over).
// The hold ends in this process whatever Redis answers.
func (rw *RWMutex) Unlock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	return rw.unlock(ctx, nil)
}

// unlock ends the write hold want, or the current one when want is nil,
// and releases it; Do's release (want set) goes on in the background if
// ctx cuts it short.
func (rw *RWMutex) unlock(ctx context.Context, want *hold) error {
	rw.mu.Lock()
	h := rw.writer
	if h != nil && (want == nil || h == want) {
		rw.writer = nil
	}
	rw.mu.Unlock()
	switch {
	case h == nil && want == nil:
		return fmt.Errorf("%w: %s: not write-locked", ErrNotHeld, rw.name)
	case want != nil && h != want:
		return fmt.Errorf("%w: %s: fn unlocked", ErrNotHeld, rw.name)
	}
	defer func() { <-rw.sem }()
	return h.release(ctx, want != nil)
}

// Do runs fn while holding the write lock, as Mutex.Do does.
func (rw *RWMutex) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := rw.checkFn(ctx, fn); err != nil {
		return err
	}
	h, err := rw.lock(ctx)
	if err != nil {
		return err
	}
	return h.run(ctx, fn, func(ctx context.Context) error { return rw.unlock(ctx, h) })
}

// Refresh proves the writer alive: if Redis still has this RWMutex's
// write hold, it gives it a new token, which tells waiters it is busy
// rather than stuck, and restarts its lease. It returns an error wrapping
// ErrNotHeld when there is no write hold, and one wrapping ErrLost and
// ErrNotHeld when Redis no longer has it. Read holds are renewed by RDo
// with WithAutoRefresh.
func (rw *RWMutex) Refresh(ctx context.Context) error {
	h, err := rw.writeHold(ctx)
	if err != nil {
		return err
	}
	return h.Refresh(ctx)
}

// Held asks Redis whether it still has this RWMutex's write hold. It
// returns (false, nil) when not, which also closes Lost's channel, and
// when there is no write hold.
func (rw *RWMutex) Held(ctx context.Context) (bool, error) {
	h, err := rw.writeHold(ctx)
	if errors.Is(err, ErrNotHeld) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if rw.c.closed() {
		return false, fmt.Errorf("%w: %s", ErrClosed, rw.name)
	}
	if err := ctx.Err(); err != nil { // redigo may still send on an ended ctx
		return false, rw.redisError(ctx, err)
	}
	return h.verify(ctx)
}

// Lost returns a channel closed when the write hold is known to be lost,
// as Mutex.Lost does; a closed one when there is no write hold.
func (rw *RWMutex) Lost() <-chan struct{} {
	if rw == nil {
		return closed
	}
	rw.mu.Lock()
	h := rw.writer
	rw.mu.Unlock()
	if h == nil {
		return closed
	}
	return h.Lost()
}

// writeHold returns the current write hold after the checks of a call
// that talks to Redis: an error wrapping ErrNotHeld when there is none.
func (rw *RWMutex) writeHold(ctx context.Context) (*hold, error) {
	if err := rw.check(ctx); err != nil {
		return nil, err
	}
	rw.mu.Lock()
	h := rw.writer
	rw.mu.Unlock()
	if h == nil {
		return nil, fmt.Errorf("%w: %s: not write-locked", ErrNotHeld, rw.name)
	}
	return h, nil
}

// RLock acquires a read lock: at once unless Redis has a writer, or a
// waiting writer, and otherwise after waiting as Lock does. Each RLock is
// one reader with its own token and lease; RUnlock releases one. A writer
// that keeps its token for the whole timeout is stale: RLock returns an
// error wrapping ErrStale and ErrNotObtained, or with TakeOver evicts it.
// When ctx ends or the Client closes first, RLock returns an error wrapping
// ErrNotObtained and ctx.Err() or ErrClosed.
func (rw *RWMutex) RLock(ctx context.Context) error {
	h, err := rw.rlock(ctx)
	if err != nil {
		return err
	}
	rw.mu.Lock()
	rw.readers = append(rw.readers, h)
	rw.mu.Unlock()
	return nil
}

func (rw *RWMutex) rlock(ctx context.Context) (*hold, error) {
	if err := rw.ready(ctx); err != nil {
		return nil, err
	}
	obs, _ := rw.cfg.clock.(settle.Observer)
	if obs != nil {
		obs.Waiting(1)
		defer obs.Waiting(-1)
	}
	token := newToken()
	a := acquisition{
		b: &rw.base, what: readerKind.what, channel: rw.channel, token: token,
		try: func(ctx context.Context, stale []string) (grant, error) {
			evict := ""
			if len(stale) > 0 {
				evict, _ = cutWriter(stale[0])
			}
			return rw.tryRLock(ctx, token, rw.intent, evict)
		},
		leave: func(ctx context.Context) {
			rw.background(ctx, leaveWaitScript, []any{rw.keys[4], rw.keys[5]}, rw.channel, token)
		},
	}
	_, from, err := a.wait(ctx, obs)
	if err != nil {
		return nil, err
	}
	return rw.readHold(ctx, token, from), nil
}

// TryRLock makes one attempt at a read lock and never waits nor takes
// over. It returns false, nil when Redis has a writer or a waiting writer,
// and an error only when Redis fails or the input is invalid.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	if err := rw.ready(ctx); err != nil {
		return false, err
	}
	token := newToken()
	from := rw.cfg.clock.Now()
	g, err := rw.tryRLock(ctx, token, 0, "")
	if err != nil || !g.ok {
		return false, rw.gaveUp(ctx, err)
	}
	h := rw.readHold(ctx, token, from)
	rw.mu.Lock()
	rw.readers = append(rw.readers, h)
	rw.mu.Unlock()
	return true, nil
}

// tryRLock makes one reader's attempt; intent is how long a blocked reader
// counts as waiting (0: not at all), evict a stale writer to evict.
func (rw *RWMutex) tryRLock(ctx context.Context, token string, intent int64, evict string) (grant, error) {
	undo := func() { rw.background(ctx, rwRUnlockScript, rw.readerKeys(), rw.channel, token) }
	return rw.attempt(ctx, rwRLockScript, rw.keys[:], undo, token, rw.cfg.leaseMillis(), evict, rw.channel, intent)
}

// writerKeys are the KEYS of rwUnlockScript: the writer, the waiting
// readers, the readers' turn and the waiting writers.
func (rw *RWMutex) writerKeys() []any {
	return []any{rw.keys[0], rw.keys[4], rw.keys[5], rw.keys[2]}
}

// readerKeys are the KEYS of rwRUnlockScript: the readers and the waiting
// writers.
func (rw *RWMutex) readerKeys() []any {
	return []any{rw.keys[1], rw.keys[2]}
}

func (rw *RWMutex) readHold(ctx context.Context, token string, from time.Time) *hold {
	rw.logAcquired(ctx, readerKind.what, 0)
	return rw.newHold(readerKind, rw.readerKeys(), rw.channel, token, 0, from)
}

// RUnlock releases one read lock of this RWMutex, the most recent, and
// wakes the lock's waiters when it was the last reader. It returns an error
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
		return fmt.Errorf("%w: %s: not read-locked", ErrNotHeld, rw.name)
	}
	h := rw.readers[n-1]
	rw.readers[n-1] = nil
	rw.readers = rw.readers[:n-1]
	rw.mu.Unlock()
	return h.release(ctx, false)
}

// RDo runs fn while holding a read lock of its own, as Do does with the
// write lock; RUnlock does not release it. A read hold has no fence: inside
// fn, FenceOf reports none, even when RDo runs inside a Do.
func (rw *RWMutex) RDo(ctx context.Context, fn func(context.Context) error) error {
	if err := rw.checkFn(ctx, fn); err != nil {
		return err
	}
	h, err := rw.rlock(ctx)
	if err != nil {
		return err
	}
	return h.run(ctx, fn, func(ctx context.Context) error { return h.release(ctx, true) })
}

// cutWriter returns the writer's token from a blocker, if it is the
// writer.
func cutWriter(blocker string) (string, bool) {
	if len(blocker) > len(writerMark) && blocker[:len(writerMark)] == writerMark {
		return blocker[len(writerMark):], true
	}
	return "", false
}

// check reports a nil or zero RWMutex and a nil ctx.
func (rw *RWMutex) check(ctx context.Context) error {
	switch {
	case rw == nil || rw.c == nil:
		return fmt.Errorf("%w: nil or zero *RWMutex", ErrInvalidArgument)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	return nil
}

func (rw *RWMutex) checkFn(ctx context.Context, fn func(context.Context) error) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalidArgument)
	}
	return nil
}

func (rw *RWMutex) ready(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	return rw.open(ctx)
}
