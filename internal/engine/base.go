package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
	"github.com/uncomplicated-mutex/uncomplicated/internal/trace"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// A base is what every lock of this package has: its Client, its options
// and its name; and how it reports errors and logs.
type base struct {
	c    *Client
	cfg  config.Config
	name string
	typ  string // the type part of the name, as it is written there; "" for a plain name
	// tail ends every token of the lock: its timeout and escaped holder
	// label, made once (see holderToken).
	tail string
}

// newBase checks opts and names obj's lock, for c.
func newBase[K any](c *Client, obj interface{ ID() K }, opts []config.Option) (base, error) {
	cfg, err := c.lockConfig(opts)
	if err != nil {
		return base{}, err
	}
	key, typ, err := wire.ObjectName(cfg.Prefix, cfg.GemNames, obj)
	if err != nil {
		return base{}, err
	}
	return base{c: c, cfg: cfg, name: key, typ: typ, tail: c.tailOf(cfg)}, nil
}

// tailOf is the tail of the tokens of a lock with cfg: the Client's own,
// made once, when cfg has the Client's timeout and label.
func (c *Client) tailOf(cfg config.Config) string {
	if cfg.Timeout == c.cfg.Timeout && cfg.Label == c.cfg.Label {
		return c.tail
	}
	return wire.TokenTail(cfg.Timeout, cfg.Label)
}

