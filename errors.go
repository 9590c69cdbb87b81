package uncomplicated

import "errors"

// Errors returned by this package, matched with errors.Is. Returned errors
// add the lock name and the cause.
var (
	// ErrNotObtained: an acquisition (Lock, RLock, Acquire, their Try and
	// Do forms) ended without the lock: its ctx ended, its Client was
	// closed, the holder was stale and WithTakeOver is off, or a call to
	// Redis failed or ran out of the command timeout. The error matches
	// that cause too: ctx.Err(), ErrClosed, ErrStale, the Redis error or
	// os.ErrDeadlineExceeded.
	ErrNotObtained = errors.New("uncomplicated: lock not obtained")
	// ErrStale: the holder kept one token for its timeout, or the waiter's
	// if longer.
	ErrStale = errors.New("uncomplicated: stale lock")
	// ErrNotHeld: Unlock or Refresh found that the lock is not ours: never
	// locked, already unlocked, expired, taken over or overwritten.
	ErrNotHeld = errors.New("uncomplicated: lock not held")
	// ErrLost: a hold ended without Unlock: Refresh, Held or Unlock found
	// another token or no key, or the lease ran out while auto-refresh could
	// not reach Redis. The errors of Refresh and Unlock that find it match
	// ErrNotHeld too.
	ErrLost = errors.New("uncomplicated: lock lost")
	// ErrInvalidArgument: bad input, which changes nothing in Redis: an
	// option out of range; permits outside 1 to 10,000; a nil Client,
	// driver, lock, context or function; an object that is nil, whose ID or
	// LockType method panics, or whose ID is nil or prints empty or whose
	// LockType is empty; an empty name; a name that only an Election may
	// have (<prefix>:election:...); under WithGemNames, a '{' or '}' in a
	// name; a name to package inspect that is not under the Client's
	// prefix; a LockAll list that is empty or names a lock twice.
	ErrInvalidArgument = errors.New("uncomplicated: invalid argument")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("uncomplicated: client closed")
	// ErrNotReplicated: under WithReplicas, fewer replicas than asked for
	// acknowledged an acquisition in time; the lock was given back. The
	// error matches ErrNotObtained too.
	ErrNotReplicated = errors.New("uncomplicated: acquisition not replicated")
)

// An Error is the error of an operation on a lock: the method, the lock's
// name and the cause.
//
// Errors.Is matches it with its cause and with the sentinel errors above
// that apply: an acquisition that gave up matches ErrNotObtained and what
// ended it (ctx's error, ErrClosed, ErrStale, a Redis error). Its message
// is complete on its own. Errors about arguments (ErrInvalidArgument) are
// plain errors.
type Error struct {
	Op   string // the method that failed: "Lock", "Unlock", "Refresh", "Acquire"...
	Name string // the lock's full name, as Mutex.Name returns it
	Err  error  // the cause
	msg  string
	is   []error // the sentinels it matches besides Err
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the cause and the sentinels the error matches.
func (e *Error) Unwrap() []error { return append([]error{e.Err}, e.is...) }

// newError is the error msg of the lock named name, for cause, that also
// matches is. Without a cause, the first of is is the cause.
func newError(name, msg string, cause error, is ...error) *Error {
	if cause == nil && len(is) > 0 {
		cause, is = is[0], is[1:]
	}
	return &Error{Name: name, Err: cause, msg: msg, is: is}
}

// opError names op in the Errors of the lock named name within err that
// name none yet, and returns err.
func opError(op, name string, err error) error {
	switch e := err.(type) {
	case nil:
	case *Error:
		if e.Op == "" && e.Name == name {
			e.Op = op
		}
		opError(op, name, e.Err)
	case interface{ Unwrap() []error }:
		for _, err := range e.Unwrap() {
			opError(op, name, err)
		}
	case interface{ Unwrap() error }:
		opError(op, name, e.Unwrap())
	}
	return err
}
