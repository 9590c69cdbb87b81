// Package uncomplicated provides a mutex for domain objects, kept in Redis,
// that tolerates stale locks.
//
// Processes that must not work on the same object at once (charge an order,
// send an email, rebuild a report) lock it by its ID:
//
//	m, err := uncomplicated.New(client, order) // lock:orders.Order:42
//	err = m.Do(ctx, func(ctx context.Context) error { return charge(ctx, order) })
//
// A waiter sleeps random sub-second ticks between attempts. While the
// holder's secret token keeps changing (new holders, or a holder calling
// Refresh) the lock is busy, not stuck, and the waiter's patience starts
// over. When one token has sat on the lock for the whole timeout, the holder
// is stuck: the waiter fails with ErrStale, or with the TakeOver policy
// replaces the holder atomically under a higher fencing token.
//
// Safety rests on the lease, as with every Redis lock: a holder paused past
// its lease, or taken over while it was only slow, may still be running. Pass
// Mutex.Fence to the store you protect and have it refuse a write whose
// fence is not above the highest it has accepted.
package uncomplicated

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// Errors returned by this package, matched with errors.Is. Returned errors
// add the lock name and the cause.
var (
	// ErrNotObtained: Lock gave up waiting: its ctx ended, its Client was
	// closed, or the holder was stale and the policy is Fail (then the error
	// matches ErrStale too).
	ErrNotObtained = errors.New("uncomplicated: lock not obtained")
	// ErrStale: the holder kept one token for the whole timeout.
	ErrStale = errors.New("uncomplicated: stale lock")
	// ErrNotHeld: Unlock or Refresh found that the lock is not ours: never
	// locked, already unlocked, expired, taken over or overwritten.
	ErrNotHeld = errors.New("uncomplicated: lock not held")
	// ErrInvalidID: the object is nil, its ID method panics, or the ID is
	// nil or prints empty; or Named was given "".
	ErrInvalidID = errors.New("uncomplicated: invalid lock id")
	// ErrInvalidArgument: an option out of range, a nil Client, Pool,
	// Mutex, context or function.
	ErrInvalidArgument = errors.New("uncomplicated: invalid argument")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("uncomplicated: client closed")
	// ErrUnexpectedReply: Redis answered something the scripts cannot
	// return: a server that is not Redis 7 or later, or a proxy that
	// mangles replies.
	ErrUnexpectedReply = errors.New("uncomplicated: unexpected reply from Redis")
)

// lockError is an error with its own message that matches several others.
type lockError struct {
	msg  string
	errs []error
}

func (e *lockError) Error() string   { return e.msg }
func (e *lockError) Unwrap() []error { return e.errs }

// An Identifier is any domain object with an ID: ID() int64, string,
// uuid.UUID... The ID's fmt %v form names the lock.
type Identifier[K any] interface{ ID() K }

// A Pool hands out Redis connections; *redis.Pool is one. Its connections
// must implement redis.ConnWithContext (redigo's do) so that every call
// ends when its ctx does.
type Pool interface {
	GetContext(context.Context) (redis.Conn, error)
}

var _ Pool = (*redis.Pool)(nil)

// A Client holds what the mutexes of one process share: the pool and
// default options. It is safe for concurrent use.
type Client struct {
	pool Pool
	opts []Option
	id   string        // names the Client's wake-up channels
	done chan struct{} // closed by Close

	mu       sync.Mutex     // guards closing, wake and the Adds to cleanups
	closing  bool           // Close has begun
	wake     *wakeups       // the listening connection, made by the first waiter
	cleanups sync.WaitGroup // background clean-ups and the listening connection
}

// NewClient returns a Client using pool, with opts as the defaults of every
// mutex it makes. Options are checked, and a nil pool reported, by New and
// Named.
func NewClient(pool Pool, opts ...Option) *Client {
	return &Client{pool: pool, opts: slices.Clone(opts), id: newToken()[:11], done: make(chan struct{})}
}

