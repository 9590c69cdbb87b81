// Package inspect shows what Redis has of a lock: its holders, its waiters
// and its fence, for an operator or a health check; ForceRelease breaks a
// lock whoever holds it. Command ulock (ulock status, list and release)
// is built on it.
//
//	info, err := inspect.Lock(ctx, client, "lock:orders.Order:42")
//	if err == nil && info.Held() {
//		fmt.Println(info.Holders[0].Label, "holds it")
//	}
//
// It reads the keys of the three kinds of lock, so it works on any lock,
// whatever made it. Each call costs Redis a script or more: it is for
// operators, not for a program's hot path.
package inspect

import (
	"context"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
)

// A Kind is the kind of a lock: the primitive that made it.
type Kind string

// The kinds of lock.
const (
	KindMutex     Kind = inspection.KindMutex
	KindRWMutex   Kind = inspection.KindRWMutex
	KindSemaphore Kind = inspection.KindSemaphore
)

// The roles of a Holder.
const (
	RoleHolder = "holder" // of a Mutex
	RoleWriter = "writer" // of an RWMutex
	RoleReader = "reader" // of an RWMutex
	RolePermit = "permit" // of a Semaphore
)

// NoLease is the LeaseLeft of a hold without a lease (WithLease(0)).
const NoLease time.Duration = -1

// Info is what Redis had of one lock at one instant.
type Info struct {
	Name string // the lock's full name, as Mutex.Name returns it
	Kind Kind   // "" when Redis has nothing of the lock
	// Fence is the highest fence of the lock's holders, which the next
	// holder's exceeds; 0 when it is free, or held by readers alone (a
	// fence is Redis's clock in microseconds at its grant, or just above).
	Fence uint64
	// Holders are the lock's holders: the holder of a Mutex, the writer
	// or the readers of an RWMutex, the permits of a Semaphore.
	Holders []Holder
	// Waiters are the waiters in the lock's queue, oldest first, up to
	// 100. A waiter joins the queue once its Client listens for
	// hand-offs; one that has just begun to wait may not be there yet.
	Waiters []Holder
	// WaitingWriters is, for an RWMutex, how many writers wait: while one
	// does, no new reader gets in.
	WaitingWriters int
	// Permits is, for a Semaphore, its number of permits as its waiters
	// state it; 0 when nobody waits (Redis does not keep it otherwise).
	Permits int
	At      time.Time // when Redis read it, by Redis's clock
}

// Held reports whether the lock has a holder.
func (l Info) Held() bool { return len(l.Holders) > 0 }

// A Holder is one holder, or waiter, of a lock, as far as Redis shows it;
// never its secret token.
type Holder struct {
	Role  string // RoleHolder, RoleWriter, RoleReader or RolePermit
	Label string // its Client's WithHolderLabel; "" when it gave none
	// Since is when the hold began, or the waiter began to wait, by its
	// holder's clock. A hold that its holder waited for (a hand-off, a
	// take-over, an attempt after the first) shows when the wait began,
	// until the hold's first Refresh. Zero when unknown.
	Since time.Time
	// Timeout is its WithTimeout: a waiter finds a holder stuck once it
	// has kept one token for this long, or for the waiter's own timeout if
	// that is longer. Zero when unknown (a holder of an older version).
	Timeout time.Duration
	// LeaseLeft is, for a holder, how long its lease lasts from At, by
	// Redis's clock; NoLease when it has none.
	LeaseLeft time.Duration
	Fence     uint64 // a holder's fence; 0 for a reader and a waiter
}

// Lock returns what Redis has of the lock with the full name name.
//
// The name is as Mutex.Name and List report it ("lock:orders.Order:42").
// It costs Redis one script, which reads the lock's keys, whichever kind
// it is, and up to 100 of its holders and waiters. A name that is not
// under the Client's prefix, or holds '{' or '}', gives an error wrapping
// uncomplicated.ErrInvalidArgument; a failure, an *uncomplicated.Error.
func Lock(ctx context.Context, c *uncomplicated.Client, name string) (Info, error) {
	a, err := access(ctx, c)
	if err != nil {
		return Info{Name: name}, a.OpError("inspect.Lock", name, err)
	}
	in, err := readLock(ctx, a, name)
	return in.info, a.OpError("inspect.Lock", name, err)
}

// List returns the locks under the Client's prefix whose names match a
// pattern, each as Lock reads it.
//
// The pattern is "" for all, or in path.Match's syntax
// ("lock:orders.Order:*"). It returns the first limit found, in SCAN's
// order (1,000 when limit is 0), and more reports that there were others.
// A lock counts while Redis has anything of it: while it is held or
// waited for, and a few seconds after a waiter died (it shows free
// then). It costs Redis a SCAN of
// the whole keyspace, 1,000 keys per call (on a Cluster, of every master),
// and then one script per lock. A bad pattern or a negative limit gives an
// error wrapping uncomplicated.ErrInvalidArgument.
func List(ctx context.Context, c *uncomplicated.Client, match string, limit int) (locks []Info, more bool, err error) {
	a, err := access(ctx, c)
	if err != nil {
		return nil, false, err
	}
	return listLocks(ctx, a, match, limit)
}

// ForceRelease breaks a lock, whoever holds it, and hands it to its
// waiters.
//
// It removes the lock's holders (the holder, the writer and readers, or
// the permits) and hands the lock to its waiters as a release would,
// under a new fence; a waiter not yet queued gets it at its next attempt,
// with a higher fence too. It returns the lock as it was just before,
// whose Holders are what it removed (none when the lock was free). A
// holder that was only slow finds its hold lost at its next Refresh or
// release. It costs two scripts: a Lock, and the removal.
func ForceRelease(ctx context.Context, c *uncomplicated.Client, name string) (Info, error) {
	a, err := access(ctx, c)
	if err != nil {
		return Info{Name: name}, a.OpError("inspect.ForceRelease", name, err)
	}
	in, err := forceRelease(ctx, a, name)
	return in, a.OpError("inspect.ForceRelease", name, err)
}
