package engine

import (
	"context"
	"errors"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// observe begins a call op of kind on the lock.
func (b *base) observe(ctx context.Context, op string, kind string) (context.Context, *observing) {
	if b.cfg.Observer == nil {
		return ctx, nil
	}
	ctx, o := b.cfg.Observer.Begin(ctx, observe.Call{Op: op, Kind: kind, Type: b.typ, Name: b.name})
	if o == nil {
		return ctx, nil
	}
	return ctx, &observing{o: o, clock: b.cfg.Clock, start: b.cfg.Clock.Now()}
}

// An observing is one call's Observation, with what the lock adds to it;
// a nil *observing (no Observer) does nothing.
type observing struct {
	o     observe.Observation
	clock interface{ Now() time.Time }
	start time.Time
	wait  bool // Waiting was called
}

func (o *observing) waiting() {
	if o != nil && !o.wait {
		o.wait = true
		o.o.Waiting()
	}
}

func (o *observing) acquired(outcome observe.Outcome, fence uint64) {
	if o != nil {
		o.o.Acquired(outcome, fence, o.clock.Now().Sub(o.start))
	}
}

// failed reports an acquisition that ended without a hold: busy when err
// is nil.
func (o *observing) failed(err error) {
	if o == nil {
		return
	}
	outcome := observe.Error
	switch {
	case err == nil:
		outcome = observe.Busy
	case errors.Is(err, sentinel.ErrStale):
		outcome = observe.Stale
	case errors.Is(err, sentinel.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		outcome = observe.Ended
	}
	o.o.NotAcquired(outcome, o.clock.Now().Sub(o.start), err)
}

func (o *observing) lost(why string) {
	if o != nil {
		o.o.Lost(why)
	}
}

func (o *observing) released(since time.Time) {
	if o != nil {
		o.o.Released(o.clock.Now().Sub(since))
	}
}

func (o *observing) end(err error) {
	if o != nil {
		o.o.End(err)
	}
}
