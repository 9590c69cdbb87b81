package uncomplicated

import (
	"context"
	"errors"
	"time"
)

// An Observer hears how the locks' calls go, to turn it into metrics and
// traces: the module github.com/uncomplicated-mutex/uncomplicated/otel is
// one, for OpenTelemetry. Set it with WithObserver. Its methods, and those
// of the Observations it returns, are called in the locks' goroutines and
// in the Client's background ones: they must be safe for concurrent use and
// quick, and must not call back into the lock.
type Observer interface {
	// Begin is called as an acquiring call begins (Lock, TryLock, Do,
	// TryDo, RLock, TryRLock, RDo, TryRDo, Acquire, TryAcquire). The call
	// goes on with the ctx it returns: fn of Do runs under it, so a span
	// that Begin starts is the parent of fn's. The Observation hears the
	// rest of the call and of the hold it makes.
	Begin(ctx context.Context, call Call) (context.Context, Observation)
}

// A Call is what an Observer is told of an acquiring call.
type Call struct {
	Op   string // the method: "Lock", "TryLock", "Do", "RDo", "Acquire"...
	Kind Kind   // the primitive
	// Type is the type part of the lock's name ("orders.Order" for
	// lock:orders.Order:42), or "" for a lock with a plain name: unlike
	// Name, it has few values, which suits a metric's attribute.
	Type string
	Name string // the lock's full name, as Mutex.Name returns it
}

// An Observation hears one acquiring call, in this order: Waiting at most
// once, then Acquired or NotAcquired; for a hold, Lost if it is found lost
// and Released when it ends; and End when the call returns, which for Do
// is after fn and the release, and for Lock right after the acquisition.
type Observation interface {
	// Waiting: the lock was taken, and the call waits for it.
	Waiting()
	// Acquired: the call got a hold with fence (0 for a reader) after
	// waiting for waited, by one of OutcomeAcquired, OutcomeHandedOff and
	// OutcomeTakenOver.
	Acquired(outcome Outcome, fence uint64, waited time.Duration)
	// NotAcquired: the call did not get the lock, with one of OutcomeBusy,
	// OutcomeStale, OutcomeEnded and OutcomeError, after waiting for
	// waited.
	NotAcquired(outcome Outcome, waited time.Duration, err error)
	// Lost: the hold was found lost, for the reason why.
	Lost(why string)
	// Released: the hold ended, by a release, after held.
	Released(held time.Duration)
	// End: the call returns err.
	End(err error)
}

// An Outcome is how an acquisition ended.
type Outcome string

// The outcomes of an acquisition.
const (
	OutcomeAcquired  Outcome = "acquired"   // an attempt found it free
	OutcomeHandedOff Outcome = "handed_off" // a release handed it over
	OutcomeTakenOver Outcome = "taken_over" // a stale holder was replaced
	OutcomeBusy      Outcome = "busy"       // TryLock and the like found it taken
	OutcomeStale     Outcome = "stale"      // a stale holder, under Fail
	OutcomeEnded     Outcome = "ctx_ended"  // ctx ended, or the Client closed
	OutcomeError     Outcome = "error"      // Redis failed, or the replicas did not acknowledge
)

// WithObserver sets the Observer of the locks' calls. Default, or nil:
// none, which costs nothing.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observer = o }
}

// do is an acquiring call op on a lock of kind, from its beginning to its
// end for an Observer: acquire, and then, if that got a hold and run is not
// nil, run it (Do's fn and release). It reports whether it got the hold.
func (b *base) do(ctx context.Context, op string, kind Kind, acquire func(context.Context, *observing) (*hold, error), run func(context.Context, *hold) error) (bool, error) {
	ctx, o := b.observe(ctx, op, kind)
	h, err := acquire(ctx, o)
	if h != nil && run != nil {
		err = run(ctx, h)
	}
	o.end(err)
	return h != nil, err
}

// An observing is one call's Observation, with what the lock adds to it;
// a nil *observing (no Observer) does nothing.
type observing struct {
	o     Observation
	clock interface{ Now() time.Time }
	start time.Time
	wait  bool // Waiting was called
}

// observe begins a call op of kind on the lock.
func (b *base) observe(ctx context.Context, op string, kind Kind) (context.Context, *observing) {
	if b.cfg.observer == nil {
		return ctx, nil
	}
	ctx, o := b.cfg.observer.Begin(ctx, Call{Op: op, Kind: kind, Type: b.typ, Name: b.name})
	if o == nil {
		return ctx, nil
	}
	return ctx, &observing{o: o, clock: b.cfg.clock, start: b.cfg.clock.Now()}
}

func (o *observing) waiting() {
	if o != nil && !o.wait {
		o.wait = true
		o.o.Waiting()
	}
}

func (o *observing) acquired(outcome Outcome, fence uint64) {
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
	outcome := OutcomeError
	switch {
	case err == nil:
		outcome = OutcomeBusy
	case errors.Is(err, ErrStale):
		outcome = OutcomeStale
	case errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		outcome = OutcomeEnded
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
