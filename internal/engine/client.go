package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Client: see uncomplicated.Client.
type Client struct {
	redis *link.Link // nil for a nil driver
	errs  Errors     // makes the errors of its locks
	opts  []config.Option
	cfg   config.Config // opts built, or the defaults when they are invalid
	// cfgErr is why opts are invalid, which the constructors report.
	cfgErr error
	tail   string        // the tokens' tail of a lock with cfg's timeout and label (see base.tail)
	id     string        // names the Client's wake-up channels
	done   chan struct{} // closed by Close
	// ctx is cancelled by Close: it ends the Client's own calls.
	ctx    context.Context
	cancel context.CancelFunc
	// cleanCtx bounds the clean-ups: Close cancels it once it has waited
	// closeGrace for them.
	cleanCtx    context.Context
	cleanCancel context.CancelFunc

	mu       sync.Mutex     // guards closing, wake and the Adds to cleanups
	closing  bool           // Close has begun
	wake     *link.Wakeups  // the listening connection, made by the first waiter
	cleanups sync.WaitGroup // background clean-ups, the listening connection, the restart watch

	cleaner  cleaner      // its clean-ups
	slack    slack        // how much sooner its waiters leave the queue than their deadlines
	tokens   owned        // the tokens of its waiters and holds, and the holds it released
	restarts restartWatch // its holds and releases, checked when Redis restarts
	failures logLimit     // when each lock's failed attempts were last logged
	// unreached is set once a wait has said that Redis never answered the
	// Client (see base.unreached).
	unreached atomic.Bool
}

func newClient(l *link.Link, errs Errors, opts []config.Option) *Client {
	ctx, cancel := context.WithCancel(context.Background())
	cleanCtx, cleanCancel := context.WithCancel(context.Background())
	c := &Client{
		redis: l, errs: errs, opts: slices.Clone(opts), id: wire.NewToken()[:11], done: make(chan struct{}),
		ctx: ctx, cancel: cancel, cleanCtx: cleanCtx, cleanCancel: cleanCancel,
	}
	if c.cfg, c.cfgErr = config.Build(c.opts); c.cfgErr != nil {
		c.cfg = config.Defaults() // New and the other constructors report cfgErr
	}
	c.tail = wire.TokenTail(c.cfg.Timeout, c.cfg.Label)
	c.restarts.c = c
	return c
}

// Close: see uncomplicated.Client.Close.
func (c *Client) Close() error {
	if c == nil || c.done == nil {
		return fmt.Errorf("%w: nil *Client", sentinel.ErrInvalidArgument)
	}
	c.mu.Lock()
	if !c.closing {
		c.closing = true
		close(c.done)
		c.cancel()
		if c.wake != nil {
			c.wake.Cancel()
		}
	}
	c.mu.Unlock()
	lateAndCleanups := func() {
		if c.redis != nil {
			c.redis.Late().Wait() // their give-backs are clean-ups
		}
		c.cleanups.Wait()
	}
	if !waitAtMost(lateAndCleanups, closeGrace) {
		c.cleanCancel()
		waitAtMost(c.cleanups.Wait, closeAbandon)
	}
	return nil
}

// Close waits closeGrace for the calls that callers left behind, whose
// late replies may hold grants to give back, for the Client's clean-ups
// and the rest of its background work, then cancels what is left and
// waits closeAbandon more for it to end: a driver that does not end a
// call with its ctx is left to end it by its command timeout.
const (
	closeGrace   = 2 * time.Second
	closeAbandon = 500 * time.Millisecond
)

// waitAtMost waits for wait to return, or d of real time, as the command
// timeout is; it reports whether wait returned.
func waitAtMost(wait func(), d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wait()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// backgroundStarts counts a background task, which Close waits for; once
// Close has begun it counts nothing and reports false.
func (c *Client) backgroundStarts() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.cleanups.Add(1)
	return true
}

