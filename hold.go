package uncomplicated

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A hold is one acquisition of a Semaphore's permit or of an RWMutex, as
// its writer or one of its readers: its tokens and lease, and the scripts
// that renew it, release it and ask whether Redis still has it. Unlike a
// Mutex, which is reused hold after hold, a hold serves one acquisition.
type hold struct {
	b       *base
	kind    *holdKind
	keys    []any  // the scripts' KEYS
	channel string // where its release wakes the lock's waiters
	fence   uint64 // 0 for a reader
	// op holds a value while Refresh, release or verify talks to Redis, so
	// that they never interleave.
	op chan struct{}

	mu sync.Mutex // guards tokens, lost and from
	// tokens are those Redis may hold, newest first: one, or more after a
	// Refresh whose reply was lost; nil once released.
	tokens []string
	lost   *signal   // closed when the hold is found lost; made when asked for
	from   time.Time // the current lease began at or after this instant
}

// A holdKind is what differs between the kinds of hold.
type holdKind struct {
	what    string  // "permit", "write lock" or "read lock", for errors
	refresh *script // ARGV: lease, new token, tokens...
	release *script // ARGV: channel, tokens...; replies 1 or 0
	zset    bool    // held in a set of holders; else a string key
	// refreshKeys is how many of the hold's keys refresh takes, from the
	// first; release takes them all.
	refreshKeys int
}

var (
	permitKind = &holdKind{what: "permit", refresh: semRefreshScript, release: semReleaseScript, zset: true, refreshKeys: 2}
	writerKind = &holdKind{what: "write lock", refresh: refreshScript, release: rwUnlockScript, refreshKeys: 1}
	readerKind = &holdKind{what: "read lock", refresh: rwRRefreshScript, release: rwRUnlockScript, zset: true, refreshKeys: 1}
)

// newHold records a hold that Redis granted to token, for a call sent at
// or after from, and lets the Client's restart watch check it.
func (b *base) newHold(kind *holdKind, keys []any, channel, token string, fence uint64, from time.Time) *hold {
	h := &hold{b: b, kind: kind, keys: keys, channel: channel, fence: fence, op: make(chan struct{}, 1), tokens: []string{token}, from: from}
	b.c.watch(h)
	return h
}

// Refresh proves the holder alive: if Redis still has the hold, it
// replaces its token with a new one, which tells waiters it is busy rather
// than stuck, and restarts its lease. The fence does not change. It
// returns an error wrapping ErrLost and ErrNotHeld when Redis has not got
// it any more, and ErrNotHeld after release. When the reply is lost, the
// next Refresh or release accepts either token.
func (h *hold) Refresh(ctx context.Context) error {
	if h.b.c.closed() {
		return fmt.Errorf("%w: %s", ErrClosed, h.b.name)
	}
	if err := ctx.Err(); err != nil { // redigo may still send on an ended ctx
		return h.b.redisError(ctx, err)
	}
	if err := takeOp(ctx, h.op); err != nil {
		return h.b.redisError(ctx, err)
	}
	defer func() { <-h.op }()
	h.mu.Lock()
	tokens := h.tokens
	h.mu.Unlock()
	if tokens == nil {
		return fmt.Errorf("%w: %s: %s released", ErrNotHeld, h.b.name, h.kind.what)
	}
	next := newToken()
	sent := h.b.cfg.clock.Now()
	ok, err := h.b.flag(ctx, h.kind.refresh, h.keys[:h.kind.refreshKeys], append([]any{h.b.cfg.leaseMillis(), next}, anys(tokens)...)...)

	found := false // the loss, logged once mu is unlocked
	defer func() {
		if found {
			h.b.logLost(ctx, h.kind.what, h.fence, "Refresh found it expired or taken over")
		}
	}()
	h.mu.Lock()
	defer h.mu.Unlock()
	current := h.tokens != nil
	switch {
	case err != nil:
		if current { // the script may have run: next may be ours too
			h.tokens = append([]string{next}, tokens[:min(len(tokens), maxTokens-1)]...)
		}
		return err
	case !ok:
		if current {
			found = h.signal().fire()
			h.b.c.unwatch(h)
		}
		return h.b.lostError(h.kind.what + " expired or taken over")
	}
	if current {
		h.tokens, h.from = []string{next}, sent
	}
	return nil
}

// release ends the hold and gives it back in Redis. With later, a release
// that ctx ended before it was sent, or before its reply came, is made
// again in the background. After Client.Close it still releases, and
// reports ErrClosed as well.
func (h *hold) release(ctx context.Context, later bool) error {
	err := h.releaseNow(ctx, later)
	if h.b.c.closed() {
		err = errors.Join(fmt.Errorf("%w: %s: released after Close", ErrClosed, h.b.name), err)
	}
	return err
}

