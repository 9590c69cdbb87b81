package link

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/bound"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Every call the package makes to Redis goes through its Client's link:
// scripts, plain commands and the pub/sub connection that hears of
// hand-offs. The link bounds each call by the command timeout (see Limit)
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

// A Link is a Client's way to Redis: its driver, each call bounded by the
// command timeout, and Redis's error replies read as *serverError.
type Link struct {
	d driver.Driver
	// keeps: the driver's calls keep their connection when their ctx ends
	// (see package driver), so a caller need not leave them behind.
	keeps  bool
	behind behind // the calls whose callers left before the reply came
	// late counts those of them whose reply goes to a late func, until it
	// has returned (see Late).
	late sync.WaitGroup
	// single: Redis said it is not a Cluster (see SlotMap).
	single atomic.Bool
	// rtt is a moving average of how long a call takes, in ns (see Took).
	rtt atomic.Int64
	// answered: a call has had a reply from Redis (see Answered).
	answered atomic.Bool
	// attempts holds a token for each acquisition attempt under way, when
	// the driver's connections are bounded (see Attempting); nil if not.
	attempts chan struct{}
}

// New returns the link through d.
func New(d driver.Driver) *Link {
	_, keeps := d.(interface{ KeepsConnectionsOnCancel() })
	r := &Link{d: d, keeps: keeps}
	if p, ok := d.(interface{ Connections() int }); ok {
		if n := p.Connections(); n > 0 {
			r.attempts = make(chan struct{}, max(1, n/2))
		}
	}
	return r
}

// Attempting waits for room for an acquisition attempt among the driver's
// connections, half of them, leaving the rest to the calls that hand a
// lock on (see package driver), and returns what gives the room back,
// which may be called more than once. It fails, with nothing sent, when
// ctx ends or closed is closed first, with ctx's error or closedErr.
func (r *Link) Attempting(ctx context.Context, closed <-chan struct{}, closedErr error) (done func(), err error) {
	if r.attempts == nil {
		return noRoom, nil
	}
	select {
	case r.attempts <- struct{}{}:
	default:
		select {
		case r.attempts <- struct{}{}:
		case <-ctx.Done():
			return nil, driver.NotSent(ctx.Err())
		case <-closed:
			return nil, driver.NotSent(closedErr)
		}
	}
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			<-r.attempts
		}
	}, nil
}

// noRoom is Attempting's done where attempts take no room.
func noRoom() {}

// Late is what waits for the calls left behind by their callers whose
// reply goes to a late func (see Call) until that func has returned: the
// Client's Close waits for it, as a late reply may hold a grant to give
// back.
func (r *Link) Late() *sync.WaitGroup { return &r.late }

// Keeps reports whether the driver's calls keep their connection when
// their ctx ends (see package driver), so that a caller need not leave
// them behind.
func (r *Link) Keeps() bool { return r.keeps }

// A Reply is what a call to Redis returned.
type Reply struct {
	V        any
	Acked    int64 // WAIT's, for evalWait
	Err      error
	Panicked any  // what the driver panicked with, if it did
	Left     bool // the caller left before the reply came (see Call)
}

// Got returns rep to the caller, or panics as the driver did, in the
// caller's goroutine, whose callers handle a driver's panic.
func (rep Reply) Got() Reply {
	if rep.Panicked != nil {
		panic(rep.Panicked)
	}
	return rep
}

// Eval runs s on keys with args, bounded by ctx and by the command timeout
// d (0: by ctx alone). sent reports whether the script may have reached
// Redis, even when err says the reply did not come.
func (r *Link) Eval(ctx context.Context, d time.Duration, s *driver.Script, keys []string, args ...any) (v any, sent bool, err error) {
	v, sent, _, err = r.EvalLate(ctx, d, s, keys, nil, args...)
	return v, sent, err
}

