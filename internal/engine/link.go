package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/bound"
)

// Every call the package makes to Redis goes through its Client's link:
// scripts, plain commands and the pub/sub connection that hears of
// hand-offs. The link bounds each call by the command timeout (see limit)
// and reads Redis's error replies; behind it, a driver.Driver knows the
// client library: redigo's in package redigo, go-redis's in the goredis
// module, rueidis's in the rueidis module, any other that implements
// package driver.
//
// Every call names the keys it touches, all of one lock and so, by their
// hash tag, of one cluster slot, so that a driver for Redis Cluster can
// route it; a server command about a node (INFO) names a key on that
// node. Subscriptions are per channel, and each channel carries its lock's
// hash tag, so that sharded pub/sub fits.

// NewClient: see uncomplicated.NewClient. Its errors are the engine's own
// (see Errors).
func NewClient(d driver.Driver, opts ...Option) *Client {
	return NewClientWith(d, lockErrors{}, opts...)
}

// NewClientWith is NewClient whose errors errs makes: package
// uncomplicated's Client passes its own.
func NewClientWith(d driver.Driver, errs Errors, opts ...Option) *Client {
	if isNil(d) {
		return newClient(nil, errs, opts)
	}
	_, keeps := d.(interface{ KeepsConnectionsOnCancel() })
	return newClient(&link{d: d, keeps: keeps, errs: errs}, errs, opts)
}

// A link is a Client's way to Redis: its driver, each call bounded by the
// command timeout, and Redis's error replies read as *serverError.
type link struct {
	d driver.Driver
	// keeps: the driver's calls keep their connection when their ctx ends
	// (see package driver), so a caller need not leave them behind.
	keeps  bool
	errs   Errors // makes the error of a call that ran out of the command timeout
	behind behind // the calls whose callers left before the reply came
	// rtt is a moving average of how long a call takes, in ns (see took).
	rtt atomic.Int64
}

// A reply is what a call to Redis returned.
type reply struct {
	v        any
	acked    int64 // WAIT's, for evalWait
	err      error
	panicked any  // what the driver panicked with, if it did
	left     bool // the caller left before the reply came (see call)
}

// got returns rep to the caller, or panics as the driver did, in the
// caller's goroutine, whose callers handle a driver's panic.
func (rep reply) got() reply {
	if rep.panicked != nil {
		panic(rep.panicked)
	}
	return rep
}

// eval runs s on keys with args, bounded by ctx and by the command timeout
// d (0: by ctx alone). sent reports whether the script may have reached
// Redis, even when err says the reply did not come.
func (r *link) eval(ctx context.Context, d time.Duration, s *driver.Script, keys []string, args ...any) (v any, sent bool, err error) {
	v, sent, _, err = r.evalLate(ctx, d, s, keys, nil, args...)
	return v, sent, err
}

// evalLate runs s as eval does; when its caller leaves before the reply
// comes (see call), left says so, and late, if not nil, gets the reply
// once it has come, or the error that came instead.
func (r *link) evalLate(ctx context.Context, d time.Duration, s *driver.Script, keys []string, late func(any, error), args ...any) (v any, sent, left bool, err error) {
	var onLate func(reply)
	if late != nil {
		onLate = func(rep reply) { late(rep.v, rep.err) }
	}
	rep := r.call(ctx, d, onLate, func(ctx context.Context) reply {
		v, err := r.d.Eval(ctx, s, keys, args)
		return reply{v: v, err: err}
	})
	return rep.v, !errors.Is(rep.err, driver.ErrNotSent), rep.left, rep.err
}

// evalWait runs s as eval does, then WAIT on the same connection (see
// driver.Driver.EvalWait).
func (r *link) evalWait(ctx context.Context, d time.Duration, s *driver.Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	rep := r.call(ctx, d, nil, func(ctx context.Context) reply {
		v, acked, err := r.d.EvalWait(ctx, s, keys, args, replicas, timeout)
		return reply{v: v, acked: acked, err: err}
	})
	return rep.v, rep.acked, rep.err
}

// command runs one command about keys, bounded as eval is.
func (r *link) command(ctx context.Context, d time.Duration, keys []string, cmd string, args ...any) (any, error) {
	rep := r.call(ctx, d, nil, func(ctx context.Context) reply {
		v, err := r.d.Do(ctx, keys, cmd, args...)
		return reply{v: v, err: err}
	})
	return rep.v, rep.err
}

