package uncomplicated

import (
	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
)

// A Client holds what the locks of one process share. That is the
// connection to Redis (a driver), the default options, the connection that
// listens for hand-offs and the restart watch. It is safe for concurrent
// use.
type Client struct{ face }

// face is the engine's Client, which packages inspect and uncomplicated
// reach with engine.Of.
type face = engine.Face

// inner is c's Client in the engine; nil for a nil Client.
func (c *Client) inner() *engine.Client {
	if c == nil {
		return nil
	}
	return engine.Of(c)
}

// Close wakes every call waiting for one of the Client's locks and makes it
// return ErrClosed. So does every later Lock, TryLock, Refresh, Held, New,
// NewRW and NewSemaphore; a call to Redis under way when Close is called
// ends when Redis answers or its command timeout passes. A release (Unlock,
// RUnlock, Release) still releases, and then reports ErrClosed too. Close
// ends the Client's listening for wake-ups; it closes nothing the driver
// uses. It waits for the Client's clean-ups (of acquisitions whose reply
// was lost, of waiters that left), 2s at most, then cancels what is left:
// it returns within 3s whatever the server does. Close is idempotent.
func (c *Client) Close() error {
	return c.inner().Close()
}

// NewClient returns a Client whose calls to Redis go through d, with opts
// as the defaults of its locks.
//
// A driver adapts a Redis client library: redigo.New(pool) for a redigo
// pool, goredis.NewDriver(rdb) for go-redis, the rueidis module's
// NewDriver(c) for rueidis, or any implementation of package driver.
// Close does not close what d uses. Options are checked,
// and a nil d reported, by New, NewRW and NewSemaphore.
//
// A blocking call (Lock, Do...) waits through Redis restarting or out of
// reach until its ctx ends. While Redis has never answered the Client (a
// wrong address, a first run with no Redis there), the first such wait
// says so, once per Client, at Warn: on the Client's logger, or on
// slog.Default() without WithLogger.
func NewClient(d driver.Driver, opts ...Option) *Client {
	return &Client{face: engine.NewFace(engine.NewClientWith(d, errorMaker{}, options(opts)...))}
}