// EvalLate runs s as eval does; when its caller leaves before the reply
// comes (see Call), left says so, and late, if not nil, gets the reply
// once it has come, or the error that came instead.
func (r *Link) EvalLate(ctx context.Context, d time.Duration, s *driver.Script, keys []string, late func(any, error), args ...any) (v any, sent, left bool, err error) {
	var onLate func(Reply)
	if late != nil {
		onLate = func(rep Reply) { late(rep.V, rep.Err) }
	}
	rep := r.Call(ctx, d, onLate, func(ctx context.Context) Reply {
		v, err := r.d.Eval(ctx, s, keys, args)
		return Reply{V: v, Err: err}
	})
	return rep.V, !errors.Is(rep.Err, driver.ErrNotSent), rep.Left, rep.Err
}

// EvalWait runs s as eval does, then WAIT on the same connection (see
// driver.Driver.EvalWait).
func (r *Link) EvalWait(ctx context.Context, d time.Duration, s *driver.Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	rep := r.Call(ctx, d, nil, func(ctx context.Context) Reply {
		v, acked, err := r.d.EvalWait(ctx, s, keys, args, replicas, timeout)
		return Reply{V: v, Acked: acked, Err: err}
	})
	return rep.V, rep.Acked, rep.Err
}

// Command runs one Command about keys, bounded as eval is.
func (r *Link) Command(ctx context.Context, d time.Duration, keys []string, cmd string, args ...any) (any, error) {
	rep := r.Call(ctx, d, nil, func(ctx context.Context) Reply {
		v, err := r.d.Do(ctx, keys, cmd, args...)
		return Reply{V: v, Err: err}
	})
	return rep.V, rep.Err
}

// Call makes a Call to Redis, do, bounded by ctx and by the command
// timeout d, and reads its error. A caller whose ctx may end before the
// reply comes leaves it behind: do runs in a goroutine under the command
// timeout alone, so that its connection reads the reply and goes back to
// its pool rather than being closed half-way, which would cost the pool a
// new connection for each caller that gives up; the caller returns as soon
// as ctx ends, with ctx's error and left set, and what it sent may have
// run: late, if not nil, gets the reply when it comes, so that what the
// Call got is given back. A Call of a driver that keeps its connections
// when ctx ends (rueidis), and one past maxBehind calls left behind at
// once (a server that stopped answering), ends with ctx, as its driver
// ends it. A Call whose ctx has already ended is not made.
func (r *Link) Call(ctx context.Context, d time.Duration, late func(Reply), do func(context.Context) Reply) Reply {
	if ctx.Done() == nil || d <= 0 || r.keeps || !r.behind.room() {
		l, lctx := NewLimit(ctx, d)
		defer l.Stop()
		rep := do(lctx)
		rep.Err = l.TimedOut(ReplyError(rep.Err))
		r.Took(l, rep.Err)
		return rep
	}
	if err := ctx.Err(); err != nil {
		return Reply{Err: driver.NotSent(err)}
	}
	// The call's ctx ends only at its deadline: a bound.Context, as a driver
	// sees it (bound.Deadline), over the caller's values and the caller,
	// for the driver's wait for a connection (driver.Waiting).
	l, lctx := NewLimit(driver.WithCaller(context.WithoutCancel(ctx), ctx), d)
	l.caller = ctx
	c := &leftCall{reply: make(chan Reply, 1)}
	go func() {
		defer l.Stop()
		rep := Reply{Err: errDriverQuit}
		defer func() {
			if p := recover(); p != nil { // the caller's to panic with, if it waits
				rep = Reply{Panicked: p, Err: fmt.Errorf("uncomplicated: the driver panicked: %v", p)}
			}
			if c.state.CompareAndSwap(running, finished) {
				c.reply <- rep
				return
			}
			r.behind.n.Add(-1) // the caller left
			if late != nil {
				defer r.late.Done()
				rep.Panicked = nil
				late(rep)
			}
		}()
		rep = do(lctx)
		rep.Err = l.TimedOut(ReplyError(rep.Err))
		r.Took(l, rep.Err)
	}()
	select {
	case rep := <-c.reply:
		return rep.Got()
	case <-ctx.Done():
	}
	r.behind.n.Add(1)
	if late != nil {
		r.late.Add(1)
	}
	if !c.state.CompareAndSwap(running, left) { // the reply came all the same
		r.behind.n.Add(-1)
		if late != nil {
			r.late.Done()
		}
		return (<-c.reply).Got()
	}
	return Reply{Err: ctx.Err(), Left: true}
}