// usable reports, for a call about a hold (Refresh, Held), a closed
// Client or an ended ctx.
func (b *base) usable(ctx context.Context) error {
	if b.c.closed() {
		return b.c.newError(b.name, sentinel.ErrClosed.Error()+": "+b.name, sentinel.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return b.redisError(ctx, err)
	}
	return nil
}

// check reports a nil or zero lock (b nil, or without Client), named typ,
// a nil ctx and, for Do, a nil fn.
func (b *base) check(typ string, ctx context.Context, fn ...func(context.Context) error) error {
	switch {
	case b == nil || b.c == nil:
		return fmt.Errorf("%w: nil or zero %s", sentinel.ErrInvalidArgument, typ)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", sentinel.ErrInvalidArgument)
	case len(fn) > 0 && fn[0] == nil:
		return fmt.Errorf("%w: nil function", sentinel.ErrInvalidArgument)
	}
	return nil
}

// leaseEnd is the latest a lease restarted now would end, by the Client's
// clock; zero without a lease.
func (b *base) leaseEnd() time.Time {
	if b.cfg.Lease == 0 {
		return time.Time{}
	}
	return b.cfg.Clock.Now().Add(b.cfg.Lease)
}

// holderToken returns a new token for a hold, or a waiter, that began at
// since.
func (b *base) holderToken(since time.Time) string {
	var buf [tokenRoom]byte
	return b.withTail(wire.AppendNewToken(buf[:0]), since)
}

// tokenOf is the token with secret of a hold, or a waiter, that began at
// since.
func (b *base) tokenOf(secret string, since time.Time) string {
	var buf [tokenRoom]byte
	return b.withTail(append(buf[:0], secret...), since)
}

// withTail returns secret, the token's start, followed by the rest of the
// token: one allocation, when the token fits in tokenRoom.
func (b *base) withTail(secret []byte, since time.Time) string {
	t := append(secret, b.c.id...)
	t = append(t, '.')
	t = strconv.AppendInt(t, since.UnixMilli(), 36)
	return string(append(t, b.tail...))
}

// tokenRoom is room on the stack for a token: a secret, a Client's id, a
// time and a tail with a short label.
const tokenRoom = 160

// A lock's calls to Redis, through its Client's link (see package link),
// bounded by its command timeout.

// flag runs a script that replies 1 or 0. With wait it then waits for
// the replicas of WithReplicas, and reports how many acknowledged.
func (b *base) flag(ctx context.Context, wait bool, s *driver.Script, keys []string, args ...any) (ok bool, acked int64, err error) {
	var reply any
	if wait {
		reply, acked, err = b.evalReplicated(ctx, s, keys, args...)
	} else {
		reply, _, err = b.eval(ctx, s, keys, args...)
	}
	if err == nil {
		if ok, err = wire.ParseFlag(reply); err == nil {
			return ok, acked, nil
		}
	}
	return false, 0, b.redisError(ctx, err)
}

// eval runs s with keys and args for the lock, bounded by the lock's
// command timeout (see driver).
func (b *base) eval(ctx context.Context, s *driver.Script, keys []string, args ...any) (reply any, sent bool, err error) {
	reply, sent, err = b.c.redis.Eval(ctx, b.cfg.CommandTimeout, s, keys, args...)
	if err != nil {
		b.logFailure(ctx, err)
	}
	return reply, sent, err
}

// evalReplicated runs s as eval does and then, under WithReplicas, waits
// for the replicas (WAIT) and reports how many acknowledged.
func (b *base) evalReplicated(ctx context.Context, s *driver.Script, keys []string, args ...any) (reply any, acked int64, err error) {
	if b.cfg.Replicas == 0 {
		reply, _, err = b.eval(ctx, s, keys, args...)
		return reply, 0, err
	}
	d := b.cfg.CommandTimeout
	if d > 0 {
		d += b.cfg.ReplicaWait
	}
	if reply, acked, err = b.c.redis.EvalWait(ctx, d, s, keys, args, b.cfg.Replicas, b.cfg.ReplicaWait); err != nil {
		b.logFailure(ctx, err)
	}
	return reply, acked, err
}

// get reads a string key of the lock; "" when it does not exist.
func (b *base) get(ctx context.Context, key string) (string, error) {
	reply, err := b.c.redis.Command(ctx, b.cfg.CommandTimeout, []string{key}, "GET", key)
	if err != nil {
		b.logFailure(ctx, err)
		return "", err
	}
	switch r := reply.(type) {
	case nil:
		return "", nil
	case []byte:
		return string(r), nil
	}
	return "", fmt.Errorf("%w: GET replied %T", driver.ErrUnexpectedReply, reply)
}

// What a clock that follows the waiters (see internal/settle) hears of a
// lock's releases.

// releasing tells a clock that follows the waiters (see settle) that a
// release is under way until done is called. The clock must not move while
// it runs: once it has stopped its hold's take, the hold's lease may be a
// claim only, and until it has told the clock whom it handed the lock to,
// the waiter it woke looks asleep.
func (b *base) releasing() (done func()) {
	obs, ok := b.cfg.Clock.(settle.Observer)
	if !ok {
		return func() {}
	}
	obs.Waiting(1)
	return func() { obs.Waiting(-1) }
}

// handsHere is what a release passes for the Client's wake-up channel of
// the lock, channel: channel itself when a waiter of the Client listens on
// it, for Redis to hand it the lock in the reply rather than publish; ""
// otherwise, which spares Redis reading it.
func (b *base) handsHere(channel string) string {
	if wk := b.c.wakeups(true); wk != nil && wk.Waiting(channel) {
		return channel
	}
	return ""
}

// handedOff wakes the waiters that a release handed the lock to, as its
// reply names them (see wire.ParseRelease): a token, whose waiter a
// message on its Client's channel wakes, or, for a waiter of this Client,
// the message itself, which the release passed channel, this Client's for
// the lock, to get (see here, in internal/lua/queue_hand.lua), and which
// goes to the waiter here as if it had come on channel. It tells a clock
// that follows the waiters (see settle) that they are about to wake.
//
// Having woken a waiter here, the releasing goroutine yields, as
// sync.Mutex does when it hands itself to a starving waiter: the waiter
// now holds the lock, and on a busy process it would otherwise wait behind
// every runnable goroutine, among them the releaser's next calls, before
// it could use it (a quarter of a millisecond a hand-off, and half of one
// under callers that give up by the hundred, measured on 2 CPUs).
func (b *base) handedOff(channel string, next []string) {
	obs, _ := b.cfg.Clock.(settle.Observer)
	woken := false
	for _, n := range next {
		token, _, here := wire.ParseWakeUp(n)
		if !here {
			token = n
		}
		trace.Stamp(trace.Reply, b.name, token)
		if obs != nil {
			obs.HandOff(token)
		}
		if wk := b.c.wakeups(true); here && wk != nil {
			wk.Deliver(channel, n)
			woken = true
		}
	}
	if woken {
		runtime.Gosched()
	}
}

// Failures and logging: the errors a lock returns, each naming the lock
// and matching its sentinels, and its log records.

// redisError wraps a failed call with the lock name; when ctx has ended,
// the cause is ctx's error rather than what the connection made of it.
func (b *base) redisError(ctx context.Context, err error) error {
	if cerr := b.ctxErr(ctx); cerr != nil {
		err = cerr
	}
	return b.c.newError(b.name, "uncomplicated: "+b.name+": "+err.Error(), err)
}

// gaveUp is the error of an acquisition that ended without the lock, for
// err, what ended it: a call to Redis that failed, or Close, or ctx ending
// while a call to Redis was under way or, when busy says what held the
// lock (see waiter.busy), while the waiter slept. It matches
// ErrNotObtained and its cause: the Redis error, ErrClosed or ctx's
// error. A nil err stays nil.
func (b *base) gaveUp(ctx context.Context, err error, busy string) error {
	cerr := b.ctxErr(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sentinel.ErrClosed):
		return b.notObtained("client closed", sentinel.ErrClosed)
	case cerr != nil && busy != "":
		return b.c.newError(b.name, sentinel.ErrNotObtained.Error()+": "+busy+": "+cerr.Error(), cerr, sentinel.ErrNotObtained)
	case cerr != nil:
		return b.notObtained("ctx ended waiting for Redis: "+cerr.Error(), cerr)
	}
	return b.notObtained(err.Error(), err)
}

