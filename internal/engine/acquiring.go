package engine

import (
	"context"
)

// An acquiring call, whatever the lock, reads straight down: the
// primitive's method (mutex.go, rwmutex.go, semaphore.go) calls acquiring,
// which observes the call and has its taker take the hold; the taker
// (exclusive.go, rwmutex.go's reader, semaphore.go's permit) enters the
// wait loop (wait.go: acquire, or try for one attempt), whose attempts go
// to Redis through attempt.go and the link. What differs between the locks
// is their spec (see strategy.go); a grant becomes a hold in hold.go.

// A taker takes one kind of hold for an acquiring call: waiting its turn
// (take), or in one attempt that never waits (tryTake). The exclusive hold
// of a Mutex or an RWMutex's writer, an RWMutex's reader and a Semaphore's
// permit are the takers.
type taker interface {
	take(ctx context.Context, o *observing) (*hold, error)
	tryTake(ctx context.Context, o *observing) (*hold, error)
}

// acquiring is an acquiring call op on a lock of kind, from its beginning
// to its end for an Observer: t takes the hold, in one attempt with try,
// and then, if that got a hold and run is not nil, run runs with it (Do's
// fn and release). It reports whether it got the hold.
func (b *base) acquiring(ctx context.Context, op string, kind string, t taker, try bool, run func(context.Context, *hold) error) (bool, error) {
	ctx, o := b.observe(ctx, op, kind)
	var h *hold
	var err error
	if try {
		h, err = t.tryTake(ctx, o)
	} else {
		h, err = t.take(ctx, o)
	}
	if h != nil && run != nil {
		err = run(ctx, h)
	}
	err = b.c.opError(op, b.name, err)
	o.end(err)
	return h != nil, err
}
