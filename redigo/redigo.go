// Package redigo is the driver of uncomplicated for redigo
// (github.com/gomodule/redigo): a Client's calls to Redis go through a
// redigo pool.
//
//	client := uncomplicated.NewClient(redigo.New(pool))
//
// Each call takes a connection from the pool, runs one command or one
// script, and gives it back, bounded by its ctx, which the Client bounds by
// its command timeout. The bound is real time, as the connections'
// deadlines are. The connection that listens for hand-offs is one of the
// pool's too, kept until the Client closes.
package redigo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/bound"
)

// A Pool hands out Redis connections; *redis.Pool is one. Its connections
// must implement redis.ConnWithContext (redigo's do) so that every call
// ends when its ctx does.
//
// While any of its goroutines waits for a lock, a Client keeps one of the
// pool's connections to hear of hand-offs, so the pool must let each
// Client have one more than the calls it makes at once; a call that finds
// none while the Client listens says so. A *redis.Pool whose MaxActive is 1
// has none to spare: its Client never listens, and its waiters try again
// on their ticks only. The listening connection PINGs Redis every second:
// a read timeout of the pool's connections of a second or less would end
// it again and again.
type Pool interface {
	GetContext(context.Context) (redis.Conn, error)
}

var _ Pool = (*redis.Pool)(nil)

// New returns the driver of pool, for uncomplicated.NewClient; nil for a
// nil pool, which the Client's locks report.
func New(pool Pool) driver.Driver {
	if pool == nil {
		return nil
	}
	if v := reflect.ValueOf(pool); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return &redigoDriver{pool: pool}
}

// redigoDriver is the driver.Driver of a Pool.
type redigoDriver struct {
	pool      Pool
	listening atomic.Int64 // the listening connections it gave out, not yet closed
}

func (r *redigoDriver) Eval(ctx context.Context, s *driver.Script, keys []string, args []any) (any, error) {
	conn, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	reply, err := evalOn(ctx, conn, s, keys, args)
	return reply, serverErr(err)
}