// failing is the error of a wait that ended, with err, while Redis was
// failing with last: it says what Redis last answered, and matches
// ErrNotObtained, ctx's error and last.
func (b *base) failing(ctx context.Context, err, last error) error {
	cerr := b.ctxErr(ctx)
	if cerr == nil || errors.Is(err, sentinel.ErrClosed) {
		return b.gaveUp(ctx, err, "")
	}
	return b.c.newError(b.name, sentinel.ErrNotObtained.Error()+": "+b.name+": ctx ended while Redis failed ("+last.Error()+"): "+cerr.Error(),
		cerr, sentinel.ErrNotObtained, last)
}

// ctxErr is ctx.Err(), or DeadlineExceeded once ctx's deadline has passed:
// redigo sets the connection's deadline to ctx's, so its i/o timeout can
// come a moment before ctx's own timer fires.
func (b *base) ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !b.cfg.Clock.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// notObtained is the error of a Lock that gave up; it matches
// ErrNotObtained and cause.
func (b *base) notObtained(why string, cause error) error {
	return b.c.newError(b.name, sentinel.ErrNotObtained.Error()+": "+b.name+": "+why, cause, sentinel.ErrNotObtained)
}

// Log records: Debug for the course of a lock (acquired, waiting,
// released); Warn for what an operator should see (a stale holder, a
// take-over, a hold lost, a failed call to Redis); Info for LOADING, which
// Lock waits out. Each has the lock name, and those about a hold its
// fence.

// logs reports whether records at level go anywhere, so that a silent
// logger costs nothing.
func (b *base) logs(ctx context.Context, level slog.Level) bool {
	return b.cfg.Logger.Enabled(ctx, level)
}

// log logs msg at level with the lock name; callers check logs first.
func (b *base) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	b.cfg.Logger.LogAttrs(ctx, level, msg, append([]slog.Attr{slog.String("lock", b.name)}, attrs...)...)
}

// logWaiting records that an acquisition of what ("lock", "permit", ...)
// found it taken by a holder it had not seen.
func (b *base) logWaiting(ctx context.Context, what string) {
	if b.logs(ctx, slog.LevelDebug) {
		b.log(ctx, slog.LevelDebug, what+" busy, waiting", slog.Duration("timeout", b.cfg.Timeout))
	}
}

// staleError is the error, logged, of an acquisition of what that found
// its blockers (who: "one holder token", "the same holders") stuck for age
// without WithTakeOver.
func (b *base) staleError(ctx context.Context, what, who string, age time.Duration) error {
	if b.logs(ctx, slog.LevelWarn) {
		b.log(ctx, slog.LevelWarn, what+" stale", slog.Duration("age", age))
	}
	return b.notObtained(fmt.Sprintf("stale: %s for %v", who, age.Round(time.Millisecond)), sentinel.ErrStale)
}

// logTakeOver records a take-over of what, under fence, that evicted
// holders stuck for age.
func (b *base) logTakeOver(ctx context.Context, what string, age time.Duration, fence uint64, evicted int) {
	if b.logs(ctx, slog.LevelWarn) {
		b.log(ctx, slog.LevelWarn, what+" taken over", slog.Uint64("fence", fence), slog.Duration("age", age), slog.Int("evicted", evicted))
	}
}