// Close wakes every Lock waiting on the Client's mutexes and makes them
// return ErrClosed, as every later Lock, TryLock, Refresh, New and Named
// does. Unlock still releases, and then reports ErrClosed too. Close gives
// the connection that listened for wake-ups back to the pool; it does not
// close the pool. It waits, up to a few seconds when Redis does not
// answer, for the clean-up of acquisitions whose reply was lost. Close is
// idempotent.
func (c *Client) Close() error {
	if c == nil || c.done == nil {
		return fmt.Errorf("%w: nil *Client", ErrInvalidArgument)
	}
	c.mu.Lock()
	if !c.closing {
		c.closing = true
		close(c.done)
		if c.wake != nil {
			c.wake.cancel()
		}
	}
	c.mu.Unlock()
	c.cleanups.Wait()
	return nil
}

// wakeups returns the Client's listening connection, starting it unless
// started is set; it returns nil when there is none.
func (c *Client) wakeups(started bool) *wakeups {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wake != nil || started || c.closing {
		return c.wake
	}
	clk := clock.Clock(clock.New())
	if cfg, err := build(c.opts); err == nil {
		clk = cfg.clock
	}
	c.wake = newWakeups(c.pool, clk)
	c.cleanups.Add(1)
	go func() {
		defer c.cleanups.Done()
		c.wake.run()
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
func (c *Client) config(opts []Option) (config, error) {
	switch {
	case c == nil || c.done == nil:
		return config{}, fmt.Errorf("%w: nil *Client", ErrInvalidArgument)
	case isNil(c.pool):
		return config{}, fmt.Errorf("%w: nil Pool", ErrInvalidArgument)
	case c.closed():
		return config{}, ErrClosed
	}
	return build(append(slices.Clone(c.opts), opts...))
}

// New returns the Mutex of obj's lock, named lock:<package>.<Type>:<ID>;
// opts override the Client's. It returns an error wrapping ErrInvalidID or
// ErrInvalidArgument for bad input; nothing is sent to Redis.
func New[K any](c *Client, obj Identifier[K], opts ...Option) (*Mutex, error) {
	return c.mutex(opts, func(prefix string) (string, error) { return objectName(prefix, obj) })
}

// Named returns the Mutex of a lock with a plain name, lock:<name>. It
// returns an error wrapping ErrInvalidID for "" or ErrInvalidArgument for
// a bad option; nothing is sent to Redis.
func (c *Client) Named(name string, opts ...Option) (*Mutex, error) {
	return c.mutex(opts, func(prefix string) (string, error) { return plainName(prefix, name) })
}

// mutex checks opts, names the lock and makes its Mutex.
func (c *Client) mutex(opts []Option, name func(prefix string) (string, error)) (*Mutex, error) {
	cfg, err := c.config(opts)
	if err != nil {
		return nil, err
	}
	key, err := name(cfg.prefix)
	if err != nil {
		return nil, err
	}
	m := &Mutex{
		c: c, cfg: cfg, name: key, fenceKey: fenceKey(cfg.prefix, key),
		queueKey: queueKey(cfg.prefix, key), channel: wakeChannel(cfg.prefix, key, c.id),
		lease: cfg.leaseMillis(),
		sem:   make(chan struct{}, 1), op: make(chan struct{}, 1),
	}
	m.keys = [3]any{m.name, m.fenceKey, m.queueKey}
	return m, nil
}

// A Mutex is one lock in Redis. It is safe for concurrent use: goroutines
// sharing a Mutex take turns as with sync.Mutex, and across processes one
// holder at a time has the lock, as long as its lease lasts. Make one with
// New or Client.Named; the zero value returns ErrInvalidArgument.
type Mutex struct {
	c        *Client
	cfg      config
	name     string
	fenceKey string
	queueKey string // the waiters' queue
	channel  string // where this Client hears of hand-offs to its waiters
	keys     [3]any // name, fenceKey and queueKey: the scripts' KEYS
	lease    any    // cfg.leaseMillis(), as the scripts take it
	// sem holds a value while a goroutine of this process holds the lock or
	// is acquiring it, so that one Mutex has one holder in its process.
	sem chan struct{}
	// op holds a value while Unlock or Refresh talks to Redis, so that they
	// never interleave; unlike a sync.Mutex, waiting for it ends with ctx.
	op chan struct{}

	mu sync.Mutex // guards tokens
	// tokens are those Redis may hold for the current hold, newest first:
	// one, or more after a Refresh whose reply was lost. nil when not held.
	tokens []string

	fence atomic.Uint64 // fence of the current hold; 0 when not held
}

// maxTokens bounds the tokens kept for one hold after lost Refresh replies.
const maxTokens = 4

// Name returns the Redis key of the lock, such as lock:orders.Order:42.
func (m *Mutex) Name() string {
	if m == nil {
		return ""
	}
	return m.name
}

// Fence returns the fencing token of the current hold: it is higher than
// that of every earlier hold of this lock name, for as long as the Redis
// data lives. It returns 0 when the lock is not held.
func (m *Mutex) Fence() uint64 {
	if m == nil {
		return 0
	}
	return m.fence.Load()
}

// Lock acquires the lock, waiting while another holder has it: first within
// this process, then in Redis, trying again after random sub-second ticks.
// A holder that keeps one token for the whole timeout is stale: Lock then
// returns an error wrapping ErrStale and ErrNotObtained, or with TakeOver
// replaces the holder. When ctx ends or the Client closes first, Lock returns
// an error wrapping ErrNotObtained and ctx.Err() or ErrClosed. A Redis error
// ends Lock at once. On failure Lock leaves the lock as it found it.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	if m.c.closed() {
		return m.notObtained("client closed", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return m.notObtained(err.Error(), err)
	}
	obs, _ := m.cfg.clock.(settle.Observer)
	if obs != nil {
		obs.Waiting(1)
		defer obs.Waiting(-1)
	}
	if err := m.enter(ctx, obs); err != nil {
		return err
	}
	held := false
	defer func() {
		if !held { // also when a Pool or logger panics
			<-m.sem
		}
	}()
	err := m.wait(ctx, obs)
	held = err == nil
	return err
}

// enter takes m.sem, waiting while another goroutine of this process holds
// the Mutex.
func (m *Mutex) enter(ctx context.Context, obs settle.Observer) error {
	select {
	case m.sem <- struct{}{}:
		return nil
	default:
	}
	if obs != nil {
		defer obs.Park(time.Time{}, "")() // no timer: only an Unlock wakes it
	}
	select {
	case m.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return m.notObtained(ctx.Err().Error(), ctx.Err())
	case <-m.c.done:
		return m.notObtained("client closed", ErrClosed)
	}
}

// TryLock makes one attempt and never waits nor takes over. It returns
// (false, nil) when the lock is held, here or elsewhere, and an error only
// when Redis fails or the input is invalid.
func (m *Mutex) TryLock(ctx context.Context) (ok bool, err error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	if m.c.closed() {
		return false, m.notObtained("client closed", ErrClosed)
	}
	select {
	case m.sem <- struct{}{}:
	default:
		return false, nil
	}
	defer func() {
		if !ok {
			<-m.sem
		}
	}()
	token := newToken()
	out, err := m.acquire(ctx, token, "", "")
	if err != nil || out.fence == 0 {
		return false, m.gaveUp(ctx, err)
	}
	m.acquired(ctx, token, out.fence, false)
	return true, nil
}

// Unlock releases the lock if Redis still holds our token. It returns an
// error wrapping ErrNotHeld when the lock is not ours: never locked here,
// expired, taken over or overwritten; the other holder's key is left alone.
// Unlock ends the hold in this process whatever Redis answers; when Redis
// cannot be reached, or ctx ends while a Refresh is under way, the key stays
// until its lease ends or a waiter takes it over. After Client.Close it
// still releases, and reports ErrClosed as well.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	err := m.unlock(ctx)
	if m.c.closed() {
		err = errors.Join(fmt.Errorf("%w: %s: Unlock after Close", ErrClosed, m.name), err)
	}
	return err
}

