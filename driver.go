package uncomplicated

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// A Driver carries a Client's calls to Redis through a Redis client
// library. NewClient makes one for a redigo Pool, and the module
// github.com/uncomplicated-mutex/uncomplicated/goredis one for go-redis;
// NewDriverClient takes any other, such as one for rueidis or valkey-go.
//
// Every call names the keys it is about, all of one lock and so of one
// hash slot: a driver for Redis Cluster runs it on the node that owns that
// slot, following MOVED and ASK as its library does. A call with no keys
// may run on any node.
//
// Replies are what redigo returns: an integer as int64, a bulk string as
// []byte, an array as []any and a nil reply as nil. An error reply of
// Redis is an error with a method RedisError() in its chain, as go-redis's
// are; any other error means the reply did not come. Every method returns
// once ctx ends; the Client bounds ctx by WithCommandTimeout.
type Driver interface {
	// Eval runs script on keys with args: EVALSHA, then EVAL when Redis
	// replies NOSCRIPT.
	Eval(ctx context.Context, script *Script, keys []string, args []any) (any, error)
	// EvalWait runs script as Eval does and then, on the same connection,
	// WAIT replicas timeout, so that WAIT counts the replicas that have
	// the script's writes. acked is WAIT's reply. (See WithReplicas.)
	EvalWait(ctx context.Context, script *Script, keys []string, args []any, replicas int, timeout time.Duration) (reply any, acked int64, err error)
	// Do runs one command on the node that owns keys.
	Do(ctx context.Context, keys []string, cmd string, args ...any) (any, error)
	// Listen opens a connection that listens on channels: with SSUBSCRIBE
	// when sharded, each channel on the node that owns its slot (so a
	// Cluster driver keeps a connection per node), or else with SUBSCRIBE,
	// for a server without sharded pub/sub such as miniredis. The Client
	// closes it.
	Listen(ctx context.Context, sharded bool) (Subscription, error)
}

// A Subscription is a connection that listens on channels. Subscribe,
// Unsubscribe and Ping send their command and return: a failure shows on
// Receive. They are called while another goroutine waits in Receive.
type Subscription interface {
	Subscribe(channel string)
	Unsubscribe(channel string)
	Ping()
	// Receive returns the next event, skipping the replies to Ping, until
	// ctx ends or the connection fails. After an error the Client closes
	// the Subscription and opens another.
	Receive(ctx context.Context) (Event, error)
	Close()
}

// An Event is what a Subscription receives.
type Event struct {
	Kind    EventKind
	Channel string
	Data    []byte // a message's
}

// An EventKind tells the events of a Subscription apart.
type EventKind int

const (
	// EventMessage is a message published on the channel.
	EventMessage EventKind = iota + 1
	// EventSubscribed is Redis's confirmation of a Subscribe.
	EventSubscribed
	// EventUnsubscribed is Redis's confirmation of an Unsubscribe, or an
	// unsubscription of its own: Redis Cluster ends the subscriptions to
	// the channels of a slot that moves to another node.
	EventUnsubscribed
)

// A Script is one of the package's Lua scripts.
type Script struct {
	src  string
	sha  string
	keys int
}

// Source returns the script's Lua source, for EVAL.
func (s *Script) Source() string { return s.src }

// SHA1 returns the hex SHA-1 of the source, for EVALSHA.
func (s *Script) SHA1() string { return s.sha }

// NewDriverClient returns a Client whose calls to Redis go through d, with
// opts as the defaults of every lock it makes, as NewClient does for a
// redigo Pool. Close does not close what d uses.
func NewDriverClient(d Driver, opts ...Option) *Client {
	if isNil(d) {
		return newClient(nil, opts)
	}
	return newClient(external{d}, opts)
}

// external is the driver of a Driver: it bounds each call by the command
// timeout, and reads Redis's error replies.
type external struct{ d Driver }

func (e external) eval(ctx context.Context, d time.Duration, s *Script, keys []string, args ...any) (any, bool, error) {
	l, ctx, cancel := newLimit(ctx, d)
	defer cancel()
	reply, err := e.d.Eval(ctx, s, keys, args)
	return reply, true, l.timedOut(noReply, replyError(err))
}

func (e external) evalWait(ctx context.Context, d time.Duration, s *Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	l, ctx, cancel := newLimit(ctx, d)
	defer cancel()
	reply, acked, err := e.d.EvalWait(ctx, s, keys, args, replicas, timeout)
	return reply, acked, l.timedOut(noReply, replyError(err))
}

func (e external) do(ctx context.Context, d time.Duration, keys []string, cmd string, args ...any) (any, error) {
	l, ctx, cancel := newLimit(ctx, d)
	defer cancel()
	reply, err := e.d.Do(ctx, keys, cmd, args...)
	return reply, l.timedOut(noReply, replyError(err))
}

func (e external) canListen() bool { return true }

func (e external) listen(ctx context.Context, sharded bool) (Subscription, error) {
	s, err := e.d.Listen(ctx, sharded)
	if err == nil && isNil(s) {
		err = fmt.Errorf("%w: Driver.Listen returned a nil Subscription", ErrInvalidArgument)
	}
	return s, replyError(err)
}

// replyError turns a Driver's error reply into a *serverError.
func replyError(err error) error {
	var re interface{ RedisError() }
	if err != nil && errors.As(err, &re) {
		return &serverError{msg: err.Error(), err: err}
	}
	return err
}

// A limit is the bound of one call: the caller's ctx and the command
// timeout d. Command timeouts are real time, as connections' deadlines
// are: the drivers, here and in redigo.go, read the wall clock for them.
type limit struct {
	caller   context.Context // the caller's ctx
	d        time.Duration   // the command timeout; 0: none
	deadline time.Time       // d after the call began; zero without d
}

// newLimit bounds ctx by d.
func newLimit(ctx context.Context, d time.Duration) (limit, context.Context, context.CancelFunc) {
	l := limit{caller: ctx, d: d}
	if d <= 0 {
		return l, ctx, func() {}
	}
	l.deadline = time.Now().Add(d)
	ctx, cancel := context.WithDeadline(ctx, l.deadline)
	return l, ctx, cancel
}

// timedOut turns the error of a step of the call (what did not come) that
// ran out of the command timeout into one that says so and matches
// os.ErrDeadlineExceeded, as a connection's own deadline does, and not
// context.DeadlineExceeded, which is the caller's ctx's. A step ran out of
// it when the call's deadline has passed, before any deadline of the
// caller's ctx, which has not ended: whether the call's ctx or the socket's
// deadline, set from it, noticed first.
func (l limit) timedOut(what string, err error) error {
	if err == nil || l.d == 0 || l.caller.Err() != nil || time.Now().Before(l.deadline) {
		return err
	}
	if dl, ok := l.caller.Deadline(); ok && !dl.After(l.deadline) {
		return err // the caller's deadline came first
	}
	msg := fmt.Sprintf("%s within %v (WithCommandTimeout)", what, l.d)
	errs := []error{os.ErrDeadlineExceeded}
	if !errors.Is(err, context.DeadlineExceeded) {
		msg += ": " + err.Error()
		errs = append(errs, err)
	}
	return &lockError{msg: msg, errs: errs}
}