// Took counts a call bounded by l that ended with err in the link's
// moving average of how long calls take, if it succeeded.
func (r *Link) Took(l Limit, err error) {
	if err != nil {
		if isServerError(err) {
			r.answered.Store(true)
		}
		return
	}
	if !r.answered.Load() {
		r.answered.Store(true)
	}
	if l.d <= 0 {
		return
	}
	d := int64(time.Since(l.deadline.Add(-l.d)))
	old := r.rtt.Load()
	r.rtt.Store(old + (d-old)/8) // a race loses one sample at most
}

// isServerError reports whether err is an error reply of Redis.
func isServerError(err error) bool {
	var se *ServerError
	return errors.As(err, &se)
}

// Answered reports whether Redis has ever replied to a call of the link,
// if only with an error.
func (r *Link) Answered() bool { return r.answered.Load() }

// RoundTrip is how long a call takes, as the link has seen lately.
func (r *Link) RoundTrip() time.Duration { return time.Duration(r.rtt.Load()) }

// errDriverQuit is the error of a call whose driver ended its goroutine
// (runtime.Goexit) instead of returning.
var errDriverQuit = errors.New("uncomplicated: the driver's call did not return")

// Listen opens a pub/sub connection, sharded or not, waiting no longer
// than ctx. It returns driver.ErrNoPubSub when the driver cannot Listen.
func (r *Link) Listen(ctx context.Context, sharded bool) (driver.Subscription, error) {
	s, err := r.d.Listen(ctx, sharded)
	if err == nil && wire.IsNil(s) {
		err = fmt.Errorf("%w: Driver.Listen returned a nil Subscription", sentinel.ErrInvalidArgument)
	}
	return s, ReplyError(err)
}

// A ServerError is an error reply of Redis. It wraps the driver's own
// error, for callers that look for it with errors.As.
type ServerError struct {
	Msg string
	err error
}

func (e *ServerError) Error() string { return e.Msg }
func (e *ServerError) Unwrap() error { return e.err }

// RedisError marks e as an error reply of Redis, as package driver says
// of its own.
func (e *ServerError) RedisError() {}

// ReplyError turns a driver's error reply into a *serverError.
func ReplyError(err error) error {
	if err == nil {
		return nil
	}
	var se *ServerError
	if errors.As(err, &se) {
		return err
	}
	var re interface{ RedisError() }
	if errors.As(err, &re) {
		return &ServerError{Msg: err.Error(), err: err}
	}
	return err
}

// Loading reports Redis's LOADING error: the server restarted and is
// reading its data from disk.
func Loading(err error) bool {
	var se *ServerError
	return errors.As(err, &se) && strings.HasPrefix(se.Msg, "LOADING ")
}