func (r *redigoDriver) EvalWait(ctx context.Context, s *driver.Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	conn, err := r.conn(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer conn.Close()
	reply, err := evalOn(ctx, conn, s, keys, args)
	if err != nil {
		return nil, 0, serverErr(err)
	}
	acked, err := redis.Int64(doOn(ctx, conn, "WAIT", []any{replicas, timeout.Milliseconds()}))
	return reply, acked, serverErr(err)
}

func (r *redigoDriver) Do(ctx context.Context, _ []string, cmd string, args ...any) (any, error) {
	conn, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	reply, err := doOn(ctx, conn, cmd, args)
	return reply, serverErr(err)
}

// conn gets a connection from the pool, waiting for it no longer than its
// caller does (see driver.Waiting); its error is marked not sent.
func (r *redigoDriver) conn(ctx context.Context) (redis.Conn, error) {
	wctx, stop := driver.Waiting(ctx)
	conn, err := r.pool.GetContext(wctx)
	stop()
	switch {
	case err != nil:
		return nil, driver.NotSent(fmt.Errorf("no connection from the Pool: %w", r.explainPool(err)))
	case conn == nil:
		return nil, driver.NotSent(errNilConn)
	}
	return conn, nil
}

// evalOn runs s on conn: EVALSHA, then EVAL when Redis does not have it.
func evalOn(ctx context.Context, conn redis.Conn, s *driver.Script, keys []string, args []any) (any, error) {
	all := make([]any, 0, 2+len(keys)+len(args))
	all = append(all, s.SHA1(), len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	all = append(all, args...)
	reply, err := doOn(ctx, conn, "EVALSHA", all)
	if e, ok := err.(redis.Error); ok && strings.HasPrefix(string(e), "NOSCRIPT ") {
		all[0] = s.Source()
		reply, err = doOn(ctx, conn, "EVAL", all)
	}
	return reply, err
}

// doOn runs a command on conn that ends when ctx does. redigo watches a
// ctx with a goroutine per command, in which a malformed reply can panic
// out of reach; a ctx that can never end (context.Background), or only at
// its deadline (a bound, see limit), does without it: the connection's
// read deadline alone bounds the command, in place of the pool's read
// timeout. (A write blocks only when the socket's buffer is full, which
// one command on a fresh call does not fill.) A panic while reading the
// reply in this goroutine becomes an error.
func doOn(ctx context.Context, conn redis.Conn, cmd string, args []any) (reply any, err error) {
	defer func() {
		if r := recover(); r != nil { // redigo panics on some malformed replies
			reply, err = nil, fmt.Errorf("%w: the connection panicked reading it: %v", driver.ErrUnexpectedReply, r)
		}
	}()
	deadline, isBound := bound.Deadline(ctx)
	switch {
	case isBound:
		if cwt, ok := conn.(redis.ConnWithTimeout); ok {
			left := time.Until(deadline) // real time, as the connection's deadline
			if left <= 0 {
				return nil, os.ErrDeadlineExceeded
			}
			reply, err = cwt.DoWithTimeout(left, cmd, args...)
			if !noTimeouts(err) {
				return reply, err
			}
		}
	case ctx.Done() == nil:
		return conn.Do(cmd, args...)
	}
	cwc, ok := conn.(redis.ConnWithContext)
	if !ok {
		return nil, errNoContext
	}
	return cwc.DoContext(ctx, cmd, args...)
}

// serverErr marks redigo's error reply as the driver contract asks.
func serverErr(err error) error {
	if e, ok := err.(redis.Error); ok {
		return replyError{e}
	}
	return err
}

// A replyError is an error reply of Redis.
type replyError struct{ err redis.Error }

func (e replyError) Error() string { return e.err.Error() }
func (e replyError) Unwrap() error { return e.err }

// RedisError marks an error reply, as the driver contract asks.
func (replyError) RedisError() {}

// Connections tells the Client how many connections a *redis.Pool keeps
// (see package driver): its MaxActive, or when unbounded its MaxIdle, as
// calls beyond it dial a connection and close it after, less the one that
// listens for hand-offs. The Client lets acquisition attempts take half of
// them at most, so that the calls that hand a lock on never wait behind
// them, nor dial.
func (r *redigoDriver) Connections() int {
	p, ok := r.pool.(*redis.Pool)
	switch {
	case !ok || p.MaxActive == 1:
		return 0
	case p.MaxActive > 1:
		return p.MaxActive - 1
	case p.MaxIdle > 1:
		return p.MaxIdle - 1
	}
	return 0
}

// Listen: a *redis.Pool whose MaxActive is 1 has no connection to spare.
func (r *redigoDriver) Listen(ctx context.Context, sharded bool) (driver.Subscription, error) {
	if p, ok := r.pool.(*redis.Pool); ok && p.MaxActive == 1 {
		return nil, driver.ErrNoPubSub
	}
	conn, err := r.pool.GetContext(ctx)
	switch {
	case err != nil:
		return nil, err
	case conn == nil:
		return nil, errNilConn
	}
	cwc, ok := conn.(redis.ConnWithContext)
	if !ok {
		_ = conn.Close()
		return nil, driver.ErrNoPubSub
	}
	r.listening.Add(1)
	sub := &redigoSub{conn: cwc, closed: func() { r.listening.Add(-1) }}
	if sharded {
		sub.prefix = "S"
	}
	return sub, nil
}

// redigoSub is a listening connection of a Pool.
type redigoSub struct {
	conn   redis.ConnWithContext
	prefix string     // "S" for sharded pub/sub
	mu     sync.Mutex // serializes the writes
	closed func()     // tells the driver the connection is back
	once   sync.Once
}

func (s *redigoSub) Subscribe(channel string)   { s.send(s.prefix+"SUBSCRIBE", channel) }
func (s *redigoSub) Unsubscribe(channel string) { s.send(s.prefix+"UNSUBSCRIBE", channel) }
func (s *redigoSub) Ping()                      { s.send("PING") }

// send writes a command; a failure shows on receive.
func (s *redigoSub) send(cmd string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.conn.Send(cmd, args...); err == nil {
		_ = s.conn.Flush()
	}
}

func (s *redigoSub) Receive(ctx context.Context) (driver.Event, error) {
	for {
		reply, err := s.conn.ReceiveContext(ctx)
		if err == nil {
			var e driver.Event
			if e, err = pubSubEvent(reply); err == nil && e.Kind != 0 {
				return e, nil
			}
		}
		if err != nil {
			if s.conn.Err() == nil { // a reply that is not pub/sub: end the connection
				poison(s.conn)
			}
			return driver.Event{}, serverErr(err)
		}
	}
}

// Close ends the connection rather than give it back to the pool: redigo
// cannot clean up the sharded subscriptions of a connection it hands out
// again, as it does SUBSCRIBE's.
func (s *redigoSub) Close() {
	s.once.Do(func() {
		poison(s.conn)
		_ = s.conn.Close()
		s.closed()
	})
}

// pubSubEvent reads a reply on a listening connection: an Event, or one
// of Kind 0 for the reply to PING.
func pubSubEvent(reply any) (driver.Event, error) {
	if s, ok := reply.(string); ok && s == "PONG" { // before the first subscription
		return driver.Event{}, nil
	}
	r, _ := reply.([]any)
	var kind, channel []byte
	if len(r) >= 2 {
		kind, _ = r[0].([]byte)
		channel, _ = r[1].([]byte)
	}
	switch k := string(kind); {
	case k == "pong":
		return driver.Event{}, nil
	case len(r) != 3 || channel == nil:
	case k == "message" || k == "smessage":
		data, _ := r[2].([]byte)
		return driver.Event{Kind: driver.EventMessage, Channel: string(channel), Data: data}, nil
	case k == "subscribe" || k == "ssubscribe":
		return driver.Event{Kind: driver.EventSubscribed, Channel: string(channel)}, nil
	case k == "unsubscribe" || k == "sunsubscribe":
		return driver.Event{Kind: driver.EventUnsubscribed, Channel: string(channel)}, nil
	}
	return driver.Event{}, fmt.Errorf("%w: %T %q on a listening connection", driver.ErrUnexpectedReply, reply, kind)
}

// poison ends conn, so that returning it to the pool does not wait for
// the end of its subscriptions: redigo ends a connection whose ctx has
// already expired, and its pool then drops it.
func poison(conn redis.ConnWithContext) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	_, _ = conn.ReceiveContext(ctx)
}

// exhausted reports the error of a pool that had no connection to give:
// it is exhausted, or waiting for one ran out of time.
func exhausted(err error) bool {
	return errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, context.DeadlineExceeded)
}

var (
	errNilConn   = errors.New("uncomplicated: the Pool returned a nil connection")
	errNoContext = errors.New("uncomplicated: the Pool's connection does not implement redis.ConnWithContext")
)

// noTimeouts reports the error of redigo's pool when the connection it
// wraps has no DoWithTimeout: nothing was sent, and DoContext will do.
// redigo does not export the error.
func noTimeouts(err error) bool {
	return err != nil && strings.HasSuffix(err.Error(), "does not support ConnWithTimeout")
}

// explainPool explains the error of a pool that had no connection to give
// while one of its connections listens for hand-offs: a pool that allows
// each Client one connection cannot serve its calls while it listens.
func (r *redigoDriver) explainPool(err error) error {
	if !exhausted(err) || r.listening.Load() == 0 {
		return err
	}
	return fmt.Errorf("%w (the Client keeps one of the Pool's connections to hear of hand-offs while its goroutines wait: let the Pool open one more per Client than the calls it makes at once)", err)
}