func (m *Mutex) unlock(ctx context.Context) error {
	opErr := m.takeOp(ctx)
	m.mu.Lock()
	tokens := m.tokens
	m.tokens = nil
	m.mu.Unlock()
	if opErr == nil {
		defer m.dropOp()
	}
	if tokens == nil {
		return fmt.Errorf("%w: %s: not locked", ErrNotHeld, m.name)
	}
	m.fence.Store(0)
	defer func() { <-m.sem }()
	if opErr != nil {
		return m.redisError(ctx, opErr)
	}
	return m.release(ctx, tokens)
}

// release frees the lock in Redis, or hands it to the next waiter, if it
// holds one of tokens.
func (m *Mutex) release(ctx context.Context, tokens []string) error {
	var reply any
	var err error
	if len(tokens) == 1 {
		reply, _, err = m.c.eval(ctx, releaseScript, m.keys[:], tokens[0])
	} else {
		reply, _, err = m.c.eval(ctx, releaseScript, m.keys[:], anys(tokens)...)
	}
	var released bool
	var next string
	if err == nil {
		released, next, err = parseRelease(reply)
	}
	switch {
	case err != nil:
		return m.redisError(ctx, err)
	case !released:
		return fmt.Errorf("%w: %s: expired or taken over", ErrNotHeld, m.name)
	}
	if obs, ok := m.cfg.clock.(settle.Observer); ok && next != "" {
		obs.HandOff(next)
	}
	if m.logs(ctx) {
		m.debug(ctx, "lock released", slog.Bool("handed_off", next != ""))
	}
	return nil
}

