// Package driver is the contract between uncomplicated and a Redis client
// library: what a Client needs of Redis, and the shapes of its replies.
//
// Users never import it. Those who write a driver for a client library
// (go-redis, rueidis, valkey-go...) implement Driver, and users hand it to
// uncomplicated.NewClient, as package
// github.com/uncomplicated-mutex/uncomplicated/redigo and the modules
// github.com/uncomplicated-mutex/uncomplicated/goredis and .../rueidis do.
//
// Every call names the keys it is about, all of one lock and so of one
// hash slot: a driver for Redis Cluster runs it on the node that owns that
// slot, following MOVED and ASK as its library does. A call with no keys
// may run on any node.
//
// Replies are what redigo returns: an integer as int64, a bulk string as
// []byte, a status as string, an array as []any and a nil reply as nil.
// An error reply of Redis is an error with a method RedisError() in its
// chain, as go-redis's are; any other error means the reply did not come.
// An error of a call that never left for Redis is marked with NotSent.
//
// Every method returns once ctx ends, or, where the driver says so, once
// ctx's deadline passes: a driver over a client that its user set to bound
// calls by their deadline alone, to spare a goroutine per call, may let a
// cancel wait for that deadline (package goredis with
// ContextTimeoutEnabled). The Client bounds ctx by its command timeout
// (uncomplicated.WithCommandTimeout) before each call, and turns what ran
// out of it into an error matching os.ErrDeadlineExceeded.
//
// Most client libraries close a connection whose command a cancelled ctx
// cut short, so the Client runs a call that its caller may leave in a
// goroutine of its own, under the command timeout alone, and the
// connection reads the reply and goes back to its pool. A driver whose
// calls keep their connection when ctx ends (rueidis, which multiplexes
// them, discards the reply) says so with a method KeepsConnectionsOnCancel(),
// which spares that goroutine; its calls must reach Redis in the order they
// were made, as a release must come after the attempt it gives back.
//
// A driver whose calls share a pool of connections says how many it keeps
// with a method Connections() int (go-redis's PoolSize, a redigo pool's
// MaxActive, or its MaxIdle when unbounded). The Client then lets
// acquisition attempts use half of them at most: callers that wait for a
// lock queue for that half, and a release, which hands the lock to the
// next waiter, never waits for a connection behind them. A lock taken and
// released takes one call of each, so the split costs uncontended locks
// nothing.
package driver

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// A Driver carries a Client's calls to Redis through a client library.
type Driver interface {
	// Eval runs script on keys with args: EVALSHA, then EVAL when Redis
	// replies NOSCRIPT.
	Eval(ctx context.Context, script *Script, keys []string, args []any) (any, error)
	// EvalWait runs script as Eval does and then, on the same connection,
	// WAIT replicas timeout, so that WAIT counts the replicas that have
	// the script's writes. acked is WAIT's reply.
	EvalWait(ctx context.Context, script *Script, keys []string, args []any, replicas int, timeout time.Duration) (reply any, acked int64, err error)
	// Do runs one command on the node that owns keys.
	Do(ctx context.Context, keys []string, cmd string, args ...any) (any, error)
	// Listen opens a connection that listens on channels: with SSUBSCRIBE
	// when sharded, each channel on the node that owns its slot (so a
	// Cluster driver keeps a connection per node), or else with SUBSCRIBE,
	// for a server without sharded pub/sub such as miniredis. The Client
	// closes it. A driver that cannot listen returns ErrNoPubSub, and the
	// Client's waiters then try again on their ticks only.
	Listen(ctx context.Context, sharded bool) (Subscription, error)
}

// A Subscription is a connection that listens on channels.
//
// Subscribe, Unsubscribe and Ping send their command and return: a failure
// shows on Receive. They are called while another goroutine waits in
// Receive.
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

// A Script is one of the Client's Lua scripts.
type Script struct {
	src  string
	sha  string
	keys int
}

// NewScript returns the Script of the Lua source src, which takes keys
// KEYS.
func NewScript(keys int, src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{src: src, sha: hex.EncodeToString(sum[:]), keys: keys}
}

// Keys returns the number of KEYS the script takes: every call passes that
// many.
func (s *Script) Keys() int { return s.keys }

// Source returns the script's Lua source, for EVAL.
func (s *Script) Source() string { return s.src }

// SHA1 returns the hex SHA-1 of the source, for EVALSHA.
func (s *Script) SHA1() string { return s.sha }

