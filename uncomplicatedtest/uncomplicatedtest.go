// Package uncomplicatedtest runs uncomplicated's locks on an in-memory Redis
// (miniredis) and a mock clock, so that a test of code that locks, such as
// "the second worker takes over after the timeout", runs in milliseconds and
// never sleeps.
//
// Start the goroutines that lock, wait until they wait (AwaitWaiters), then
// move time with Advance: it moves the clock and the Redis TTLs together,
// stopping at every instant a waiter wakes and letting it finish its work
// before moving on.
//
// Advance follows the Lock calls on Env's clock, from the moment they start
// until they return: waiting behind another goroutine of the same Mutex,
// trying Redis, joining the queue, or sleeping between attempts. An Unlock
// that hands the lock to a waiter needs no Advance: Waiters and Advance wait
// for that waiter's Lock to return. It does not follow what your
// goroutines do after Lock returns, nor your own timers on Env.Clock; for
// those it gives only the mock clock's own pause of about a millisecond
// after each timer it fires. Each instant Advance stops at costs about a
// millisecond of real time, so fewer ticks (WithTicks) make long Advances
// faster. Make deadlines with Env.Clock.WithTimeout, so that they follow
// the mock clock.
package uncomplicatedtest

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/benbjohnson/clock"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/mockclock"
	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// settleLimit bounds, in real time, how long Advance and AwaitWaiters wait
// for goroutines before failing the test.
const settleLimit = 10 * time.Second

// An Env is an in-memory Redis and a mock clock with a Client using both.
// Its methods must be called from the test's goroutine.
type Env struct {
	Client *uncomplicated.Client // uses Redis and Clock; closed at cleanup
	Clock  *clock.Mock           // starts near the current time
	Redis  *miniredis.Miniredis  // its TTLs follow Clock as Advance moves it; its TIME, a microsecond more per script

	t          testing.TB
	pool       *redis.Pool
	clock      *observedClock // Clock, watching the waiters of Env's clients
	redisClock *redisClock    // Redis's, a little ahead of Clock
}

// New starts an Env whose Client has opts. The Client, its pool and the
// server stop when the test ends.
func New(t testing.TB, opts ...uncomplicated.Option) *Env {
	t.Helper()
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		t.Fatalf("uncomplicatedtest: start miniredis: %v", err)
	}
	t.Cleanup(mr.Close)
	mock := clock.NewMock()
	mock.Set(time.Now().Round(0))
	rc := &redisClock{redis: mr, clock: mock}
	rc.redis.SetTime(mock.Now())

	pool := &redis.Pool{
		MaxIdle: 16,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			c, err := redis.DialContext(ctx, "tcp", mr.Addr())
			if err != nil {
				return nil, err
			}
			return mockTimeConn{c.(redis.ConnWithContext), rc}, nil
		},
	}
	t.Cleanup(func() { _ = pool.Close() })

	e := &Env{Clock: mock, Redis: mr, t: t, pool: pool, redisClock: rc, clock: &observedClock{Mock: mockclock.Wrap(mock), parked: map[*parking]struct{}{}, handed: map[string]bool{}, due: map[*time.Time]struct{}{}}}
	e.Client = e.NewClient(opts...)
	return e
}

// NewClient returns another Client on Env's Redis and clock, as a second
// process would have, with opts; it is closed when the test ends. A
// WithClock in opts would hide its waiters from Advance.
func (e *Env) NewClient(opts ...uncomplicated.Option) *uncomplicated.Client {
	c := uncomplicated.NewClient(redigo.New(e.pool), append([]uncomplicated.Option{uncomplicated.WithClock(e.clock)}, opts...)...)
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Advance moves Clock and the Redis TTLs forward by d. It stops at each
// instant a waiter is due to wake and lets every waiter run until it sleeps
// again or returns, so that the outcome does not depend on scheduling.
func (e *Env) Advance(d time.Duration) {
	e.t.Helper()
	if d < 0 {
		e.t.Fatalf("uncomplicatedtest: Advance(%v): time does not go back", d)
	}
	target := e.Clock.Now().Add(d)
	for {
		next, ok := e.settle()
		if !ok || next.After(target) {
			break
		}
		e.set(next)
	}
	e.set(target)
	e.settle()
}

// AwaitWaiters returns once at least n Lock calls on Env's clock are
// waiting (behind another goroutine of their Mutex, or between attempts),
// failing the test if that takes more than ten seconds.
func (e *Env) AwaitWaiters(n int) {
	e.t.Helper()
	deadline := time.Now().Add(settleLimit)
	for {
		ok, parked, _, _ := e.clock.state()
		if ok && parked >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("uncomplicatedtest: %d waiters after %v; want %d", parked, settleLimit, n)
		}
		pause()
	}
}

