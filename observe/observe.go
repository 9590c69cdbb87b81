// Package observe is the contract of an Observer, which hears how a
// Client's locks are acquired, held and lost, to turn it into metrics and
// traces. Users set one with uncomplicated.WithObserver; the module
// github.com/uncomplicated-mutex/uncomplicated/uncomplicatedotel is one, for
// OpenTelemetry.
package observe

import (
	"context"
	"time"
)

// An Observer hears how the locks' calls go, to turn it into metrics and
// traces. Set it with uncomplicated.WithObserver. Its methods, and those
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
	Kind string // the primitive: "mutex", "rwmutex" or "semaphore"
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
	// waiting for waited, by one of Acquired, HandedOff and
	// TakenOver.
	Acquired(outcome Outcome, fence uint64, waited time.Duration)
	// NotAcquired: the call did not get the lock, with one of Busy,
	// Stale, Ended and Error, after waiting for
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
	Acquired  Outcome = "acquired"   // an attempt found it free
	HandedOff Outcome = "handed_off" // a release handed it over
	TakenOver Outcome = "taken_over" // a stale holder was replaced
	Busy      Outcome = "busy"       // TryLock and the like found it taken
	Stale     Outcome = "stale"      // a stale holder, without WithTakeOver
	Ended     Outcome = "ctx_ended"  // ctx ended, or the Client closed
	Error     Outcome = "error"      // Redis failed, or the replicas did not acknowledge
)
