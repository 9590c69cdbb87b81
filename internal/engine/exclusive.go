package engine

import (
	"context"
	"sync"
)

// An exclusive is a lock that one goroutine of a process holds at a time:
// a Mutex, or an RWMutex as a writer. Its goroutines take turns as with a
// sync.Mutex before they ask Redis; it knows its current hold, which its
// Unlock, Refresh, Held, Lost and Fence are about.
type exclusive struct {
	b    *base
	spec *spec
	// sem holds a value while a goroutine of this process holds the lock or
	// is acquiring it.
	sem chan struct{}

	mu sync.Mutex // guards h
	h  *hold      // the current hold; nil when none
}

func (x *exclusive) current() *hold {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.h
}

// take acquires the lock, waiting first in this process, telling o how
// it went.
func (x *exclusive) take(ctx context.Context, o *observing) (*hold, error) {
	h, err := x.b.acquire(ctx, x.spec, x.sem, o)
	if err == nil {
		x.mu.Lock()
		x.h = h
		x.mu.Unlock()
	}
	return h, err
}

// tryTake makes one attempt, unless this process holds the lock.
func (x *exclusive) tryTake(ctx context.Context, o *observing) (*hold, error) {
	h, err := x.b.try(ctx, x.spec, x.sem, o)
	if h != nil {
		x.mu.Lock()
		x.h = h
		x.mu.Unlock()
	}
	return h, err
}

// unlock ends the hold want, or the current one when want is nil, and
// releases it; Do's release (want set) goes on in the background if ctx
// cuts it short.
func (x *exclusive) unlock(ctx context.Context, want *hold) error {
	x.mu.Lock()
	h := x.h
	if h != nil && (want == nil || h == want) {
		x.h = nil
	}
	x.mu.Unlock()
	switch {
	case h == nil && want == nil:
		return x.b.afterClose(x.b.notHeld("not locked"))
	case want != nil && h != want:
		return x.b.afterClose(x.b.notHeld("fn unlocked"))
	}
	defer func() { <-x.sem }()
	return h.release(ctx, want != nil)
}

func (x *exclusive) refresh(ctx context.Context) error {
	h := x.current()
	if h == nil {
		if err := x.b.usable(ctx); err != nil {
			return err
		}
		return x.b.notHeld("not locked")
	}
	return h.Refresh(ctx)
}

func (x *exclusive) held(ctx context.Context) (bool, error) {
	h := x.current()
	if h == nil {
		return false, x.b.usable(ctx)
	}
	return h.Held(ctx)
}

func (x *exclusive) lost() <-chan struct{} {
	if h := x.current(); h != nil {
		return h.Lost()
	}
	return closedChan
}

func (x *exclusive) fence() uint64 {
	if h := x.current(); h != nil {
		return h.fence
	}
	return 0
}

// withLock is Do, or with try TryDo: lock, fn, unlock. It reports whether
// fn ran.
func (x *exclusive) withLock(ctx context.Context, op string, try bool, fn func(context.Context) error) (bool, error) {
	return x.b.acquiring(ctx, op, x.spec.primitive, x, try, func(ctx context.Context, h *hold) error {
		return h.run(ctx, fn, func(ctx context.Context) error { return x.unlock(ctx, h) })
	})
}