// Transient reports whether err, a failed call, may pass by itself, so
// that a blocking acquisition tries again on its next tick: no connection,
// a connection broken or a reply that did not come in time, or Redis
// answering that it is loading its data, a replica, cut off from its
// master or its Cluster, or between slots (LOADING, READONLY, MASTERDOWN,
// CLUSTERDOWN, TRYAGAIN). Other error replies (a wrong type, NOPERM, OOM,
// a bad argument), a reply that cannot be read, a closed Client and an
// ended ctx are not.
func Transient(err error) bool {
	var se *ServerError
	if errors.As(err, &se) {
		code, _, _ := strings.Cut(se.Msg, " ")
		switch code {
		case "LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN":
			return true
		}
		return false
	}
	return !errors.Is(err, driver.ErrUnexpectedReply) && !errors.Is(err, sentinel.ErrClosed) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// MayHaveRun reports whether a script that failed with err after it was
// sent may have run: its reply was lost, rather than Redis refusing it or
// answering what cannot be read.
func MayHaveRun(sent bool, err error) bool {
	var se *ServerError
	return sent && !errors.As(err, &se) && !errors.Is(err, driver.ErrUnexpectedReply)
}

// AskAgain reports whether an acquisition whose reply was lost with err is
// asked again at once. One that did not come in time (the command timeout,
// or the connection's read deadline) is not: asking a server that does not
// answer would make the caller wait as long again, so the acquisition
// fails and its possible hold is released in the background.
func AskAgain(err error) bool {
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// The command timeout (WithCommandTimeout) bounds every call to Redis,
// whatever the caller's ctx says. Command timeouts are real time, as
// connections' deadlines are: this file, package bound and the redigo
// driver alone read the wall clock (and Client.Close, to bound its wait),
// to set them, to time the calls (took), and to read what is left of a
// ctx's deadline, which is real time too (deadlineLeft, endsBy).

// A Limit is the bound of one call: the caller's ctx and the command
// timeout d.
type Limit struct {
	caller   context.Context // the caller's ctx
	d        time.Duration   // the command timeout; 0: none
	deadline time.Time       // d after the call began; zero without d
	bound    *bound.Context  // the call's ctx, when the caller's can never end
	cancel   context.CancelFunc
}

// NewLimit bounds ctx by d. A caller's ctx that can never end
// (context.Background) gets a bound.Context, which starts no timer unless
// something waits on it; the redigo driver then bounds the command by its
// connection's read deadline.
func NewLimit(ctx context.Context, d time.Duration) (Limit, context.Context) {
	l := Limit{caller: ctx, d: d}
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

// Stop ends the call's ctx.
func (l Limit) Stop() {
	switch {
	case l.bound != nil:
		l.bound.Stop()
	case l.cancel != nil:
		l.cancel()
	}
}

// TimedOut turns the error of a call (what did not come) that ran out of
// the command timeout into one that says so and matches
// os.ErrDeadlineExceeded, as a connection's own deadline does, and not
// context.DeadlineExceeded, which is the caller's ctx's. A call ran out of
// it when the call's deadline has passed, before any deadline of the
// caller's ctx, which has not ended: whether the call's ctx or the socket's
// deadline, set from it, noticed first.
func (l Limit) TimedOut(err error) error {
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
	var cause error // os.ErrDeadlineExceeded's, and what came instead of the reply
	if !ctxErr {
		cause = err
	}
	return &deadlineError{msg: msg, cause: cause}
}

// A deadlineError is a call that ran out of the command timeout (see
// Limit.TimedOut): it matches os.ErrDeadlineExceeded, and what came instead
// of the reply, if anything did.
type deadlineError struct {
	msg   string
	cause error
}

func (e *deadlineError) Error() string { return e.msg }

// Unwrap returns os.ErrDeadlineExceeded and the cause.
func (e *deadlineError) Unwrap() []error { return []error{os.ErrDeadlineExceeded, e.cause} }

// behind counts the calls under way whose callers left them (see Call).
type behind struct {
	n atomic.Int32
}

// A leftCall is a call whose caller may leave it (see Link.Call).
type leftCall struct {
	reply chan Reply   // its reply, for the caller
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

// DeadlineLeft is how long ctx has until its deadline, if it has one: real
// time, as ctx's own timer counts it.
func DeadlineLeft(ctx context.Context) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(dl), true
}

// EndsBy reports whether what Redis keeps for expiry from a moment before
// now ends within a few milliseconds of ctx's deadline: real time, as
// ctx's own timer counts it.
func EndsBy(ctx context.Context, expiry time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Add(expiry).After(dl.Add(5*time.Millisecond))
}

// DetachedTimeout bounds the Redis calls made without the caller's ctx: the
// release that ends Do and the clean-up of a lost acquisition. It is real
// time, as the connections' deadlines are.
const DetachedTimeout = 5 * time.Second
