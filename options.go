package uncomplicated

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"

	"github.com/benbjohnson/clock"

	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// An Option configures a Client (as defaults for all its locks) or a single
// lock: a Mutex, an RWMutex or a Semaphore. Options are checked by the
// constructors (New, NewRW, NewSemaphore),
// which return an error wrapping ErrInvalidArgument for a value out of
// range.
type Option func(*config)

// config is what the options fill, starting from defaults().
type config struct {
	timeout  time.Duration
	ticks    int
	takeOver bool // a stuck holder is taken over, not reported (WithTakeOver)
	// takeOverSet is set by WithTakeOver: an Election takes over unless
	// told otherwise.
	takeOverSet bool
	lease       time.Duration
	leaseSet    bool // lease was given; otherwise it is twice timeout
	clock       clock.Clock
	logger      *slog.Logger
	prefix      string
	every       time.Duration // auto-refresh period of Do; 0 means off
	// commandTimeout bounds each call to Redis; 0 means only ctx does.
	commandTimeout time.Duration
	replicas       int              // replicas that must acknowledge an acquisition; 0: none
	replicaWait    time.Duration    // how long they have
	observer       observe.Observer // nil: none
	label          string           // the holder label (WithHolderLabel)
	gemNames       bool             // locks are named as the Ruby gem names them (WithGemNames)
}

func defaults() config {
	return config{
		timeout: limits.Timeout,
		ticks:   limits.Ticks,
		clock:   clock.New(),
		logger:  slog.New(slog.DiscardHandler),
		prefix:  limits.Prefix,
		label:   limits.HostLabel(),

		commandTimeout: limits.CommandTimeout,
	}
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
	return func(c *config) { c.timeout = d }
}

// WithTicks sets how finely a waiter divides the timeout. Between attempts
// it sleeps a random time below min(timeout/ticks, 1s), a bound raised to
// 1ms if smaller. Default 100; must be positive.
func WithTicks(n int) Option {
	return func(c *config) { c.ticks = n }
}

// WithTakeOver sets what a waiter does about a stuck holder. When false,
// the default, Lock fails with an error wrapping ErrStale: a stuck holder
// may only be slow, and taking its lock breaks exclusion. When true, Lock
// replaces the holder's token with its own, atomically and only if it is
// still the token it watched, under a higher fence, which lets a protected
// store refuse the old holder's late writes.
func WithTakeOver(on bool) Option {
	return func(c *config) { c.takeOver, c.takeOverSet = on, true }
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
	return func(c *config) { c.lease, c.leaseSet = d, true }
}

// WithClock sets the clock used for every sleep, deadline and age, so that
// tests can drive time with clock.NewMock (see package uncomplicatedtest).
// Default, or nil: the real clock.
func WithClock(clk clock.Clock) Option {
	return func(c *config) {
		if clk == nil {
			clk = clock.New()
		}
		c.clock = clk
	}
}

// WithLogger sets where the locks' records go. Debug: "acquired", "busy,
// waiting", "released". Warn: "stale" (without WithTakeOver), "taken over", "lost",
// and "Redis call failed" for a call that failed while its ctx was alive.
// Info: "Redis call failed" for LOADING, which Lock waits out. Each record
// has the lock name ("lock") and, when it is about a hold, its "fence".
// slog.Default() thus shows what needs attention and nothing more.
// Default, or nil: nowhere.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.logger = l
	}
}

// WithPrefix replaces "lock", the first part of every lock name. Use it to
// keep apart applications sharing one Redis, or two packages with the same
// name and type name. It must not be empty nor hold '{' or '}', which would
// move the lock's keys to different Redis Cluster slots.
func WithPrefix(s string) Option {
	return func(c *config) { c.prefix = s }
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
	return func(c *config) { c.gemNames = true }
}

// WithAutoRefresh makes Do call Refresh every d while fn runs. A long fn
// thus keeps its lock, and waiters see it busy rather than stuck. When a
// Refresh finds the lock gone, or no Refresh got through before the lease
// may end, Do cancels fn's ctx with a cause wrapping ErrLost, closes Lost's
// channel and returns an error wrapping ErrLost. The holder counts the
// lease from the send time of the last Refresh that got through, and ends
// it a margin early, for a late timer and clocks that drift: 1% of the
// lease plus 20ms (at most half the lease), so fn learns of a loss before
// another process can take the lock. Default 0: off. It needs a lease: d
// must be at least 1ms and below the lease less that margin.
func WithAutoRefresh(d time.Duration) Option {
	return func(c *config) { c.every = d }
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
	return func(c *config) { c.commandTimeout = d }
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
	return func(c *config) { c.replicas, c.replicaWait = n, timeout }
}

// WithObserver sets the Observer of the locks' calls (see package
// observe). Default, or nil: none, which costs nothing.
func WithObserver(o observe.Observer) Option {
	return func(c *config) { c.observer = o }
}

// WithHolderLabel sets the label that inspect.Lock and ulock status show
// for this process's holds and waiters. It lets an operator tell who holds
// a lock; "" shows none. It travels inside the hold's token (see Holder),
// so it costs no round trip, but it is readable by anyone who can read
// Redis: put no secret in it. At most 64 bytes. Default: the host
// name and the process ID, "web-3:4127".
func WithHolderLabel(s string) Option {
	return func(c *config) { c.label = s }
}

// build applies opts over the defaults and checks the result.
func build(opts []Option) (config, error) {
	cfg := defaults()
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if !cfg.leaseSet {
		cfg.lease = defaultLease(cfg.timeout)
	}
	return cfg, cfg.validate()
}

// defaultLease is the lease that goes with timeout: twice it, at most the
// longest time.Duration.
func defaultLease(timeout time.Duration) time.Duration {
	if timeout > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * timeout
}

func (c *config) validate() error {
	switch {
	case c.timeout <= 0:
		return fmt.Errorf("%w: timeout must be positive, got %v", ErrInvalidArgument, c.timeout)
	case c.ticks <= 0:
		return fmt.Errorf("%w: ticks must be positive, got %d", ErrInvalidArgument, c.ticks)
	case c.lease < 0:
		return fmt.Errorf("%w: lease must not be negative, got %v", ErrInvalidArgument, c.lease)
	case c.prefix == "" || strings.ContainsAny(c.prefix, "{}"):
		return fmt.Errorf("%w: prefix must be non-empty without '{' or '}', got %q", ErrInvalidArgument, c.prefix)
	case c.replicas < 0 || c.replicas > 0 && c.replicaWait <= 0:
		return fmt.Errorf("%w: replicas must not be negative, and their timeout must be positive, got %d and %v", ErrInvalidArgument, c.replicas, c.replicaWait)
	case len(c.label) > limits.Label:
		return fmt.Errorf("%w: holder label must be at most %d bytes, got %d", ErrInvalidArgument, limits.Label, len(c.label))
	case c.commandTimeout < 0:
		return fmt.Errorf("%w: command timeout must not be negative, got %v", ErrInvalidArgument, c.commandTimeout)
	case c.every < 0 || c.every > 0 && (c.every < minTick || c.every >= c.lease-margin(c.lease)):
		return fmt.Errorf("%w: auto-refresh period must be at least %v and below the lease %v less its margin %v, got %v", ErrInvalidArgument, minTick, c.lease, margin(c.lease), c.every)
	}
	return nil
}

// leaseMillis is the lease as Redis's PX wants it; 0 means no expiry.
func (c *config) leaseMillis() int64 {
	ms := int64(c.lease / time.Millisecond)
	if c.lease%time.Millisecond != 0 {
		ms++
	}
	return ms
}
