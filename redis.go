package uncomplicated

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Every call the package makes to Redis goes through this file: a
// connection from the Pool, then one command or one script, bounded by the
// caller's ctx and by the command timeout (WithCommandTimeout). That bound
// is real time, as the connections' deadlines are: this file alone reads
// the wall clock, to set them. The exception is the wake-up listener
// (wakeups.go), which keeps a connection of the pool for as long as the
// Client's goroutines wait and reads it until Close.

// eval runs s with keys and args on a connection from the pool, as EVALSHA,
// or EVAL when the server does not have the script yet, bounded by d (0:
// by ctx alone). sent reports whether the script may have reached Redis,
// even when err says the reply did not come.
func (c *Client) eval(ctx context.Context, d time.Duration, s *script, keys []any, args ...any) (reply any, sent bool, err error) {
	all := make([]any, 0, 2+len(keys)+len(args))
	all = append(append(append(all, s.hash, s.keys), keys...), args...)
	cl, err := c.call(ctx, d)
	if err != nil {
		return nil, false, err
	}
	defer cl.end()
	reply, err = cl.do("EVALSHA", all)
	if e, ok := err.(redis.Error); ok && strings.HasPrefix(string(e), "NOSCRIPT ") {
		all[0] = s.src
		reply, err = cl.do("EVAL", all)
	}
	return reply, true, err
}

// command runs one command on a connection from the pool, bounded by d.
func (c *Client) command(ctx context.Context, d time.Duration, cmd string, args ...any) (any, error) {
	cl, err := c.call(ctx, d)
	if err != nil {
		return nil, err
	}
	defer cl.end()
	return cl.do(cmd, args)
}

// A call is one call to Redis: a connection from the pool, and the
// caller's ctx bounded by the command timeout.
type call struct {
	caller   context.Context // the caller's ctx
	ctx      context.Context // caller, bounded by d
	d        time.Duration   // the command timeout; 0: none
	deadline time.Time       // d after the call began; zero without d
	conn     redis.Conn
	bound    *bound             // ctx, when the caller's can never end
	cancel   context.CancelFunc // ends ctx otherwise; nil when ctx is caller
}

// call gets a connection from the pool for a call bounded by d.
func (c *Client) call(ctx context.Context, d time.Duration) (call, error) {
	cl := call{caller: ctx, ctx: ctx, d: d}
	if d > 0 {
		cl.deadline = time.Now().Add(d)
		if ctx.Done() == nil {
			cl.bound = &bound{Context: ctx, deadline: cl.deadline}
			cl.ctx = cl.bound
		} else {
			cl.ctx, cl.cancel = context.WithDeadline(ctx, cl.deadline)
		}
	}
	conn, err := c.pool.GetContext(cl.ctx)
	switch {
	case err != nil:
		err = cl.timedOut("no connection from the Pool", c.poolError(err))
	case conn == nil:
		err = errNilConn
	}
	if err != nil {
		cl.stop()
		return call{}, err
	}
	cl.conn = conn
	return cl, nil
}

// bound is a ctx that can only end at its deadline, made for a caller's
// ctx that can never end. Unlike context.WithTimeout it starts no timer
// until something waits on Done, which getting an idle connection from a
// pool does not; the command itself is bounded by the connection's read
// deadline.
type bound struct {
	context.Context // the caller's, which never ends
	deadline        time.Time

	mu    sync.Mutex    // guards done, timer and ended
	done  chan struct{} // closed at the deadline; made by Done
	timer *time.Timer
	ended bool // stop was called
}

func (b *bound) Deadline() (time.Time, bool) { return b.deadline, true }

func (b *bound) Done() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = make(chan struct{})
		done := b.done
		switch left := time.Until(b.deadline); {
		case left <= 0:
			close(done)
		case !b.ended: // nobody waits on a call that has ended
			b.timer = time.AfterFunc(left, func() { close(done) })
		}
	}
	return b.done
}