// call makes a call to Redis, do, bounded by ctx and by the command
// timeout d, and reads its error. A caller whose ctx may end before the
// reply comes leaves it behind: do runs in a goroutine under the command
// timeout alone, so that its connection reads the reply and goes back to
// its pool rather than being closed half-way, which would cost the pool a
// new connection for each caller that gives up; the caller returns as soon
// as ctx ends, with ctx's error and left set, and what it sent may have
// run: late, if not nil, gets the reply when it comes, so that what the
// call got is given back. A call of a driver that keeps its connections
// when ctx ends (rueidis), and one past maxBehind calls left behind at
// once (a server that stopped answering), ends with ctx, as its driver
// ends it. A call whose ctx has already ended is not made.
func (r *link) call(ctx context.Context, d time.Duration, late func(reply), do func(context.Context) reply) reply {
	if ctx.Done() == nil || d <= 0 || r.keeps || !r.behind.room() {
		l, lctx := newLimit(ctx, d)
		defer l.stop()
		rep := do(lctx)
		rep.err = l.timedOut(r.errs, replyError(rep.err))
		r.took(l, rep.err)
		return rep
	}
	if err := ctx.Err(); err != nil {
		return reply{err: driver.NotSent(err)}
	}
	l, lctx := newLimit(context.WithoutCancel(ctx), d)
	l.caller = ctx
	lctx = driver.WithCaller(lctx, ctx)
	c := &leftCall{reply: make(chan reply, 1)}
	go func() {
		defer l.stop()
		rep := reply{err: errDriverQuit}
		defer func() {
			if p := recover(); p != nil { // the caller's to panic with, if it waits
				rep = reply{panicked: p, err: fmt.Errorf("uncomplicated: the driver panicked: %v", p)}
			}
			if c.state.CompareAndSwap(running, finished) {
				c.reply <- rep
				return
			}
			r.behind.n.Add(-1) // the caller left
			if late != nil {
				rep.panicked = nil
				late(rep)
			}
		}()
		rep = do(lctx)
		rep.err = l.timedOut(r.errs, replyError(rep.err))
		r.took(l, rep.err)
	}()
	select {
	case rep := <-c.reply:
		return rep.got()
	case <-ctx.Done():
	}
	r.behind.n.Add(1)
	if !c.state.CompareAndSwap(running, left) { // the reply came all the same
		r.behind.n.Add(-1)
		return (<-c.reply).got()
	}
	return reply{err: ctx.Err(), left: true}
}

// took counts a call bounded by l that ended with err in the link's
// moving average of how long calls take, if it succeeded.
func (r *link) took(l limit, err error) {
	if err != nil || l.d <= 0 {
		return
	}
	d := int64(time.Since(l.deadline.Add(-l.d)))
	old := r.rtt.Load()
	r.rtt.Store(old + (d-old)/8) // a race loses one sample at most
}

// roundTrip is how long a call takes, as the link has seen lately.
func (r *link) roundTrip() time.Duration { return time.Duration(r.rtt.Load()) }

// errDriverQuit is the error of a call whose driver ended its goroutine
// (runtime.Goexit) instead of returning.
var errDriverQuit = errors.New("uncomplicated: the driver's call did not return")

// listen opens a pub/sub connection, sharded or not, waiting no longer
// than ctx. It returns driver.ErrNoPubSub when the driver cannot listen.
func (r *link) listen(ctx context.Context, sharded bool) (driver.Subscription, error) {
	s, err := r.d.Listen(ctx, sharded)
	if err == nil && isNil(s) {
		err = fmt.Errorf("%w: Driver.Listen returned a nil Subscription", ErrInvalidArgument)
	}
	return s, replyError(err)
}

// A serverError is an error reply of Redis. It wraps the driver's own
// error, for callers that look for it with errors.As.
type serverError struct {
	msg string
	err error
}

func (e *serverError) Error() string { return e.msg }
func (e *serverError) Unwrap() error { return e.err }

// RedisError: see uncomplicated.serverError.RedisError.
func (e *serverError) RedisError() {}

// replyError turns a driver's error reply into a *serverError.
func replyError(err error) error {
	if err == nil {
		return nil
	}
	var se *serverError
	if errors.As(err, &se) {
		return err
	}
	var re interface{ RedisError() }
	if errors.As(err, &re) {
		return &serverError{msg: err.Error(), err: err}
	}
	return err
}

// loading reports Redis's LOADING error: the server restarted and is
// reading its data from disk.
func loading(err error) bool {
	var se *serverError
	return errors.As(err, &se) && strings.HasPrefix(se.msg, "LOADING ")
}

