// Package inspection carries what Redis has of a lock from the engine,
// which reads it (engine.Inspect, List, ForceRelease), to package inspect,
// which shows it to users.
package inspection

import "time"

// The kinds of lock, as inspections and observers name them.
const (
	KindMutex     = "mutex"
	KindRWMutex   = "rwmutex"
	KindSemaphore = "semaphore"
)

// The roles of a holder or a waiter.
const (
	RoleHolder = "holder" // of a Mutex
	RoleWriter = "writer" // of an RWMutex
	RoleReader = "reader" // of an RWMutex
	RolePermit = "permit" // of a Semaphore
)

// NoLease is the LeaseLeft of a hold without a lease.
const NoLease time.Duration = -1

// Lock is what Redis had of one lock at one instant (see inspect.Info).
type Lock struct {
	Name             string
	Kind             string
	Fence            uint64
	Holders, Waiters []Holder
	WaitingWriters   int
	Permits          int
	At               time.Time
}

// Holder is one holder, or waiter, of a lock (see inspect.Holder).
type Holder struct {
	Role, Label        string
	Since              time.Time
	Timeout, LeaseLeft time.Duration
	Fence              uint64
}