// logAcquired records a new hold of what.
func (b *base) logAcquired(ctx context.Context, what string, fence uint64, attrs ...slog.Attr) {
	if b.logs(ctx, slog.LevelDebug) {
		b.log(ctx, slog.LevelDebug, what+" acquired", append([]slog.Attr{slog.Uint64("fence", fence)}, attrs...)...)
	}
}

// logOrphan records the release of a hold of what that the Client had
// lost track of: its release, or the reply to its acquisition, was lost.
func (b *base) logOrphan(ctx context.Context, what string) {
	if b.logs(ctx, slog.LevelWarn) {
		b.log(ctx, slog.LevelWarn, what+" released: this Client's release or acquisition reply was lost")
	}
}

// logReleased records the release of a hold of what.
func (b *base) logReleased(ctx context.Context, what string, fence uint64, attrs ...slog.Attr) {
	if b.logs(ctx, slog.LevelDebug) {
		b.log(ctx, slog.LevelDebug, what+" released", append([]slog.Attr{slog.Uint64("fence", fence)}, attrs...)...)
	}
}

// lostError is the error of a hold found lost; it matches ErrLost and
// ErrNotHeld.
func (b *base) lostError(why string) error {
	return b.c.newError(b.name, sentinel.ErrLost.Error()+": "+b.name+": "+why, sentinel.ErrLost, sentinel.ErrNotHeld)
}

// notHeld is the error of a call about a hold when there is none: why
// says so.
func (b *base) notHeld(why string) error {
	return b.c.newError(b.name, sentinel.ErrNotHeld.Error()+": "+b.name+": "+why, sentinel.ErrNotHeld)
}

// afterClose adds ErrClosed to the error of a release after Client.Close,
// which still releases.
func (b *base) afterClose(err error) error {
	if b.c.closed() {
		err = errors.Join(b.c.newError(b.name, sentinel.ErrClosed.Error()+": "+b.name+": released after Close", sentinel.ErrClosed), err)
	}
	return err
}

// logFailure logs a failed call at Warn, or at Info for LOADING (a
// restarted Redis reading its data, which Lock waits out), unless the
// caller's ctx ended it: the caller chose that.
func (b *base) logFailure(ctx context.Context, err error) {
	if b.ctxErr(ctx) != nil {
		return
	}
	level := slog.LevelWarn
	if link.Loading(err) {
		level = slog.LevelInfo
	}
	if b.logs(ctx, level) {
		b.log(ctx, level, "Redis call failed", slog.Any("error", err))
	}
}

// logFailed logs a failed attempt of a wait as logFailure does, at most
// once a second for the lock in its Client, however many wait for it.
func (b *base) logFailed(ctx context.Context, err error) {
	if b.c.failures.allow(b.name, b.cfg.Clock.Now()) {
		b.logFailure(ctx, err)
	}
}

// unreached says, once per Client and at Warn, that Redis has never
// answered it, with what the wait's last call met: a first run against a
// wrong address, or with no Redis there, would otherwise wait in silence,
// riding it out as a restart. Without a logger it says so on
// slog.Default(), as go-redis logs by default.
func (b *base) unreached(ctx context.Context, err error) {
	if b.c.redis.Answered() || b.c.unreached.Load() || !b.c.unreached.CompareAndSwap(false, true) {
		return
	}
	l := b.cfg.Logger
	if !l.Enabled(ctx, slog.LevelWarn) {
		l = slog.Default()
	}
	l.LogAttrs(ctx, slog.LevelWarn, "uncomplicated: Redis has not answered yet; waiting for it until ctx ends",
		slog.String("lock", b.name), slog.Any("error", err))
}

// A logLimit lets a lock's failed attempts be logged once a second.
type logLimit struct {
	mu   sync.Mutex
	last map[string]time.Time // by lock name, when one was last logged
}

// maxLogLimits bounds the locks a logLimit remembers at once.
const maxLogLimits = 1024

// allow reports whether a failure of the lock name may be logged at now,
// and if so records it.
func (l *logLimit) allow(name string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[name]; ok && now.Sub(t) < time.Second && !now.Before(t) {
		return false
	}
	if l.last == nil || len(l.last) >= maxLogLimits { // forgetting costs a record more at most
		l.last = map[string]time.Time{}
	}
	l.last[name] = now
	return true
}