func (h *hold) releaseNow(ctx context.Context, later bool) error {
	opErr := takeOp(ctx, h.op)
	h.mu.Lock()
	tokens, lost := h.tokens, h.lost
	h.tokens = nil
	h.mu.Unlock()
	if opErr == nil {
		defer func() { <-h.op }()
	}
	if tokens == nil {
		return fmt.Errorf("%w: %s: %s already released", ErrNotHeld, h.b.name, h.kind.what)
	}
	h.b.c.unwatch(h)
	args := append([]string{h.channel}, tokens...)
	if opErr == nil {
		opErr = ctx.Err() // redigo may still send on an ended ctx
	}
	if opErr != nil {
		if later {
			h.b.background(ctx, h.kind.release, h.keys, args...)
		}
		return h.b.redisError(ctx, opErr)
	}
	ok, err := h.b.flag(ctx, h.kind.release, h.keys, anys(args)...)
	switch {
	case err != nil:
		if later && h.b.ctxErr(ctx) != nil {
			h.b.background(ctx, h.kind.release, h.keys, args...)
		}
		return err
	case !ok:
		h.b.lose(ctx, lost, h.kind.what, h.fence, "expired or taken over")
		return h.b.lostError(h.kind.what + " expired or taken over")
	}
	h.b.logReleased(ctx, h.kind.what, h.fence)
	return nil
}

// verify asks Redis whether it still has the hold; when not, it closes
// Lost's channel. It reports false after release.
func (h *hold) verify(ctx context.Context) (bool, error) {
	if err := takeOp(ctx, h.op); err != nil {
		return false, h.b.redisError(ctx, err)
	}
	defer func() { <-h.op }()
	h.mu.Lock()
	tokens := h.tokens
	h.mu.Unlock()
	if tokens == nil {
		return false, nil
	}
	var held bool
	var err error
	if h.kind.zset {
		held, err = h.b.flag(ctx, heldScript, h.keys[:1], anys(tokens)...)
	} else {
		var cur string
		if cur, err = h.b.get(ctx, h.keys[0].(string)); err != nil {
			err = h.b.redisError(ctx, err)
		}
		held = slices.Contains(tokens, cur)
	}
	if err != nil || held {
		return held, err
	}
	h.mu.Lock()
	current := h.tokens != nil
	found := current && h.signal().fire()
	h.mu.Unlock()
	if found {
		h.b.logLost(ctx, h.kind.what, h.fence, "Redis no longer has it")
	}
	if current {
		h.b.c.unwatch(h)
	}
	return false, nil
}

// Lost returns a channel closed when the hold is known to be lost; a
// closed one after release.
func (h *hold) Lost() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokens == nil {
		return closed
	}
	return h.signal().ch
}

// signal returns the hold's signal, making it; h.mu is held.
func (h *hold) signal() *signal {
	if h.lost == nil {
		h.lost = &signal{ch: make(chan struct{})}
	}
	return h.lost
}

func (h *hold) describe() (string, uint64) { return h.kind.what, h.fence }

func (h *hold) lostSignal() *signal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.signal()
}

func (h *hold) leaseLeft() time.Duration {
	h.mu.Lock()
	from := h.from
	h.mu.Unlock()
	return from.Add(h.b.cfg.lease).Sub(h.b.cfg.clock.Now())
}

// run is Do for a hold acquired for it: fn, with auto-refresh if
// configured, then release, as Mutex.Do does.
func (h *hold) run(ctx context.Context, fn func(context.Context) error, release func(context.Context) error) (err error) {
	fctx, stop := withFence(ctx, h.fence), func() any { return nil }
	if h.b.cfg.every > 0 {
		fctx, stop = h.b.refreshWhile(fctx, h)
	}
	defer func() {
		panicked := stop()
		if panicked != nil {
			defer panic(panicked) // the Pool's, once the hold is released
		}
		h.mu.Lock()
		lost := h.lost
		h.mu.Unlock()
		rctx, cancel := releaseContext(ctx)
		defer cancel()
		if rerr := release(rctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if lost != nil && isClosed(lost.ch) && !errors.Is(err, ErrLost) {
			err = errors.Join(err, h.b.lostError(h.kind.what+" lost while fn ran"))
		}
	}()
	return fn(fctx)
}

// fenceCtxKey is the key of the fence that the ctx of Do's fn carries.
type fenceCtxKey struct{}

// withFence returns ctx carrying fence for FenceOf; a read hold's 0 hides
// the fence of a Do that runs around it.
func withFence(ctx context.Context, fence uint64) context.Context {
	return context.WithValue(ctx, fenceCtxKey{}, fence)
}

// FenceOf returns the fence of the hold that Do runs fn under, given fn's
// ctx or one derived from it: inside fn of Mutex.Do, RWMutex.Do and
// Semaphore.Do it returns the hold's fence and true, so that code deep
// inside fn can pass the fence to the store it writes to. Inside fn of
// RWMutex.RDo (read holds have no fence), outside any Do, and for a nil
// ctx it returns 0, false.
func FenceOf(ctx context.Context) (uint64, bool) {
	if ctx == nil {
		return 0, false
	}
	fence, _ := ctx.Value(fenceCtxKey{}).(uint64)
	return fence, fence > 0
}

// takeOp waits for op, or for ctx to end.
func takeOp(ctx context.Context, op chan struct{}) error {
	select {
	case op <- struct{}{}:
		return nil
	default:
	}
	select {
	case op <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