// Refresh proves the holder alive: if Redis still holds our token, it
// replaces it with a new one, which tells waiters the lock is busy rather
// than stuck, and restarts the lease. The fence does not change. It returns
// an error wrapping ErrNotHeld when the lock is not ours any more; the hold
// stays until Unlock. When the reply is lost, the next Refresh or Unlock
// accepts either token.
func (m *Mutex) Refresh(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	if m.c.closed() {
		return fmt.Errorf("%w: %s", ErrClosed, m.name)
	}
	if err := m.takeOp(ctx); err != nil {
		return m.redisError(ctx, err)
	}
	defer m.dropOp()
	m.mu.Lock()
	tokens := m.tokens
	m.mu.Unlock()
	if tokens == nil {
		return fmt.Errorf("%w: %s: not locked", ErrNotHeld, m.name)
	}
	next := newToken()
	ok, err := m.flag(ctx, refreshScript, m.keys[:1], append([]any{m.lease, next}, anys(tokens)...)...)

	m.mu.Lock()
	defer m.mu.Unlock()
	current := m.tokens != nil && m.tokens[0] == tokens[0]
	switch {
	case err != nil:
		if current { // the script may have run: next may be ours too
			m.tokens = append([]string{next}, tokens[:min(len(tokens), maxTokens-1)]...)
		}
		return err
	case !ok:
		return fmt.Errorf("%w: %s: expired or taken over", ErrNotHeld, m.name)
	}
	if current {
		m.tokens = []string{next}
	}
	return nil
}

// takeOp waits for m.op, or for ctx to end.
func (m *Mutex) takeOp(ctx context.Context) error {
	select {
	case m.op <- struct{}{}:
		return nil
	default:
	}
	select {
	case m.op <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Mutex) dropOp() { <-m.op }

// releaseTimeout bounds the Redis calls made without the caller's ctx: the
// Unlock that ends Do and the clean-up of a lost acquisition. It is real
// time, as the connections' deadlines are.
const releaseTimeout = 5 * time.Second

// Do runs fn while holding the lock: Lock, fn, Unlock, and Unlock also when
// fn panics (the panic then goes on). The Unlock ignores ctx's cancellation,
// so that a lock is released even when fn returned because ctx ended. Do
// returns Lock's error without running fn, or fn's error joined with
// Unlock's; an Unlock error wrapping ErrNotHeld means the lock was lost
// while fn ran.
func (m *Mutex) Do(ctx context.Context, fn func(context.Context) error) (err error) {
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalidArgument)
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if uerr := m.Unlock(uctx); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}()
	return fn(ctx)
}

