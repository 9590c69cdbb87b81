package uncomplicated

import (
	"context"

	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
)

// Handles let another process, or this one after a restart, finish a
// hold: a web request locks an order and the job that settles the charge
// unlocks it; a scheduler locks a report and the worker it starts
// refreshes and releases it; a shell script locks in one step (ulock
// acquire) and releases in a later one (ulock release --handle).
//
// Handle returns a printable string, safe in a URL, an environment
// variable and a shell argument, that names the hold: its lock, its token
// and fence, and its lease. It asks nothing of Redis. Resume asks Redis
// once whether that hold is still there, and returns a lock that holds
// it, with the same name and fence: Refresh, Held, Unlock, Lost and Fence
// work on it as on the original, and the Client's restart watch covers
// it. Both the original and the resumed copy hold the same hold: whichever
// releases it first does, and the other then gets an error matching
// ErrNotHeld. A Refresh by either gives the hold a new token (the token is
// what waiters watch to tell a busy holder from a stuck one), which only
// the refresher knows: the other copy's next call then finds the hold gone,
// and the refresher's Handle gives the handle to pass on.
//
// A handle is a capability: whoever has it can release the lock. Treat
// it as a secret, as a password; the library never logs one, and inspect
// and ulock status never show one.

// Handle returns the handle of m's current hold, or an error matching
// ErrNotHeld when m holds nothing.
func (m *Mutex) Handle() (string, error) {
	return m.inner().Handle()
}

// Resume returns a Mutex that holds the hold handle names, after one call
// to Redis. A handle whose hold has ended fails with an error matching
// ErrNotHeld; a string that is not a Mutex's handle (garbled, truncated,
// another lock's kind or library's) with ErrInvalidArgument, and nothing
// is sent to Redis. opts apply as to New, but for the prefix and the lease,
// which are the handle's.
func Resume(ctx context.Context, c *Client, handle string, opts ...Option) (*Mutex, error) {
	inner, err := engine.Resume(ctx, c.inner(), handle, options(opts)...)
	if err != nil {
		return nil, err
	}
	return &Mutex{inner}, nil
}

// Handle returns the handle of rw's write hold, or an error matching
// ErrNotHeld when rw is not write-locked. Read holds have none.
func (rw *RWMutex) Handle() (string, error) {
	return rw.inner().Handle()
}

// ResumeRW returns an RWMutex write-locked by the hold handle names, as
// Resume does for a Mutex.
func ResumeRW(ctx context.Context, c *Client, handle string, opts ...Option) (*RWMutex, error) {
	inner, err := engine.ResumeRW(ctx, c.inner(), handle, options(opts)...)
	if err != nil {
		return nil, err
	}
	return &RWMutex{inner}, nil
}

// Handle returns the handle of the permit, or an error matching
// ErrNotHeld once it is released.
func (p *Permit) Handle() (string, error) {
	return p.inner().Handle()
}

// Resume returns the permit that handle names, a permit of s, after one
// call to Redis, as the package's Resume does for a Mutex. A handle of
// another Semaphore's permit (another name, prefix or number of permits)
// is ErrInvalidArgument.
func (s *Semaphore) Resume(ctx context.Context, handle string) (*Permit, error) {
	inner, err := s.inner().Resume(ctx, handle)
	if err != nil {
		return nil, err
	}
	return &Permit{inner}, nil
}
