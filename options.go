package uncomplicated

import (
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// An Option configures a Client (as defaults for all its locks) or a single
// lock: a Mutex, an RWMutex or a Semaphore. Options are checked by the
// constructors (New, NewRW, NewSemaphore),
// which return an error wrapping ErrInvalidArgument for a value out of
// range.
type Option func(*config.Config)

// options are opts as the engine takes them.
func options(opts []Option) []config.Option {
	out := make([]config.Option, len(opts))
	for i, o := range opts {
		out[i] = config.Option(o)
	}
	return out
}

// WithTimeout sets how long a holder may keep one token before it counts
// as stuck. A waiter's patience with a holder is the longer of its own
// timeout and the holder's, which the holder's token carries: a holder is
// stuck once one of its tokens (for an RWMutex's writer, the same set of
// blockers) has sat on the lock for its own timeout, or the waiter's if
// that is longer, and the stale policy then applies. So processes with
// different timeouts agree that a holder refreshing within its own is
// busy. Patience judges a holder stuck; the lease (WithLease) frees a
// crashed one, and unless WithLease says otherwise it is twice the
// timeout, so that a holder that hangs is found stale before its lease
// ends. Default 5 minutes; must be positive.
func WithTimeout(d time.Duration) Option {
	return Option(config.WithTimeout(d))
}

// WithTakeOver sets what a waiter does about a stuck holder. When false,
// the default, Lock fails with an error wrapping ErrStale: a stuck holder
// may only be slow, and taking its lock breaks exclusion. When true, Lock
// replaces the holder's token with its own, atomically and only if it is
// still the token it watched, under a higher fence, which lets a protected
// store refuse the old holder's late writes.
func WithTakeOver(on bool) Option {
	return Option(config.WithTakeOver(on))
}

// WithLease sets how long a hold lasts in Redis, counted from acquisition
// and from each Refresh. It is the lock key's time to live, or a reader's
// or permit's expiry; the lease frees the lock of a holder that crashed. A
// lease at or below the timeout means stale detection never triggers: the
// lock expires before a waiter's patience runs out, and the waiter simply
// acquires it. Default: twice the timeout. Zero means no expiry: only a
// release or a take-over ends the hold. Must not be negative; a positive
// lease is rounded up to whole milliseconds.
func WithLease(d time.Duration) Option {
	return Option(config.WithLease(d))
}

// WithClock sets the clock used for every sleep, deadline and age, so that
// tests can drive time with clock.NewMock (see package uncomplicatedtest).
// Default, or nil: the real clock.
func WithClock(clk clock.Clock) Option {
	return Option(config.WithClock(clk))
}

// WithLogger sets where the locks' records go. Debug: "acquired", "busy,
// waiting", "released". Warn: "stale" (without WithTakeOver), "taken over", "lost",
// and "Redis call failed" for a call that failed while its ctx was alive.
// Info: "Redis call failed" for LOADING, a restarted Redis reading its data.
// A waiter's failed attempts are logged at most once a second per lock. Each record
// has the lock name ("lock") and, when it is about a hold, its "fence".
// slog.Default() thus shows what needs attention and nothing more.
// Default, or nil: nowhere, but for one record: a Client that Redis has
// never answered says so once, at Warn, on slog.Default() (see
// NewClient).
func WithLogger(l *slog.Logger) Option {
	return Option(config.WithLogger(l))
}

// WithPrefix replaces "lock", the first part of every lock name. Use it to
// keep apart applications sharing one Redis, or two packages with the same
// name and type name. It must not be empty nor hold '{' or '}', which would
// move the lock's keys to different Redis Cluster slots.
func WithPrefix(s string) Option {
	return Option(config.WithPrefix(s))
}

// WithGemNames names locks exactly as the Ruby gem uncomplicated_mutex
// names them, so that Go and Ruby processes share the locks of the same
// objects: <prefix>:<type>:<ID>, where <type> is LockType, or the Go
// type's name without its package ("Order"), and <ID> the ID as fmt's %v
// prints it, nothing escaped, and every run of ':' squeezed to one
// (LockType "Billing::Order" and ID 42 give lock:Billing:Order:42). Named
// names are used as they are, runs of ':' squeezed. Such names are not
// injective, as the gem's are not: IDs "a::b" and "a:b" share a lock. A
// type, ID or name holding '{' or '}' makes the constructors return an
// error wrapping ErrInvalidArgument. Default off: names are escaped (see
// New).
func WithGemNames() Option {
	return Option(config.WithGemNames())
}

// WithAutoRefresh makes Do call Refresh every d while fn runs. A long fn
// thus keeps its lock, and waiters see it busy rather than stuck. When a
// Refresh finds the lock gone, or no Refresh got through before the lease
// may end, Do cancels fn's ctx with a cause wrapping ErrLost, closes Lost's
// channel and returns an error wrapping ErrLost. The holder counts the
// lease from the send time of the last Refresh that got through, and ends
// it a margin early, for a late timer and clocks that drift: 1% of the
// lease plus 40ms (at most half the lease), so fn learns of a loss before
// another process can take the lock. Default 0: off. It needs a lease: d
// must be at least 1ms and below the lease less that margin.
func WithAutoRefresh(d time.Duration) Option {
	return Option(config.WithAutoRefresh(d))
}

// WithCommandTimeout bounds each call the library makes to Redis to d,
// whatever the ctx passed in. A call is getting a connection (from a redigo pool, say),
// then one command or script, so that no call hangs on a server that
// accepts connections but stops answering. A call that runs out of time
// returns an error matching os.ErrDeadlineExceeded; Lock returns it rather
// than waiting on. It is real time, not the WithClock clock, as a
// connection's deadlines are. Under a ctx that can never end
// (context.Background) it also takes the place of the read timeout of the
// pool's connections; under any other ctx the earlier of the two ends a
// command. Default 10 seconds; 0 means no bound other than ctx; must not be
// negative.
func WithCommandTimeout(d time.Duration) Option {
	return Option(config.WithCommandTimeout(d))
}

// WithReplicas makes each acquisition and each release wait until n
// replicas of the lock's master have it. An acquisition by an attempt, a
// hand-off or a take-over waits alike: after Redis grants the lock, the
// holder refreshes it and sends WAIT n on the same connection, which
// returns once n replicas acknowledged every write so far, or after
// timeout. With fewer, the lock is given back and the acquisition fails
// with ErrNotReplicated; a release with fewer is repeated on the next
// master, if a failover comes (see the restart watch). A failover to one of
// those replicas then keeps the hold. It costs a round trip to the
// replicas on every acquisition and release, and availability: while fewer
// than n replicas of the master are in sync, every acquisition fails, so a
// failover that leaves fewer (a master with one replica: the old master
// must come back and resync, 11 to 46 s in our tests) blocks every lock
// until they are. Ask for fewer replicas than the master has. Default 0,
// off; n must not be negative, and timeout must be positive when n is not
// 0.
func WithReplicas(n int, timeout time.Duration) Option {
	return Option(config.WithReplicas(n, timeout))
}

// WithObserver sets the Observer of the locks' calls (see package
// observe). Default, or nil: none, which costs nothing.
func WithObserver(o observe.Observer) Option {
	return Option(config.WithObserver(o))
}

// WithHolderLabel sets the label that inspect.Lock and ulock status show
// for this process's holds and waiters. It lets an operator tell who holds
// a lock; "" shows none. It travels inside the hold's token (see Holder),
// so it costs no round trip, but it is readable by anyone who can read
// Redis: put no secret in it. At most 64 bytes. Default: the host
// name and the process ID, "web-3:4127".
func WithHolderLabel(s string) Option {
	return Option(config.WithHolderLabel(s))
}
