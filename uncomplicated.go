// Package uncomplicated provides a mutex for domain objects, kept in Redis,
// that tolerates stale locks.
//
// Processes that must not work on the same object at once (charge an order,
// send an email, rebuild a report) lock it by its ID:
//
//	m, err := uncomplicated.New(client, order) // lock:orders.Order:42
//	err = m.Do(ctx, func(ctx context.Context) error { return charge(ctx, order) })
//
// A waiter joins the lock's queue: a release hands the lock to the oldest
// waiter and wakes it. Between wake-ups it also tries again after random
// sub-second ticks, so it never depends on them. While the holder's secret
// token keeps changing (new holders, or a holder calling Refresh) the lock
// is busy, not stuck, and the waiter's patience starts over. When one token
// has sat on the lock for the whole timeout, the holder is stuck: the waiter
// fails with ErrStale, or with the TakeOver policy replaces the holder
// atomically under a higher fencing token. The lease, twice the timeout by
// default, frees the lock of a holder that crashed.
//
// Safety rests on the lease, as with every Redis lock: a holder paused past
// its lease, or taken over while it was only slow, may still be running. Pass
// the hold's fence (Mutex.Fence, or FenceOf inside Do) to the store you
// protect and have it refuse a write whose fence is not above the highest it
// has accepted.
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
	// ErrLost: a hold ended without Unlock: Refresh, Held or Unlock found
	// another token or no key, or the lease ran out while auto-refresh could
	// not reach Redis. The errors of Refresh and Unlock that find it match
	// ErrNotHeld too.
	ErrLost = errors.New("uncomplicated: lock lost")
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

// A Client holds what the mutexes of one process share: the pool and
// default options. It is safe for concurrent use.
type Client struct {
	pool Pool
	opts []Option
	id   string        // names the Client's wake-up channels
	done chan struct{} // closed by Close
	// ctx is cancelled by Close: it ends the Client's own calls.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex            // guards closing, wake, holding and the Adds to cleanups
	closing  bool                  // Close has begun
	wake     *wakeups              // the listening connection, made by the first waiter
	holding  map[verifier]struct{} // the holds of the Client's locks
	watching bool                  // the restart watch runs
	serverID string                // the last run_id the restart watch read
	cleanups sync.WaitGroup        // background clean-ups, the listening connection, the restart watch
}

// NewClient returns a Client using pool, with opts as the defaults of every
// mutex it makes. Options are checked, and a nil pool reported, by New and
// Named.
func NewClient(pool Pool, opts ...Option) *Client {
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		pool: pool, opts: slices.Clone(opts), id: newToken()[:11], done: make(chan struct{}),
		ctx: ctx, cancel: cancel,
	}
}

// Close wakes every Lock waiting on the Client's mutexes and makes them
// return ErrClosed, as every later Lock, TryLock, Refresh, New and Named
// does; a call to Redis under way when Close is called ends when Redis
// answers or its command timeout passes. Unlock still releases, and then reports ErrClosed too. Close gives
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
		c.cancel()
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
	if c.wake != nil || started || c.closing || !spares(c.pool) {
		return c.wake
	}
	c.wake = newWakeups(c.pool, c.settings().clock)
	c.cleanups.Add(1)
	go func() {
		defer c.cleanups.Done()
		c.wake.run()
	}()
	return c.wake
}

// spares reports whether pool can spare a connection to listen on while
// calls need another.
func spares(pool Pool) bool {
	p, ok := pool.(*redis.Pool)
	return !ok || p.MaxActive != 1
}

