// Package uncomplicated provides a mutex for domain objects, kept in Redis,
// that tolerates stale locks.
//
// Processes that must not work on the same object at once (charge an order,
// send an email, rebuild a report) lock it by its ID:
//
//	m, err := uncomplicated.New(client, order) // lock:orders.Order:42
//	err = m.Do(ctx, func(ctx context.Context) error { return charge(ctx, order) })
//
// A waiter joins the lock's queue: a release hands the lock to the oldest
// waiter, for a short claim that the waiter turns into its lease, and wakes
// it. Between wake-ups it also tries again after random sub-second ticks,
// so it never depends on them. While the holder's secret token keeps
// changing (new holders, or a holder calling Refresh) the lock is busy, not
// stuck, and the waiter's patience starts over. When one token has sat on
// the lock for the holder's timeout, or the waiter's if longer, the holder
// is stuck: the waiter fails with ErrStale, or with the TakeOver policy
// replaces the holder atomically under a higher fencing token. The lease,
// twice the timeout by default, frees the lock of a holder that crashed.
//
// Safety rests on the lease, as with every Redis lock: a holder paused past
// its lease, or taken over while it was only slow, may still be running. Pass
// the hold's fence (Mutex.Fence, or FenceOf inside Do) to the store you
// protect and have it refuse a write whose fence is not above the highest it
// has accepted.
package uncomplicated

import "errors"

// Errors returned by this package, matched with errors.Is. Returned errors
// add the lock name and the cause.
var (
	// ErrNotObtained: an acquisition (Lock, RLock, Acquire, their Try and
	// Do forms) ended without the lock: its ctx ended, its Client was
	// closed, the holder was stale and the policy is Fail, or a call to
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
	// ErrInvalidID: the object is nil, its ID method panics, or the ID is
	// nil or prints empty; or Named was given "".
	ErrInvalidID = errors.New("uncomplicated: invalid lock id")
	// ErrInvalidArgument: an option out of range, a nil Client, Pool,
	// Mutex, context or function.
	ErrInvalidArgument = errors.New("uncomplicated: invalid argument")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("uncomplicated: client closed")
	// ErrUnexpectedReply: Redis answered something the scripts cannot
	// return: a server that is not Redis 7 or later, or a proxy that
	// mangles replies.
	ErrUnexpectedReply = errors.New("uncomplicated: unexpected reply from Redis")
	// ErrNotReplicated: under WithReplicas, fewer replicas than asked for
	// acknowledged an acquisition in time; the lock was given back. The
	// error matches ErrNotObtained too.
	ErrNotReplicated = errors.New("uncomplicated: acquisition not replicated")
)

// lockError is an error with its own message that matches several others.
type lockError struct {
	msg  string
	errs []error
}

func (e *lockError) Error() string   { return e.msg }
func (e *lockError) Unwrap() []error { return e.errs }

// An Identifier is any domain object with an ID: ID() int64, string,
// uuid.UUID... The ID's fmt %v form names the lock.
type Identifier[K any] interface{ ID() K }
