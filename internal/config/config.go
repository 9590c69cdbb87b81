// Package config holds the options of a lock (package uncomplicated's
// With… options), their defaults and checks, and the bounds the engine
// derives from them: the tick a waiter sleeps, its queue entry's expiry,
// a hand-off's claim and the margin of a lease.
package config

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// Option: see uncomplicated.Option.
type Option func(*Config)

// Config is what the options fill, starting from Defaults().
type Config struct {
	Timeout  time.Duration
	Ticks    int
	TakeOver bool // a stuck holder is taken over, not reported (WithTakeOver)
	// TakeOverSet is set by WithTakeOver: an Election takes over unless
	// told otherwise.
	TakeOverSet bool
	Lease       time.Duration
	LeaseSet    bool // lease was given; otherwise it is twice timeout
	Clock       clock.Clock
	Logger      *slog.Logger
	Prefix      string
	Every       time.Duration // auto-refresh period of Do; 0 means off
	// CommandTimeout bounds each call to Redis; 0 means only ctx does.
	CommandTimeout time.Duration
	Replicas       int              // replicas that must acknowledge an acquisition; 0: none
	ReplicaWait    time.Duration    // how long they have
	Observer       observe.Observer // nil: none
	Label          string           // the holder label (WithHolderLabel)
	GemNames       bool             // locks are named as the Ruby gem names them (WithGemNames)
}

// Defaults is a Config before any Option: the limits package's defaults.
func Defaults() Config {
	return Config{
		Timeout: limits.Timeout,
		Ticks:   limits.Ticks,
		Clock:   clock.New(),
		Logger:  slog.New(slog.DiscardHandler),
		Prefix:  limits.Prefix,
		Label:   limits.HostLabel(),

		CommandTimeout: limits.CommandTimeout,
	}
}

// WithTimeout: see uncomplicated.WithTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *Config) { c.Timeout = d }
}

// WithTicks: see uncomplicated.WithTicks.
func WithTicks(n int) Option {
	return func(c *Config) { c.Ticks = n }
}

// WithTakeOver: see uncomplicated.WithTakeOver.
func WithTakeOver(on bool) Option {
	return func(c *Config) { c.TakeOver, c.TakeOverSet = on, true }
}

// WithLease: see uncomplicated.WithLease.
func WithLease(d time.Duration) Option {
	return func(c *Config) { c.Lease, c.LeaseSet = d, true }
}

// WithClock: see uncomplicated.WithClock.
func WithClock(clk clock.Clock) Option {
	return func(c *Config) {
		if clk == nil {
			clk = clock.New()
		}
		c.Clock = clk
	}
}

// WithLogger: see uncomplicated.WithLogger.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.Logger = l
	}
}

// WithPrefix: see uncomplicated.WithPrefix.
func WithPrefix(s string) Option {
	return func(c *Config) { c.Prefix = s }
}

// WithGemNames: see uncomplicated.WithGemNames.
func WithGemNames() Option {
	return func(c *Config) { c.GemNames = true }
}

// WithAutoRefresh: see uncomplicated.WithAutoRefresh.
func WithAutoRefresh(d time.Duration) Option {
	return func(c *Config) { c.Every = d }
}

// WithCommandTimeout: see uncomplicated.WithCommandTimeout.
func WithCommandTimeout(d time.Duration) Option {
	return func(c *Config) { c.CommandTimeout = d }
}

// WithReplicas: see uncomplicated.WithReplicas.
func WithReplicas(n int, timeout time.Duration) Option {
	return func(c *Config) { c.Replicas, c.ReplicaWait = n, timeout }
}

// WithObserver: see uncomplicated.WithObserver.
func WithObserver(o observe.Observer) Option {
	return func(c *Config) { c.Observer = o }
}

// WithHolderLabel: see uncomplicated.WithHolderLabel.
func WithHolderLabel(s string) Option {
	return func(c *Config) { c.Label = s }
}

// Build applies opts over the defaults and checks the result.
func Build(opts []Option) (Config, error) {
	cfg := Defaults()
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if !cfg.LeaseSet {
		cfg.Lease = DefaultLease(cfg.Timeout)
	}
	return cfg, cfg.Validate()
}

// DefaultLease is the lease that goes with timeout: twice it, at most the
// longest time.Duration.
func DefaultLease(timeout time.Duration) time.Duration {
	if timeout > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * timeout
}

// Validate reports, as an error wrapping ErrInvalidArgument, the first
// value out of its range.
func (c *Config) Validate() error {
	switch {
	case c.Timeout <= 0:
		return fmt.Errorf("%w: timeout must be positive, got %v", sentinel.ErrInvalidArgument, c.Timeout)
	case c.Ticks <= 0:
		return fmt.Errorf("%w: ticks must be positive, got %d", sentinel.ErrInvalidArgument, c.Ticks)
	case c.Lease < 0:
		return fmt.Errorf("%w: lease must not be negative, got %v", sentinel.ErrInvalidArgument, c.Lease)
	case c.Prefix == "" || strings.ContainsAny(c.Prefix, "{}"):
		return fmt.Errorf("%w: prefix must be non-empty without '{' or '}', got %q", sentinel.ErrInvalidArgument, c.Prefix)
	case c.Replicas < 0 || c.Replicas > 0 && c.ReplicaWait <= 0:
		return fmt.Errorf("%w: replicas must not be negative, and their timeout must be positive, got %d and %v", sentinel.ErrInvalidArgument, c.Replicas, c.ReplicaWait)
	case len(c.Label) > limits.Label:
		return fmt.Errorf("%w: holder label must be at most %d bytes, got %d", sentinel.ErrInvalidArgument, limits.Label, len(c.Label))
	case c.CommandTimeout < 0:
		return fmt.Errorf("%w: command timeout must not be negative, got %v", sentinel.ErrInvalidArgument, c.CommandTimeout)
	case c.Every < 0 || c.Every > 0 && (c.Every < MinTick || c.Every >= c.Lease-Margin(c.Lease)):
		return fmt.Errorf("%w: auto-refresh period must be at least %v and below the lease %v less its margin %v, got %v", sentinel.ErrInvalidArgument, MinTick, c.Lease, Margin(c.Lease), c.Every)
	}
	return nil
}

// LeaseMillis is the lease as Redis's PX wants it; 0 means no expiry.
func (c *Config) LeaseMillis() int64 {
	ms := int64(c.Lease / time.Millisecond)
	if c.Lease%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// The bound of the random sleep between two attempts is timeout/ticks, but
// at most MaxTick, so that a waiter never sleeps a second or more at a time,
// and at least MinTick, so that no waiter spins on Redis.
const (
	MaxTick = time.Second
	MinTick = time.Millisecond
)

// The tick schedule. A waiter tries again after a random sleep below a
// tick, whether or not a hand-off wakes it; its queue entry counts it
// alive for a few ticks after each attempt; its patience with a holder
// (see the engine's patience) counts in the same clock's time. The ticks are
// sub-second, so a stuck or dead waiter costs the others little, and
// random, so waiters of many processes do not try in step.

// Tick is the bound of the random sleep between two attempts.
func (c *Config) Tick() time.Duration {
	return max(min(c.Timeout/time.Duration(c.Ticks), MaxTick), MinTick)
}

// Sleep is a waiter's random sleep between two attempts, below a tick.
func (c *Config) Sleep() time.Duration {
	return jitter(c.Tick())
}

// Expiry is how long a waiter counts as alive after each of its attempts
// (see internal/lua/queue_wait.lua): three ticks and a tenth of a second, so that its next
// attempt, a random time below a tick later, always comes first, while a
// waiter that died holds the queue up only briefly.
func (c *Config) Expiry() time.Duration {
	return 3*c.Tick() + 100*time.Millisecond
}

// MaxClaim bounds a claim (see Claims, in hold.go).
const MaxClaim = time.Second

// Claim is how long a hand-off holds the lock for the waiter until the
// waiter takes it: a second, and never more than the lease. It is a whole
// number of milliseconds, at least one.
func (c *Config) Claim() time.Duration {
	d := MaxClaim
	if c.Lease > 0 {
		d = min(d, c.Lease)
	}
	return max(d.Truncate(time.Millisecond), time.Millisecond)
}

// Claims reports whether a hand-off's claim is shorter than the lease, so
// that the holder must take it.
func (c *Config) Claims() bool {
	return c.Lease == 0 || c.Claim().Milliseconds() < c.LeaseMillis()
}

// TimerSlack is what a holder's margin allows for a timer that fires late
// on a busy machine, and for the goroutine it wakes: 10 to 15ms were seen
// under load, up to 35ms with every CPU busy under the race detector.
const TimerSlack = 40 * time.Millisecond

// Margin is how long before a lease of length lease can end in Redis its
// holder counts the hold as lost: 1% of the lease, for clocks that drift
// apart, plus timerSlack; at most half the lease.
func Margin(lease time.Duration) time.Duration {
	return min(lease/100+TimerSlack, lease/2)
}

// jitter returns a random duration in [0, bound), or 0 when bound is not
// positive.
func jitter(bound time.Duration) time.Duration {
	if bound <= 0 {
		return 0
	}
	return rand.N(bound)
}

// KeepAlive is how often LockAll refreshes the locks it holds while it
// waits, and an Election its leader's hold: every third of the timeout,
// so that no waiter finds the holder stuck, or of the lease if shorter,
// so that a Refresh or two may fail before it ends.
func (c *Config) KeepAlive() time.Duration {
	d := c.Timeout
	if c.Lease > 0 {
		d = min(d, c.Lease)
	}
	return max(d/3, MinTick)
}
