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

// The redigo driver: each call takes a connection from the Pool, runs one
// command or one script, and gives it back, bounded by the caller's ctx
// and by the command timeout (WithCommandTimeout). That bound is real
// time, as the connections' deadlines are: this file and driver.go alone
// read the wall clock, to set them. The listening connection is one of the Pool's too,
// kept until the Client closes.

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

// redigoDriver is the driver of a Pool.
type redigoDriver struct {
	pool Pool
	// explain adds to the error of a pool that had no connection to give
	// what may have used them up.
	explain func(error) error
}

func (r *redigoDriver) eval(ctx context.Context, d time.Duration, s *Script, keys []string, args ...any) (reply any, sent bool, err error) {
	cl, err := r.call(ctx, d)
	if err != nil {
		return nil, false, err
	}
	defer cl.end()
	reply, err = cl.eval(s, keys, args)
	return reply, true, serverErr(err)
}

func (r *redigoDriver) evalWait(ctx context.Context, d time.Duration, s *Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	cl, err := r.call(ctx, d)
	if err != nil {
		return nil, 0, err
	}
	defer cl.end()
	reply, err := cl.eval(s, keys, args)
	if err != nil {
		return nil, 0, serverErr(err)
	}
	acked, err := redis.Int64(cl.do("WAIT", []any{replicas, timeout.Milliseconds()}))
	return reply, acked, serverErr(err)
}

// eval runs s: EVALSHA, then EVAL when Redis does not have it.
func (cl *call) eval(s *Script, keys []string, args []any) (any, error) {
	all := make([]any, 0, 2+len(keys)+len(args))
	all = append(all, s.sha, s.keys)
	for _, k := range keys {
		all = append(all, k)
	}
	all = append(all, args...)
	reply, err := cl.do("EVALSHA", all)
	if e, ok := err.(redis.Error); ok && strings.HasPrefix(string(e), "NOSCRIPT ") {
		all[0] = s.src
		reply, err = cl.do("EVAL", all)
	}
	return reply, err
}

func (r *redigoDriver) do(ctx context.Context, d time.Duration, _ []string, cmd string, args ...any) (any, error) {
	cl, err := r.call(ctx, d)
	if err != nil {
		return nil, err
	}
	defer cl.end()
	reply, err := cl.do(cmd, args)
	return reply, serverErr(err)
}

// serverErr turns redigo's error reply into a *serverError.
func serverErr(err error) error {
	if e, ok := err.(redis.Error); ok {
		return &serverError{msg: string(e), err: e}
	}
	return err
}

// canListen: a *redis.Pool whose MaxActive is 1 has no connection to
// spare.
func (r *redigoDriver) canListen() bool {
	p, ok := r.pool.(*redis.Pool)
	return !ok || p.MaxActive != 1
}

func (r *redigoDriver) listen(ctx context.Context, sharded bool) (Subscription, error) {
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
		return nil, errNoPubSub
	}
	sub := &redigoSub{conn: cwc}
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

func (s *redigoSub) Receive(ctx context.Context) (Event, error) {
	for {
		reply, err := s.conn.ReceiveContext(ctx)
		if err == nil {
			var e Event
			if e, err = pubSubEvent(reply); err == nil && e.Kind != 0 {
				return e, nil
			}
		}
		if err != nil {
			if s.conn.Err() == nil { // a reply that is not pub/sub: end the connection
				poison(s.conn)
			}
			return Event{}, serverErr(err)
		}
	}
}

// Close ends the connection rather than give it back to the pool: redigo
// cannot clean up the sharded subscriptions of a connection it hands out
// again, as it does SUBSCRIBE's.
func (s *redigoSub) Close() {
	poison(s.conn)
	_ = s.conn.Close()
}

// pubSubEvent reads a reply on a listening connection: an Event, or one
// of Kind 0 for the reply to PING.
func pubSubEvent(reply any) (Event, error) {
	if s, ok := reply.(string); ok && s == "PONG" { // before the first subscription
		return Event{}, nil
	}
	r, _ := reply.([]any)
	var kind, channel []byte
	if len(r) >= 2 {
		kind, _ = r[0].([]byte)
		channel, _ = r[1].([]byte)
	}
	switch k := string(kind); {
	case k == "pong":
		return Event{}, nil
	case len(r) != 3 || channel == nil:
	case k == "message" || k == "smessage":
		data, _ := r[2].([]byte)
		return Event{Kind: EventMessage, Channel: string(channel), Data: data}, nil
	case k == "subscribe" || k == "ssubscribe":
		return Event{Kind: EventSubscribed, Channel: string(channel)}, nil
	case k == "unsubscribe" || k == "sunsubscribe":
		return Event{Kind: EventUnsubscribed, Channel: string(channel)}, nil
	}
	return Event{}, fmt.Errorf("%w: %T %q on a listening connection", ErrUnexpectedReply, reply, kind)
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
	errNilConn   = fmt.Errorf("%w: Pool returned a nil connection", ErrInvalidArgument)
	errNoContext = fmt.Errorf("%w: Pool's connection does not implement redis.ConnWithContext", ErrInvalidArgument)
)

// A call is one call to Redis: a connection from the pool, and the
// caller's ctx bounded by the command timeout.
type call struct {
	limit
	ctx    context.Context // caller, bounded by d
	conn   redis.Conn
	bound  *bound             // ctx, when the caller's can never end
	cancel context.CancelFunc // ends ctx otherwise; nil when ctx is caller
}

// call gets a connection from the pool for a call bounded by d.
func (r *redigoDriver) call(ctx context.Context, d time.Duration) (call, error) {
	cl := call{limit: limit{caller: ctx, d: d}, ctx: ctx}
	if d > 0 {
		cl.deadline = time.Now().Add(d)
		if ctx.Done() == nil {
			cl.bound = &bound{Context: ctx, deadline: cl.deadline}
			cl.ctx = cl.bound
		} else {
			cl.ctx, cl.cancel = context.WithDeadline(ctx, cl.deadline)
		}
	}
	conn, err := r.pool.GetContext(cl.ctx)
	switch {
	case err != nil:
		err = cl.timedOut("no connection from the Pool", r.explainPool(err))
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

const noReply = "no reply from Redis"

// explainPool adds explain's words to the error of a pool that had no
// connection to give.
func (r *redigoDriver) explainPool(err error) error {
	if r.explain == nil || !exhausted(err) {
		return err
	}
	return r.explain(err)
}