func (b *bound) Err() error {
	select {
	case <-b.Done():
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// stop ends the bound: its timer, if it has one, is stopped.
func (b *bound) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

// end gives the connection back.
func (cl *call) end() {
	_ = cl.conn.Close()
	cl.stop()
}

// stop ends the call's ctx.
func (cl *call) stop() {
	switch {
	case cl.bound != nil:
		cl.bound.stop()
	case cl.cancel != nil:
		cl.cancel()
	}
}

// do runs a command that ends when the call's ctx does. redigo watches a
// ctx with a goroutine per command, in which a malformed reply can panic
// out of reach; a caller's ctx that can never end (context.Background)
// does without it: the connection's read deadline alone bounds the
// command, in place of the pool's read timeout. (A write blocks only when
// the socket's buffer is full, which one command on a fresh call does not
// fill.) A panic while reading the reply in this goroutine becomes an
// error.
func (cl *call) do(cmd string, args []any) (reply any, err error) {
	defer func() {
		if r := recover(); r != nil { // redigo panics on some malformed replies
			reply, err = nil, fmt.Errorf("%w: the connection panicked reading it: %v", ErrUnexpectedReply, r)
		}
	}()
	if cl.caller.Done() == nil {
		if cl.d == 0 {
			return cl.conn.Do(cmd, args...)
		}
		if cwt, ok := cl.conn.(redis.ConnWithTimeout); ok {
			left := time.Until(cl.deadline) // real time, as the connection's deadline
			if left <= 0 {
				return nil, cl.timedOut(noReply, os.ErrDeadlineExceeded)
			}
			reply, err = cwt.DoWithTimeout(left, cmd, args...)
			if !noTimeouts(err) {
				return reply, cl.timedOut(noReply, err)
			}
		}
	}
	cwc, ok := cl.conn.(redis.ConnWithContext)
	if !ok {
		return nil, errNoContext
	}
	reply, err = cwc.DoContext(cl.ctx, cmd, args...)
	return reply, cl.timedOut(noReply, err)
}

// noTimeouts reports the error of redigo's pool when the connection it
// wraps has no DoWithTimeout: nothing was sent, and DoContext will do.
// redigo does not export the error.
func noTimeouts(err error) bool {
	return err != nil && strings.HasSuffix(err.Error(), "does not support ConnWithTimeout")
}

// timedOut turns the error of a step of the call (what did not come) that
// ran out of the command timeout into one that says so and matches
// os.ErrDeadlineExceeded, as a connection's own deadline does, and not
// context.DeadlineExceeded, which is the caller's ctx's. A step ran out of
// it when the call's deadline has passed, before any deadline of the
// caller's ctx, which has not ended: whether the call's ctx or the socket's
// deadline, set from it, noticed first.
func (cl *call) timedOut(what string, err error) error {
	if err == nil || cl.d == 0 || cl.caller.Err() != nil || time.Now().Before(cl.deadline) {
		return err
	}
	if dl, ok := cl.caller.Deadline(); ok && !dl.After(cl.deadline) {
		return err // the caller's deadline came first
	}
	msg := fmt.Sprintf("%s within %v (WithCommandTimeout)", what, cl.d)
	errs := []error{os.ErrDeadlineExceeded}
	if !errors.Is(err, context.DeadlineExceeded) {
		msg += ": " + err.Error()
		errs = append(errs, err)
	}
	return &lockError{msg: msg, errs: errs}
}

const noReply = "no reply from Redis"

// loading reports Redis's LOADING error: the server restarted and is
// reading its data from disk.
func loading(err error) bool {
	if err == nil {
		return false
	}
	var rerr redis.Error // on the heap, as errors.As takes it
	return errors.As(err, &rerr) && strings.HasPrefix(string(rerr), "LOADING ")
}

// mayHaveRun reports whether a script that failed with err after it was
// sent may have run: its reply was lost, rather than Redis refusing it or
// answering what cannot be read.
func mayHaveRun(sent bool, err error) bool {
	var serverErr redis.Error // on the heap, as errors.As takes it
	return sent && !errors.As(err, &serverErr) && !errors.Is(err, ErrUnexpectedReply)
}

// askAgain reports whether an acquisition whose reply was lost with err is
// asked again at once. One that did not come in time (the command timeout,
// or the connection's read deadline) is not: asking a server that does not
// answer would make the caller wait as long again, so the acquisition
// fails and its possible hold is released in the background.
func askAgain(err error) bool {
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// poolError explains a pool that had no connection to give (it is
// exhausted, or waiting for one ran out of time) while the Client's
// wake-up listener holds one of its connections: a pool that allows each
// Client one connection cannot serve its calls while it listens.
func (c *Client) poolError(err error) error {
	if !errors.Is(err, redis.ErrPoolExhausted) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if w := c.wakeups(true); w != nil && w.connected() {
		return fmt.Errorf("%w (the Client keeps one of the Pool's connections to hear of hand-offs while its goroutines wait: let the Pool open one more per Client than the calls it makes at once)", err)
	}
	return err
}

var (
	errNilConn   = fmt.Errorf("%w: Pool returned a nil connection", ErrInvalidArgument)
	errNoContext = fmt.Errorf("%w: Pool's connection does not implement redis.ConnWithContext", ErrInvalidArgument)
)