// transient reports whether err, a failed call, may pass by itself, so
// that a blocking acquisition tries again on its next tick: no connection,
// a connection broken or a reply that did not come in time, or Redis
// answering that it is loading its data, a replica, cut off from its
// master or its Cluster, or between slots (LOADING, READONLY, MASTERDOWN,
// CLUSTERDOWN, TRYAGAIN). Other error replies (a wrong type, NOPERM, OOM,
// a bad argument), a reply that cannot be read, a closed Client and an
// ended ctx are not.
func transient(err error) bool {
	var se *serverError
	if errors.As(err, &se) {
		code, _, _ := strings.Cut(se.msg, " ")
		switch code {
		case "LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN":
			return true
		}
		return false
	}
	return !errors.Is(err, driver.ErrUnexpectedReply) && !errors.Is(err, ErrClosed) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// mayHaveRun reports whether a script that failed with err after it was
// sent may have run: its reply was lost, rather than Redis refusing it or
// answering what cannot be read.
func mayHaveRun(sent bool, err error) bool {
	var se *serverError
	return sent && !errors.As(err, &se) && !errors.Is(err, driver.ErrUnexpectedReply)
}

// askAgain reports whether an acquisition whose reply was lost with err is
// asked again at once. One that did not come in time (the command timeout,
// or the connection's read deadline) is not: asking a server that does not
// answer would make the caller wait as long again, so the acquisition
// fails and its possible hold is released in the background.
func askAgain(err error) bool {
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// The command timeout (WithCommandTimeout) bounds every call to Redis,
// whatever the caller's ctx says. Command timeouts are real time, as
// connections' deadlines are: this file, package bound and the redigo
// driver alone read the wall clock (and Client.Close, to bound its wait),
// to set them, to time the calls (took), and to read what is left of a
// ctx's deadline, which is real time too (deadlineLeft, endsBy).

// A limit is the bound of one call: the caller's ctx and the command
// timeout d.
type limit struct {
	caller   context.Context // the caller's ctx
	d        time.Duration   // the command timeout; 0: none
	deadline time.Time       // d after the call began; zero without d
	bound    *bound.Context  // the call's ctx, when the caller's can never end
	cancel   context.CancelFunc
}

// newLimit bounds ctx by d. A caller's ctx that can never end
// (context.Background) gets a bound.Context, which starts no timer unless
// something waits on it; the redigo driver then bounds the command by its
// connection's read deadline.
func newLimit(ctx context.Context, d time.Duration) (limit, context.Context) {
	l := limit{caller: ctx, d: d}
	if d <= 0 {
		return l, ctx
	}
	l.deadline = time.Now().Add(d)
	if ctx.Done() == nil {
		l.bound = bound.New(ctx, l.deadline)
		return l, l.bound
	}
	ctx, l.cancel = context.WithDeadline(ctx, l.deadline)
	return l, ctx
}

// stop ends the call's ctx.
func (l limit) stop() {
	switch {
	case l.bound != nil:
		l.bound.Stop()
	case l.cancel != nil:
		l.cancel()
	}
}

// timedOut turns the error of a call (what did not come) that ran out of
// the command timeout into one, made by errs, that says so and matches
// os.ErrDeadlineExceeded, as a connection's own deadline does, and not
// context.DeadlineExceeded, which is the caller's ctx's. A call ran out of
// it when the call's deadline has passed, before any deadline of the
// caller's ctx, which has not ended: whether the call's ctx or the socket's
// deadline, set from it, noticed first.
func (l limit) timedOut(errs Errors, err error) error {
	if err == nil || l.d == 0 || l.caller.Err() != nil || time.Now().Before(l.deadline) {
		return err
	}
	if dl, ok := l.caller.Deadline(); ok && !dl.After(l.deadline) {
		return err // the caller's deadline came first
	}
	msg := fmt.Sprintf("no reply from Redis within %v (WithCommandTimeout)", l.d)
	notSent, ctxErr := errors.Is(err, driver.ErrNotSent), errors.Is(err, context.DeadlineExceeded)
	if notSent {
		msg = fmt.Sprintf("not sent to Redis within %v (WithCommandTimeout)", l.d)
	}
	if notSent || !ctxErr { // what kept it from leaving, or what came instead of the reply
		msg += ": " + err.Error()
	}
	if ctxErr {
		return errs.New("", msg, os.ErrDeadlineExceeded)
	}
	return errs.New("", msg, err, os.ErrDeadlineExceeded) // what came instead of the reply
}

// behind counts the calls under way whose callers left them (see call).
type behind struct {
	n atomic.Int32
}

// A leftCall is a call whose caller may leave it (see link.call).
type leftCall struct {
	reply chan reply   // its reply, for the caller
	state atomic.Int32 // running, then finished or left, whichever comes first
}

// The states of a leftCall.
const (
	running int32 = iota
	finished
	left
)

// maxBehind bounds the calls a Client leaves behind at once: each keeps a
// connection and a goroutine for up to the command timeout.
const maxBehind = 256

// room reports whether another call may be left behind.
func (b *behind) room() bool { return b.n.Load() < maxBehind }

// deadlineLeft is how long ctx has until its deadline, if it has one: real
// time, as ctx's own timer counts it.
func deadlineLeft(ctx context.Context) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(dl), true
}

// endsBy reports whether what Redis keeps for expiry from a moment before
// now ends within a few milliseconds of ctx's deadline: real time, as
// ctx's own timer counts it.
func endsBy(ctx context.Context, expiry time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Add(expiry).After(dl.Add(5*time.Millisecond))
}