// check reports a nil or zero Mutex and a nil ctx.
func (m *Mutex) check(ctx context.Context) error {
	switch {
	case m == nil || m.c == nil:
		return fmt.Errorf("%w: nil or zero *Mutex", ErrInvalidArgument)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	return nil
}

// acquire makes one attempt in Redis; entry and queue are the waiter's
// queue entry and what to do with it (see acquireScript).
func (m *Mutex) acquire(ctx context.Context, token, entry, queue string) (outcome, error) {
	return m.outcome(ctx, acquireScript, token, token, m.lease, entry, queue)
}

// takeOver replaces the stale holder's token with ours and takes entry, if
// not "", out of the queue.
func (m *Mutex) takeOver(ctx context.Context, stale, token, entry string) (outcome, error) {
	return m.outcome(ctx, takeOverScript, token, stale, token, m.lease, entry)
}

// outcome runs acquireScript or takeOverScript for token. When the reply is
// lost after the script may have run, the key may hold token with nobody
// knowing: abandon deletes it.
func (m *Mutex) outcome(ctx context.Context, s *script, token string, args ...any) (outcome, error) {
	reply, sent, err := m.c.eval(ctx, s, m.keys[:], args...)
	if err == nil {
		var out outcome
		if out, err = parseOutcome(reply); err == nil {
			return out, nil
		}
	}
	var serverErr redis.Error
	if sent && !errors.As(err, &serverErr) {
		m.background(releaseScript, token)
	}
	return outcome{}, m.redisError(ctx, err)
}

// flag runs refreshScript.
func (m *Mutex) flag(ctx context.Context, s *script, keys []any, args ...any) (bool, error) {
	reply, _, err := m.c.eval(ctx, s, keys, args...)
	if err == nil {
		var ok bool
		if ok, err = parseFlag(reply); err == nil {
			return ok, nil
		}
	}
	return false, m.redisError(ctx, err)
}

// background runs releaseScript or leaveScript on the lock's keys with
// args, bounded by releaseTimeout: it releases what a lost acquisition may
// have got, or takes a waiter that gave up out of the queue (a release may
// have just handed it the lock). It runs in a goroutine that Close waits
// for; once Close has begun, in the caller's, which is then returning.
func (m *Mutex) background(s *script, args ...string) {
	c := m.c
	run := func() {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		_, _, _ = c.eval(ctx, s, m.keys[:], anys(args)...)
	}
	c.mu.Lock()
	closing := c.closing
	if !closing {
		c.cleanups.Add(1)
	}
	c.mu.Unlock()
	if closing {
		run()
		return
	}
	go func() {
		defer c.cleanups.Done()
		run()
	}()
}

// hold records a hold that Redis granted.
func (m *Mutex) hold(token string, fence uint64) {
	m.mu.Lock()
	m.tokens = []string{token}
	m.mu.Unlock()
	m.fence.Store(fence)
}

// acquired records and logs a hold granted by acquireScript or, with
// handedOff, by a release.
func (m *Mutex) acquired(ctx context.Context, token string, fence uint64, handedOff bool) {
	m.hold(token, fence)
	if m.logs(ctx) {
		m.debug(ctx, "lock acquired", slog.Uint64("fence", fence), slog.Bool("handed_off", handedOff))
	}
}

// redisError wraps a failed call with the lock name; when ctx has ended,
// the cause is ctx's error rather than what the connection made of it.
func (m *Mutex) redisError(ctx context.Context, err error) error {
	if cerr := m.ctxErr(ctx); cerr != nil {
		err = cerr
	}
	return fmt.Errorf("uncomplicated: %s: %w", m.name, err)
}

// gaveUp turns the error of an acquisition attempt that ctx cut short into
// an ErrNotObtained; other errors, and nil, pass.
func (m *Mutex) gaveUp(ctx context.Context, err error) error {
	if cerr := m.ctxErr(ctx); err != nil && cerr != nil {
		return m.notObtained(cerr.Error(), cerr)
	}
	return err
}

// ctxErr is ctx.Err(), or DeadlineExceeded once ctx's deadline has passed:
// redigo sets the connection's deadline to ctx's, so its i/o timeout can
// come a moment before ctx's own timer fires.
func (m *Mutex) ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !m.cfg.clock.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// notObtained is the error of a Lock that gave up; it matches
// ErrNotObtained and cause.
func (m *Mutex) notObtained(why string, cause error) error {
	return &lockError{
		msg:  ErrNotObtained.Error() + ": " + m.name + ": " + why,
		errs: []error{ErrNotObtained, cause},
	}
}

func (m *Mutex) logs(ctx context.Context) bool {
	return m.cfg.logger.Enabled(ctx, slog.LevelDebug)
}

// debug logs msg at Debug with the lock name; callers check logs first, so
// that a silent logger costs nothing.
func (m *Mutex) debug(ctx context.Context, msg string, attrs ...slog.Attr) {
	m.cfg.logger.LogAttrs(ctx, slog.LevelDebug, msg, append([]slog.Attr{slog.String("lock", m.name)}, attrs...)...)
}