func (c *Client) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// base checks opts and names a lock.
func (c *Client) base(opts []Option, name func(prefix string) (string, error)) (base, error) {
	cfg, err := c.config(opts)
	if err != nil {
		return base{}, err
	}
	key, err := name(cfg.prefix)
	if err != nil {
		return base{}, err
	}
	return base{c: c, cfg: cfg, name: key}, nil
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

// New returns the Mutex of obj's lock, named lock:<package>.<Type>:<ID>,
// or lock:<LockType>:<ID> when obj is a LockTyper; opts override the
// Client's. It returns an error wrapping ErrInvalidID or
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
	b, err := c.base(opts, name)
	if err != nil {
		return nil, err
	}
	cfg, key := b.cfg, b.name
	m := &Mutex{
		base: b, fenceKey: fenceKey(cfg.prefix, key),
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
	base
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

	mu sync.Mutex // guards tokens, gen, lost and from
	// tokens are those Redis may hold for the current hold, newest first:
	// one, or more after a Refresh whose reply was lost. nil when not held.
	tokens []string
	gen    uint64    // counts holds, so that a late finding concerns its own
	lost   *signal   // the current hold's Lost channel, made when asked for
	from   time.Time // the current lease began at or after this instant

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
// this process, then in Redis, where it joins the lock's queue of waiters
// and is woken when a release hands the lock to it; it also tries again
// after random sub-second ticks, and joins the queue only once its Client
// listens for hand-offs. A holder that keeps one token for the whole
// timeout is stale: Lock then
// returns an error wrapping ErrStale and ErrNotObtained, or with TakeOver
// replaces the holder. When ctx ends or the Client closes first, Lock returns
// an error wrapping ErrNotObtained and ctx.Err() or ErrClosed. A Redis error
// ends Lock at once, but for LOADING (a restarted Redis reading its data),
// which Lock waits out on its ticks. On failure Lock leaves the lock as it
// found it.
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
	if err := m.enter(ctx, obs, m.sem); err != nil {
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
	if err := ctx.Err(); err != nil { // redigo may still send on an ended ctx
		return false, m.notObtained(err.Error(), err)
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
	from := m.cfg.clock.Now()
	out, err := m.acquire(ctx, token, "", "")
	if err != nil || out.fence == 0 {
		return false, m.gaveUp(ctx, err)
	}
	m.acquired(ctx, token, out.fence, from, false)
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
	return m.unlockReporting(ctx, false)
}

// unlockReporting is Unlock after its checks; see unlock for later.
func (m *Mutex) unlockReporting(ctx context.Context, later bool) error {
	err := m.unlock(ctx, later)
	if m.c.closed() {
		err = errors.Join(fmt.Errorf("%w: %s: Unlock after Close", ErrClosed, m.name), err)
	}
	return err
}

// unlock ends the hold and releases the lock. With later, a release that
// ctx ended before it was sent, or before its reply came, is made again in
// the background.
func (m *Mutex) unlock(ctx context.Context, later bool) error {
	opErr := m.takeOp(ctx)
	m.mu.Lock()
	tokens, lost := m.tokens, m.lost
	m.tokens, m.lost = nil, nil
	m.gen++
	m.mu.Unlock()
	if opErr == nil {
		defer m.dropOp()
	}
	if tokens == nil {
		return fmt.Errorf("%w: %s: not locked", ErrNotHeld, m.name)
	}
	m.c.unwatch(m)
	fence := m.fence.Swap(0)
	defer func() { <-m.sem }()
	if opErr == nil {
		opErr = ctx.Err() // redigo may still send on an ended ctx
	}
	if opErr != nil {
		if later {
			m.background(ctx, releaseScript, m.keys[:], tokens...)
		}
		return m.redisError(ctx, opErr)
	}
	err := m.release(ctx, tokens, fence)
	switch {
	case errors.Is(err, ErrLost):
		m.lose(ctx, lost, "lock", fence, "expired or taken over")
	case err != nil && later && m.ctxErr(ctx) != nil:
		m.background(ctx, releaseScript, m.keys[:], tokens...)
	}
	return err
}

// release frees the lock of the hold with fence in Redis, or hands it to
// the next waiter, if it holds one of tokens.
func (m *Mutex) release(ctx context.Context, tokens []string, fence uint64) error {
	var reply any
	var err error
	if len(tokens) == 1 {
		reply, _, err = m.eval(ctx, releaseScript, m.keys[:], tokens[0])
	} else {
		reply, _, err = m.eval(ctx, releaseScript, m.keys[:], anys(tokens)...)
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
		return m.lostError("expired or taken over")
	}
	if obs, ok := m.cfg.clock.(settle.Observer); ok && next != "" {
		obs.HandOff(next)
	}
	m.logReleased(ctx, "lock", fence, slog.Bool("handed_off", next != ""))
	return nil
}

// Refresh proves the holder alive: if Redis still holds our token, it
// replaces it with a new one, which tells waiters the lock is busy rather
// than stuck, and restarts the lease. The fence does not change. It returns
// an error wrapping ErrNotHeld when the lock is not ours any more; the hold
// stays until Unlock. When the reply is lost, the next Refresh or Unlock
// accepts either token.
func (m *Mutex) Refresh(ctx context.Context) error {
	if err := m.usable(ctx); err != nil {
		return err
	}
	if err := m.takeOp(ctx); err != nil {
		return m.redisError(ctx, err)
	}
	defer m.dropOp()
	m.mu.Lock()
	tokens, gen := m.tokens, m.gen
	m.mu.Unlock()
	if tokens == nil {
		return fmt.Errorf("%w: %s: not locked", ErrNotHeld, m.name)
	}
	next := newToken()
	sent := m.cfg.clock.Now()
	ok, err := m.flag(ctx, refreshScript, m.keys[:1], append([]any{m.lease, next}, anys(tokens)...)...)

	found, fence := false, m.Fence() // the loss, logged once mu is unlocked
	defer func() {
		if found {
			m.logLost(ctx, "lock", fence, "Refresh found it expired or taken over")
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	current := m.gen == gen
	switch {
	case err != nil:
		if current { // the script may have run: next may be ours too
			m.tokens = append([]string{next}, tokens[:min(len(tokens), maxTokens-1)]...)
		}
		return err
	case !ok:
		if current {
			found = m.signal().fire()
			m.c.unwatch(m)
		}
		return m.lostError("expired or taken over")
	}
	if current {
		m.tokens, m.from = []string{next}, sent
	}
	return nil
}

// takeOp waits for m.op, or for ctx to end.
func (m *Mutex) takeOp(ctx context.Context) error { return takeOp(ctx, m.op) }

func (m *Mutex) dropOp() { <-m.op }

// releaseTimeout bounds the Redis calls made without the caller's ctx: the
// Unlock that ends Do and the clean-up of a lost acquisition. It is real
// time, as the connections' deadlines are.
const releaseTimeout = 5 * time.Second

// releaseGrace is how long the Unlock that ends Do may run past the
// deadline of Do's ctx.
const releaseGrace = 50 * time.Millisecond

// releaseContext is the ctx of the Unlock that ends Do: it ignores the
// cancellation of ctx, so that a lock is released also when fn returned
// because ctx ended, but not its deadline, so that Do returns in time.
func releaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	dl, ok := ctx.Deadline()
	if !ok {
		return uctx, cancel
	}
	dctx, dcancel := context.WithDeadline(uctx, dl.Add(releaseGrace))
	return dctx, func() { dcancel(); cancel() }
}

// Do runs fn while holding the lock: Lock, fn, Unlock, and Unlock also when
// fn panics (the panic then goes on). fn's ctx carries the hold's fence for
// FenceOf. With WithAutoRefresh, the lock is refreshed while fn runs, and
// fn's ctx is cancelled when the lock is lost. The Unlock ignores ctx's
// cancellation, so that a lock is released even when fn returned because
// ctx ended, but it ends 50ms after ctx's deadline, if ctx has one, and
// after 5s otherwise; a release cut short then goes on in the background,
// as far as Client.Close. Do returns Lock's error without running fn, or
// fn's error joined with Unlock's. When the lock was lost while fn ran, the
// error wraps ErrLost, also when fn returned nil.
func (m *Mutex) Do(ctx context.Context, fn func(context.Context) error) (err error) {
	if err := m.check(ctx); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalidArgument)
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	fctx, stop := withFence(ctx, m.Fence()), func() any { return nil }
	if m.cfg.every > 0 {
		fctx, stop = m.refreshWhile(fctx, m)
	}
	defer func() {
		panicked := stop()
		if panicked != nil {
			defer panic(panicked) // the Pool's, once the lock is released
		}
		m.mu.Lock()
		lost := m.lost // made by whatever found the hold lost
		m.mu.Unlock()
		uctx, cancel := releaseContext(ctx)
		defer cancel()
		if uerr := m.unlockReporting(uctx, true); uerr != nil {
			err = errors.Join(err, uerr)
		}
		if lost != nil && isClosed(lost.ch) && !errors.Is(err, ErrLost) {
			err = errors.Join(err, m.lostError("lost while fn ran"))
		}
	}()
	return fn(fctx)
}

// usable is check, then whether the Client is open and ctx alive, for a
// call about the current hold: redigo may still send on an ended ctx.
func (m *Mutex) usable(ctx context.Context) error {
	switch err := m.check(ctx); {
	case err != nil:
		return err
	case m.c.closed():
		return fmt.Errorf("%w: %s", ErrClosed, m.name)
	case ctx.Err() != nil:
		return m.redisError(ctx, ctx.Err())
	}
	return nil
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
	out, unknown, err := m.outcome(ctx, acquireScript, token, token, m.lease, entry, queue)
	if unknown {
		return m.resolve(ctx, token, entry, queue, err)
	}
	return out, err
}

// takeOver replaces the stale holder's token with ours and takes entry, if
// not "", out of the queue.
func (m *Mutex) takeOver(ctx context.Context, stale, token, entry string) (outcome, error) {
	out, unknown, err := m.outcome(ctx, takeOverScript, token, stale, token, m.lease, entry)
	if unknown {
		queue := ""
		if entry != "" {
			queue = "x"
		}
		return m.resolve(ctx, token, entry, queue, err)
	}
	return out, err
}

// resolve finds out what an attempt whose reply was lost did: acquireScript
// again with the same token replies the fence when the lock holds the
// token, and otherwise makes one more attempt, re-joining the queue only if
// the lost one was to join it. When that fails too, or the lost reply was
// one that did not come in time (see askAgain), the key may still hold
// token with nobody knowing: a release in the background deletes it.
func (m *Mutex) resolve(ctx context.Context, token, entry, queue string, lost error) (outcome, error) {
	if !askAgain(lost) {
		m.background(ctx, releaseScript, m.keys[:], token)
		return outcome{}, lost
	}
	if queue == "q" {
		queue = "r"
	}
	out, _, err := m.outcome(ctx, acquireScript, token, token, m.lease, entry, queue)
	if err == nil {
		return out, nil
	}
	m.background(ctx, releaseScript, m.keys[:], token)
	return outcome{}, errors.Join(lost, err)
}

// outcome runs acquireScript or takeOverScript for token. unknown reports
// a reply lost after the script may have run.
func (m *Mutex) outcome(ctx context.Context, s *script, token string, args ...any) (out outcome, unknown bool, err error) {
	reply, sent, err := m.eval(ctx, s, m.keys[:], args...)
	if err == nil {
		if out, err = parseOutcome(reply); err == nil {
			return out, false, nil
		}
	}
	unknown = mayHaveRun(sent, err)
	return outcome{}, unknown, m.redisError(ctx, err)
}

// hold records a hold that Redis granted to a call sent at or after from.
func (m *Mutex) hold(token string, fence uint64, from time.Time) {
	m.mu.Lock()
	m.tokens, m.lost, m.from = []string{token}, nil, from
	m.gen++
	m.mu.Unlock()
	m.fence.Store(fence)
	m.c.watch(m)
}

// acquired records and logs a hold granted by acquireScript or, with
// handedOff, by a release.
func (m *Mutex) acquired(ctx context.Context, token string, fence uint64, from time.Time, handedOff bool) {
	m.hold(token, fence, from)
	m.logAcquired(ctx, "lock", fence, slog.Bool("handed_off", handedOff))
}