// ErrNoPubSub is Listen's error when the driver's connections cannot
// listen.
var ErrNoPubSub = errors.New("uncomplicated: connection cannot listen")

// ErrUnexpectedReply matches the error of a reply of a shape the Client
// cannot read: a server that is not Redis 7 or later, a proxy that mangles
// replies, or a driver that breaks the shapes above.
var ErrUnexpectedReply = errors.New("uncomplicated: unexpected reply from Redis")

// ErrNotSent matches the errors NotSent marks.
var ErrNotSent = errors.New("uncomplicated: not sent to Redis")

// NotSent marks err as the error of a call that never left for Redis. A
// pool with no connection to give is one: the Client then knows that a
// script did not run.
func NotSent(err error) error {
	if err == nil {
		return nil
	}
	return notSent{err}
}

// notSent is an error NotSent marked; it reads as the error it marks.
type notSent struct{ err error }

func (e notSent) Error() string        { return e.err.Error() }
func (e notSent) Unwrap() error        { return e.err }
func (e notSent) Is(target error) bool { return target == ErrNotSent }

// callerKey is the key of the caller's ctx in the ctx of a call (see
// WithCaller).
type callerKey struct{}

// WithCaller returns ctx carrying caller, the ctx of the Client's caller,
// for a call that the caller may leave before its reply comes: ctx ends
// only with the command timeout, caller may end before. The Client calls
// it; a driver reads it with Waiting.
func WithCaller(ctx, caller context.Context) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// Waiting returns the ctx under which a driver waits for a connection for
// a call under ctx (from its pool, or dialling): it has ctx's deadline and
// values, and ends when ctx does or, for a call that its caller may leave
// (see WithCaller), with context.Canceled when the caller's ctx ends. So a
// call whose caller has left before it had a connection ends unsent,
// rather than holding a place in the pool's queue for its command timeout,
// while one already sent runs under ctx alone, and its connection reads the
// reply rather than being closed half-way. Nothing watches the two ctxs
// until something asks for Done: a pool with an idle connection costs no
// goroutine. stop releases what it holds; a driver calls it once it has
// its connection, or has given up.
func Waiting(ctx context.Context) (wctx context.Context, stop func()) {
	caller, ok := ctx.Value(callerKey{}).(context.Context)
	if !ok || caller.Done() == nil {
		return ctx, func() {}
	}
	w := &waiting{Context: ctx, caller: caller}
	return w, w.stop
}

// waiting is Waiting's ctx of a call that its caller may leave.
type waiting struct {
	context.Context                 // the call's
	caller          context.Context // the caller's

	mu      sync.Mutex
	done    chan struct{} // made by the first Done
	err     error         // why it ended; nil until then
	unhooks [2]func() bool
	stopped bool // stop was called: a Done asked from then on watches nothing
}

// Done returns a channel that closes when the call's ctx or the caller's
// ends, watching them from its first call on, unless stop came first.
func (w *waiting) Done() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		return w.done
	}
	w.done = make(chan struct{})
	if w.err == nil {
		w.err = w.ended()
	}
	switch {
	case w.err != nil:
		close(w.done)
	case !w.stopped:
		w.unhooks[0] = context.AfterFunc(w.caller, w.check)
		if a, ok := w.Context.(afterFuncer); ok { // a bound of the Client's: no goroutine
			w.unhooks[1] = a.AfterFunc(w.check)
		} else {
			w.unhooks[1] = context.AfterFunc(w.Context, w.check)
		}
	}
	return w.done
}

// An afterFuncer calls f once it has ended, as package context's own
// ctxs do (see context.AfterFunc).
type afterFuncer interface {
	AfterFunc(f func()) (stop func() bool)
}

// check ends w if the call's ctx or the caller's has ended.
func (w *waiting) check() { _ = w.Err() }

// Err returns context.Canceled once the caller's ctx has ended, or else
// the call's ctx's error once it has; then Done, if asked for, is closed.
func (w *waiting) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		if w.err = w.ended(); w.err != nil && w.done != nil {
			close(w.done)
		}
	}
	return w.err
}

// ended reads why w ends, from its two ctxs: nil while both last.
func (w *waiting) ended() error {
	if w.caller.Err() != nil {
		return context.Canceled // the caller left: the wait is cancelled, whatever ended the caller
	}
	return w.Context.Err()
}

// stop stops watching the two ctxs.
func (w *waiting) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for _, unhook := range w.unhooks {
		if unhook != nil {
			unhook()
		}
	}
	w.unhooks = [2]func() bool{}
}