// Waiters returns how many Lock calls on Env's clock are waiting, once
// every one of them has settled into its sleep.
func (e *Env) Waiters() int {
	e.t.Helper()
	e.settle()
	_, parked, _, _ := e.clock.state()
	return parked
}

// settle waits until every waiter sleeps on a timer in the future and
// returns the earliest wake-up, if any, of a waiter or of the library's
// own work.
func (e *Env) settle() (time.Time, bool) {
	e.t.Helper()
	deadline := time.Now().Add(settleLimit)
	for i := 0; ; i++ {
		ok, parked, next, due := e.clock.state()
		if ok {
			return next, parked > 0 || due
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("uncomplicatedtest: waiters still running after %v", settleLimit)
		}
		if i < 100 {
			runtime.Gosched() // a waiter's Redis round trip takes microseconds
		} else {
			pause()
		}
	}
}

func pause() { time.Sleep(50 * time.Microsecond) }

// set moves Redis's time and TTLs, then the clock, to t, while no timer
// is made (see mockclock).
func (e *Env) set(t time.Time) {
	e.redisClock.advance(t)
	e.clock.Set(t)
}

// observedClock is the mock clock as the Client sees it: it also counts the
// Client's waiters and where they sleep.
type observedClock struct {
	*mockclock.Mock
	mu      sync.Mutex              // guards the fields below
	waiting int                     // Lock calls under way
	parked  map[*parking]struct{}   // those that wait
	handed  map[string]bool         // tokens of waiters an Unlock handed the lock to
	due     map[*time.Time]struct{} // when the library's own timers fire
}

// parking is a waiter's wait: until a time of the clock, or, when until is
// zero, until another goroutine unlocks.
type parking struct {
	until time.Time
	token string
}

var _ settle.Observer = (*observedClock)(nil)

func (c *observedClock) Waiting(delta int) {
	c.mu.Lock()
	c.waiting += delta
	c.mu.Unlock()
}

func (c *observedClock) Park(until time.Time, token string) func() {
	p := &parking{until: until, token: token}
	c.mu.Lock()
	c.parked[p] = struct{}{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.parked, p)
		delete(c.handed, token)
		c.mu.Unlock()
	}
}

func (c *observedClock) Due(at time.Time) func() {
	p := &at
	c.mu.Lock()
	c.due[p] = struct{}{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.due, p)
		c.mu.Unlock()
	}
}

func (c *observedClock) HandOff(token string) {
	c.mu.Lock()
	c.handed[token] = true
	c.mu.Unlock()
}

// state reports whether every waiter sleeps until after now, how many
// sleep, and the earliest wake-up, of a waiter or of the library's own
// work (due reports whether there is any).
func (c *observedClock) state() (settled bool, parked int, next time.Time, due bool) {
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	settled = c.waiting == len(c.parked)
	for at := range c.due {
		if !at.After(now) {
			settled = false
		}
		if next.IsZero() || at.Before(next) {
			next = *at
		}
	}
	for p := range c.parked {
		if c.handed[p.token] { // its wake-up is on its way
			settled = false
		}
		if p.until.IsZero() {
			continue
		}
		if !p.until.After(now) {
			settled = false
		}
		if next.IsZero() || p.until.Before(next) {
			next = p.until
		}
	}
	return settled, len(c.parked), next, len(c.due) > 0
}

// mockTimeConn keeps deadlines of the mock clock away from the connection:
// redigo would compare them with real time. Cancellation, which the mock
// clock drives, still ends a call. It moves Redis's clock before each
// script (see redisClock).
type mockTimeConn struct {
	redis.ConnWithContext
	clock *redisClock
}

func (c mockTimeConn) Do(cmd string, args ...any) (any, error) {
	c.clock.before(cmd)
	return c.ConnWithContext.Do(cmd, args...)
}

func (c mockTimeConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	c.clock.before(cmd)
	return c.ConnWithContext.DoContext(noDeadline{ctx}, cmd, args...)
}

// DoWithTimeout is the connection's own: its timeout is real time.
func (c mockTimeConn) DoWithTimeout(d time.Duration, cmd string, args ...any) (any, error) {
	c.clock.before(cmd)
	return redis.DoWithTimeout(c.ConnWithContext, d, cmd, args...)
}

func (c mockTimeConn) ReceiveContext(ctx context.Context) (any, error) {
	return c.ConnWithContext.ReceiveContext(noDeadline{ctx})
}

// noDeadline is a ctx without its deadline.
type noDeadline struct{ context.Context }

func (noDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }
