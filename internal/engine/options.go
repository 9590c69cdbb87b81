package engine

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

// Option: see uncomplicated.Option.
type Option func(*config)

// Config is what an Option sets, for package uncomplicated's Option.
type Config = config

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

// WithTimeout: see uncomplicated.WithTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// WithTicks: see uncomplicated.WithTicks.
func WithTicks(n int) Option {
	return func(c *config) { c.ticks = n }
}

// WithTakeOver: see uncomplicated.WithTakeOver.
func WithTakeOver(on bool) Option {
	return func(c *config) { c.takeOver, c.takeOverSet = on, true }
}

// WithLease: see uncomplicated.WithLease.
func WithLease(d time.Duration) Option {
	return func(c *config) { c.lease, c.leaseSet = d, true }
}

// WithClock: see uncomplicated.WithClock.
func WithClock(clk clock.Clock) Option {
	return func(c *config) {
		if clk == nil {
			clk = clock.New()
		}
		c.clock = clk
	}
}

// WithLogger: see uncomplicated.WithLogger.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.logger = l
	}
}

// WithPrefix: see uncomplicated.WithPrefix.
func WithPrefix(s string) Option {
	return func(c *config) { c.prefix = s }
}

// WithGemNames: see uncomplicated.WithGemNames.
func WithGemNames() Option {
	return func(c *config) { c.gemNames = true }
}

// WithAutoRefresh: see uncomplicated.WithAutoRefresh.
func WithAutoRefresh(d time.Duration) Option {
	return func(c *config) { c.every = d }
}

// WithCommandTimeout: see uncomplicated.WithCommandTimeout.
func WithCommandTimeout(d time.Duration) Option {
	return func(c *config) { c.commandTimeout = d }
}

// WithReplicas: see uncomplicated.WithReplicas.
func WithReplicas(n int, timeout time.Duration) Option {
	return func(c *config) { c.replicas, c.replicaWait = n, timeout }
}

// WithObserver: see uncomplicated.WithObserver.
func WithObserver(o observe.Observer) Option {
	return func(c *config) { c.observer = o }
}

// WithHolderLabel: see uncomplicated.WithHolderLabel.
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

// The bound of the random sleep between two attempts is timeout/ticks, but
// at most maxTick, so that a waiter never sleeps a second or more at a time,
// and at least minTick, so that no waiter spins on Redis.
const (
	maxTick = time.Second
	minTick = time.Millisecond
)