// wakeups returns the Client's listening connection, starting it unless
// started is set; it returns nil when there is none.
func (c *Client) wakeups(started bool) *link.Wakeups {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wake != nil || started || c.closing {
		return c.wake
	}
	cfg := c.settings()
	c.wake = link.NewWakeups(c.redis, cfg.Clock, cfg.CommandTimeout, cfg.Prefix)
	c.wake.Broke = c.restarts.broke
	c.wake.Refused = func(err error) {
		cfg.Logger.LogAttrs(c.ctx, slog.LevelWarn, "uncomplicated: Redis refused to let this Client listen for hand-offs; its waiters try on their ticks alone",
			slog.Any("error", err))
	}
	c.cleanups.Add(1)
	go func() {
		defer c.cleanups.Done()
		c.wake.Run()
	}()
	return c.wake
}

func (c *Client) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// config merges the Client's options with opts and checks the result.
func (c *Client) lockConfig(opts []config.Option) (config.Config, error) {
	switch {
	case c == nil || c.done == nil:
		return config.Config{}, fmt.Errorf("%w: nil *Client", sentinel.ErrInvalidArgument)
	case c.redis == nil:
		return config.Config{}, fmt.Errorf("%w: nil driver", sentinel.ErrInvalidArgument)
	case c.closed():
		return config.Config{}, sentinel.ErrClosed
	}
	if len(opts) == 0 { // a lock with the Client's options, as most are
		return c.cfg, c.cfgErr
	}
	return config.Build(append(slices.Clone(c.opts), opts...))
}

// An Access is how package inspect reads and breaks locks: the Client's
// link, prefix and command timeout, and the errors of its locks.
type Access struct {
	Link           *link.Link
	Prefix         string
	CommandTimeout time.Duration
	c              *Client
}

// Access returns c's Access, or the error of a nil, driverless or closed
// Client, or of its invalid options; the Access returned with an error
// still makes errors.
func (c *Client) Access() (Access, error) {
	cfg, err := c.lockConfig(nil)
	if err != nil {
		return Access{c: c}, err
	}
	return Access{Link: c.redis, Prefix: cfg.Prefix, CommandTimeout: cfg.CommandTimeout, c: c}, nil
}

// Error is the error msg of the lock named name, for cause.
func (a Access) Error(name, msg string, cause error) error {
	if a.c == nil {
		return cause
	}
	return a.c.newError(name, msg, cause)
}

// OpError names op in the errors of the lock named name within err (see
// Client.opError), and returns err.
func (a Access) OpError(op, name string, err error) error { return a.c.opError(op, name, err) }

// settings returns the Client's options, or the defaults when they are
// invalid (New and the other constructors report that).
func (c *Client) settings() config.Config { return c.cfg }

// A Face is what package uncomplicated's Client embeds: the engine's
// Client, which Of gives back to the packages of the module (inspect,
// uncomplicated), typed. No program outside the module can name it.
type Face struct{ c *Client }

// NewFace returns the Face of c.
func NewFace(c *Client) Face { return Face{c} }

func (f Face) engine() *Client { return f.c }

// A Faced embeds a Face: an uncomplicated.Client.
type Faced interface{ engine() *Client }

// Of returns the engine's Client of f.
func Of(f Faced) *Client { return f.engine() }

// NewClient: see uncomplicated.NewClient. Its errors are the engine's own
// (see Errors).
func NewClient(d driver.Driver, opts ...config.Option) *Client {
	return NewClientWith(d, lockErrors{}, opts...)
}

// NewClientWith is NewClient whose errors errs makes: package
// uncomplicated's Client passes its own.
func NewClientWith(d driver.Driver, errs Errors, opts ...config.Option) *Client {
	if wire.IsNil(d) {
		return newClient(nil, errs, opts)
	}
	return newClient(link.New(d), errs, opts)
}

// newError is the error msg of the lock named name, for cause, that also
// matches is, made by c's Errors. Without a cause, the first of is is the
// cause.
func (c *Client) newError(name, msg string, cause error, is ...error) error {
	if cause == nil && len(is) > 0 {
		cause, is = is[0], is[1:]
	}
	return c.errs.New(name, msg, cause, is...)
}

// opError names op in the errors of the lock named name within err that
// name none yet, and returns err. A nil Client's errors are plain: it
// returns err as it is.
func (c *Client) opError(op, name string, err error) error {
	if c != nil {
		nameOp(c.errs, op, name, err)
	}
	return err
}
