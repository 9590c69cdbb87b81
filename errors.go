package uncomplicated

import (
	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
)

// Errors returned by this package, matched with errors.Is. Returned errors
// add the lock name and the cause.
var (
	// ErrNotObtained: an acquisition (Lock, RLock, Acquire, their Try and
	// Do forms) ended without the lock: its ctx ended, its Client was
	// closed, the holder was stale and WithTakeOver is off, or a call to
	// Redis failed or ran out of the command timeout. The error matches
	// that cause too: ctx.Err(), ErrClosed, ErrStale, the Redis error or
	// os.ErrDeadlineExceeded.
	ErrNotObtained = sentinel.ErrNotObtained
	// ErrStale: the holder kept one token for its timeout, or the waiter's
	// if longer.
	ErrStale = sentinel.ErrStale
	// ErrNotHeld: Unlock or Refresh found that the lock is not ours: never
	// locked, already unlocked, expired, taken over or overwritten.
	ErrNotHeld = sentinel.ErrNotHeld
	// ErrLost: a hold ended without Unlock: Refresh, Held or Unlock found
	// another token or no key, or the lease ran out while auto-refresh could
	// not reach Redis. The errors of Refresh and Unlock that find it match
	// ErrNotHeld too.
	ErrLost = sentinel.ErrLost
	// ErrInvalidArgument: bad input, which changes nothing in Redis: an
	// option out of range; permits outside 1 to 10,000; a nil Client,
	// driver, lock, context or function; an object that is nil, whose ID or
	// LockType method panics, or whose ID is nil or prints empty or whose
	// LockType is empty; an empty name; a name that only an Election may
	// have (<prefix>:election:...); under WithGemNames, a '{' or '}' in a
	// name; a name to package inspect that is not under the Client's
	// prefix; a LockAll list that is empty or names a lock twice.
	ErrInvalidArgument = sentinel.ErrInvalidArgument
	// ErrClosed: the Client was closed.
	ErrClosed = sentinel.ErrClosed
	// ErrNotReplicated: under WithReplicas, fewer replicas than asked for
	// acknowledged an acquisition in time; the lock was given back. The
	// error matches ErrNotObtained too.
	ErrNotReplicated = sentinel.ErrNotReplicated
	// ErrNoLeader: Election.Leader found no leader.
	ErrNoLeader = sentinel.ErrNoLeader
)

// An Error is the error of an operation on a lock: the method that
// failed, the lock's name and the cause. Find it in an error with errors.As.
//
// Errors.Is matches it with its cause and with the sentinel errors above
// that apply: an acquisition that gave up matches ErrNotObtained and what
// ended it (ctx's error, ErrClosed, ErrStale, a Redis error). Its message
// is complete on its own. Errors about arguments (ErrInvalidArgument) are
// plain errors.
type Error struct {
	// Op is the method that failed, such as "Lock", "Unlock", "Refresh",
	// "Acquire" or "inspect.Lock". Some errors, such as Election.Leader's,
	// leave it empty.
	Op string
	// Name is the lock's full name, as its Name method returns it
	// (Mutex.Name, Election.Name...).
	Name string
	// Err is the cause: what ended an acquisition (ctx's error, ErrClosed,
	// ErrStale), the error of a call to Redis, or else the sentinel error
	// that says what happened (ErrNotHeld, ErrLost...).
	Err error

	msg string  // the message, complete on its own
	is  []error // the sentinel errors it matches besides Err
}

// Error returns the error's message, which names the lock and the cause.
func (e *Error) Error() string { return e.msg }

// Unwrap returns the cause and the sentinel errors the error matches, for
// errors.Is and errors.As.
func (e *Error) Unwrap() []error { return append([]error{e.Err}, e.is...) }

// errorMaker is the engine.Errors that NewClient gives the engine: the
// errors of a Client's locks are *Error.
type errorMaker struct{}

var _ engine.Errors = errorMaker{}

// New: see engine.Errors.New.
func (errorMaker) New(name, msg string, cause error, is ...error) error {
	return &Error{Name: name, Err: cause, msg: msg, is: is}
}

// SetOp: see engine.Errors.SetOp.
func (errorMaker) SetOp(err error, op, name string) {
	if e, ok := err.(*Error); ok && e.Op == "" && e.Name == name {
		e.Op = op
	}
}
