package uncomplicated

import "github.com/uncomplicated-mutex/uncomplicated/internal/engine"

// Errors returned by this package, matched with errors.Is. Returned errors
// add the lock name and the cause.
var (
	// ErrNotObtained: an acquisition (Lock, RLock, Acquire, their Try and
	// Do forms) ended without the lock: its ctx ended, its Client was
	// closed, the holder was stale and WithTakeOver is off, or a call to
	// Redis failed or ran out of the command timeout. The error matches
	// that cause too: ctx.Err(), ErrClosed, ErrStale, the Redis error or
	// os.ErrDeadlineExceeded.
	ErrNotObtained = engine.ErrNotObtained
	// ErrStale: the holder kept one token for its timeout, or the waiter's
	// if longer.
	ErrStale = engine.ErrStale
	// ErrNotHeld: Unlock or Refresh found that the lock is not ours: never
	// locked, already unlocked, expired, taken over or overwritten.
	ErrNotHeld = engine.ErrNotHeld
	// ErrLost: a hold ended without Unlock: Refresh, Held or Unlock found
	// another token or no key, or the lease ran out while auto-refresh could
	// not reach Redis. The errors of Refresh and Unlock that find it match
	// ErrNotHeld too.
	ErrLost = engine.ErrLost
	// ErrInvalidArgument: bad input, which changes nothing in Redis: an
	// option out of range; permits outside 1 to 10,000; a nil Client,
	// driver, lock, context or function; an object that is nil, whose ID or
	// LockType method panics, or whose ID is nil or prints empty or whose
	// LockType is empty; an empty name; a name that only an Election may
	// have (<prefix>:election:...); under WithGemNames, a '{' or '}' in a
	// name; a name to package inspect that is not under the Client's
	// prefix; a LockAll list that is empty or names a lock twice.
	ErrInvalidArgument = engine.ErrInvalidArgument
	// ErrClosed: the Client was closed.
	ErrClosed = engine.ErrClosed
	// ErrNotReplicated: under WithReplicas, fewer replicas than asked for
	// acknowledged an acquisition in time; the lock was given back. The
	// error matches ErrNotObtained too.
	ErrNotReplicated = engine.ErrNotReplicated
	// ErrNoLeader: Election.Leader found no leader.
	ErrNoLeader = engine.ErrNoLeader
)

// An Error is the error of an operation on a lock: Op, the method that
// failed ("Lock", "Unlock", "Refresh", "Acquire"...); Name, the lock's
// full name, as Mutex.Name returns it; and Err, the cause. It is defined
// in the package's engine.
//
// Errors.Is matches it with its cause and with the sentinel errors above
// that apply: an acquisition that gave up matches ErrNotObtained and what
// ended it (ctx's error, ErrClosed, ErrStale, a Redis error). Its message
// is complete on its own. Errors about arguments (ErrInvalidArgument) are
// plain errors.
type Error = engine.Error
