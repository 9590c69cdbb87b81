package uncomplicated_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Deterministic tests of the Semaphore on the mock clock and miniredis.

// mustSemaphore returns the Semaphore of order 1 with permits, or fails.
func mustSemaphore(t *testing.T, c *uncomplicated.Client, permits int, opts ...uncomplicated.Option) *uncomplicated.Semaphore {
	t.Helper()
	s, err := uncomplicated.NewSemaphore(c, Order{1}, permits, opts...)
	if err != nil {
		t.Fatalf("NewSemaphore(%d) = %v", permits, err)
	}
	return s
}

// mustAcquire takes a permit of s, which must have one free.
func mustAcquire(t *testing.T, s *uncomplicated.Semaphore) *uncomplicated.Permit {
	t.Helper()
	p, ok, err := s.TryAcquire(context.Background())
	if err != nil || !ok {
		t.Fatalf("TryAcquire() = %v, %v; want a permit", ok, err)
	}
	return p
}

// acquireAsync runs s.Acquire in a goroutine and delivers its result.
func acquireAsync(ctx context.Context, s *uncomplicated.Semaphore) <-chan acquired {
	done := make(chan acquired, 1)
	go func() {
		p, err := s.Acquire(ctx)
		done <- acquired{p, err}
	}()
	return done
}

type acquired struct {
	p   *uncomplicated.Permit
	err error
}

// semEnv is an Env whose Client, the holders', has the test's patience,
// and its waiters' Client with that patience and opts.
func semEnv(t *testing.T, opts ...uncomplicated.Option) (env *uncomplicatedtest.Env, waiters *uncomplicated.Client) {
	t.Helper()
	env = uncomplicatedtest.New(t, uncomplicated.WithTimeout(patience))
	return env, env.NewClient(append([]uncomplicated.Option{uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks)}, opts...)...)
}

func TestSemaphore_permits(t *testing.T) {
	env, _ := semEnv(t)
	s := mustSemaphore(t, env.Client, 3)
	ctx := context.Background()
	var fences []uint64
	for range 3 {
		fences = append(fences, mustAcquire(t, s).Fence())
	}
	if !rising(fences...) {
		t.Errorf("fences = %v; want them rising", fences)
	}
	if p, ok, err := s.TryAcquire(ctx); ok || err != nil || p != nil {
		t.Fatalf("fourth TryAcquire() = %v, %v, %v; want nil, false, nil", p, ok, err)
	}
}

// A Release gives the permit back; a second one reports ErrNotHeld, and
// the permit's Lost channel, after Release, is closed.
func TestSemaphore_Release(t *testing.T) {
	env, _ := semEnv(t)
	s := mustSemaphore(t, env.Client, 1)
	ctx := context.Background()
	p := mustAcquire(t, s)
	if isClosedChan(p.Lost()) {
		t.Error("Lost() closed while held")
	}
	if err := p.Release(ctx); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	if err := p.Release(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) || errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("second Release() = %v; want ErrNotHeld, not ErrLost", err)
	}
	if !isClosedChan(p.Lost()) {
		t.Error("Lost() open after Release")
	}
	mustAcquire(t, s).Release(ctx)
}

// A holder that died frees its permit when its lease ends: the waiter gets
// it at its first tick after that.
func TestSemaphore_crashedHolder(t *testing.T) {
	env, waiters := semEnv(t)
	const lease = 20 * time.Second
	mustAcquire(t, mustSemaphore(t, env.Client, 1, uncomplicated.WithLease(lease))) // never released
	start := env.Clock.Now()
	done := acquireAsync(context.Background(), mustSemaphore(t, waiters, 1))
	env.AwaitWaiters(1)
	env.Advance(lease - time.Millisecond)
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() = %d before the lease ended; want 1", n)
	}
	env.Advance(tick)
	got := recv(t, done)
	if got.err != nil {
		t.Fatalf("Acquire() = %v", got.err)
	}
	if waited := env.Clock.Since(start); waited < lease || waited > lease+tick {
		t.Errorf("Acquire() returned after %v; want between %v and %v", waited, lease, lease+tick)
	}
}

// Stuck holders (no lease, same token) make a waiter fail with ErrStale
// exactly at the timeout under Fail.
func TestSemaphore_staleFail(t *testing.T) {
	env, waiters := semEnv(t)
	holders := mustSemaphore(t, env.Client, 2, uncomplicated.WithLease(0))
	mustAcquire(t, holders)
	mustAcquire(t, holders)
	start := env.Clock.Now()
	done := acquireAsync(context.Background(), mustSemaphore(t, waiters, 2))
	env.AwaitWaiters(1)
	env.Advance(patience - time.Nanosecond)
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() = %d a nanosecond before the timeout; want 1", n)
	}
	env.Advance(time.Nanosecond)
	got := recv(t, done)
	checkStale(t, got.err, holders.Name())
	if waited := env.Clock.Since(start); waited != patience {
		t.Errorf("Acquire() failed after %v; want %v", waited, patience)
	}
}

// Under TakeOver the waiter evicts exactly the stuck holder, while a busy
// one that refreshes keeps its permit: each holder has its own patience.
func TestSemaphore_takeOverStuckAmongBusy(t *testing.T) {
	env, waiters := semEnv(t, uncomplicated.WithTakeOver(true))
	holders := mustSemaphore(t, env.Client, 2, uncomplicated.WithLease(0))
	ctx := context.Background()
	stuck, busy := mustAcquire(t, holders), mustAcquire(t, holders)
	done := acquireAsync(ctx, mustSemaphore(t, waiters, 2))
	env.AwaitWaiters(1)
	for range 3 {
		env.Advance(patience / 3)
		if err := busy.Refresh(ctx); err != nil {
			t.Fatalf("Refresh() = %v", err)
		}
	}
	env.Advance(tick) // the waiter's next attempt
	got := recv(t, done)
	if got.err != nil {
		t.Fatalf("Acquire() = %v; want the stuck holder's permit", got.err)
	}
	if f := got.p.Fence(); !rising(stuck.Fence(), busy.Fence(), f) {
		t.Errorf("taken-over permit's Fence() = %d; want above the holders', %d and %d", f, stuck.Fence(), busy.Fence())
	}
	if ok, err := stuck.Held(ctx); ok || err != nil {
		t.Errorf("stuck holder's Held() = %v, %v; want false, nil", ok, err)
	}
	if !isClosedChan(stuck.Lost()) {
		t.Error("stuck holder's Lost() still open")
	}
	if err := stuck.Release(ctx); !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("stuck holder's Release() = %v; want ErrLost", err)
	}
	if ok, err := busy.Held(ctx); !ok || err != nil {
		t.Errorf("busy holder's Held() = %v, %v; want true", ok, err)
	}
}

// Holders that keep refreshing are busy, not stuck: the waiter still waits
// after twice the timeout.
func TestSemaphore_busyHoldersNotStale(t *testing.T) {
	env, waiters := semEnv(t)
	p := mustAcquire(t, mustSemaphore(t, env.Client, 1, uncomplicated.WithLease(0)))
	done := acquireAsync(context.Background(), mustSemaphore(t, waiters, 1))
	env.AwaitWaiters(1)
	for range 4 {
		env.Advance(patience / 2)
		if err := p.Refresh(context.Background()); err != nil {
			t.Fatalf("Refresh() = %v", err)
		}
	}
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() = %d after 2 timeouts of refreshing; want 1", n)
	}
	select {
	case got := <-done:
		t.Fatalf("Acquire() = %v; want it still waiting", got.err)
	default:
	}
}

// Two waiters reach the timeout at once: exactly one takes the stuck
// permit over, the other watches the winner for a whole timeout more.
func TestSemaphore_takeOverRace(t *testing.T) {
	env, waiters := semEnv(t, uncomplicated.WithTakeOver(true))
	mustAcquire(t, mustSemaphore(t, env.Client, 1, uncomplicated.WithLease(0)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := acquireAsync(ctx, mustSemaphore(t, waiters, 1, uncomplicated.WithLease(0)))
	b := acquireAsync(ctx, mustSemaphore(t, env.NewClient(uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks), uncomplicated.WithTakeOver(true)), 1, uncomplicated.WithLease(0)))
	env.AwaitWaiters(2)
	env.Advance(patience + tick)
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() = %d after the take-over; want 1", n)
	}
	var winner acquired
	select {
	case winner = <-a:
	case winner = <-b:
	}
	if winner.err != nil {
		t.Fatalf("winner's Acquire() = %v", winner.err)
	}
	if members, _ := env.Redis.ZMembers(permitsKey(env.Client, 1)); len(members) != 1 {
		t.Errorf("holders in Redis = %v; want 1", members)
	}
}

// Each caller enforces its own number of permits: with 3 holders, a
// caller asking for 3 waits and one asking for 4 gets in.
func TestSemaphore_permitsPerCaller(t *testing.T) {
	env, _ := semEnv(t)
	three := mustSemaphore(t, env.Client, 3)
	for range 3 {
		mustAcquire(t, three)
	}
	if _, ok, err := mustSemaphore(t, env.Client, 2).TryAcquire(context.Background()); ok || err != nil {
		t.Errorf("TryAcquire() with 2 permits and 3 holders = %v, %v; want false, nil", ok, err)
	}
	if _, ok, err := three.TryAcquire(context.Background()); ok || err != nil {
		t.Errorf("TryAcquire() with 3 permits and 3 holders = %v, %v; want false, nil", ok, err)
	}
	mustAcquire(t, mustSemaphore(t, env.Client, 4))
}

// A Release wakes a waiter at once: it needs no tick.
func TestSemaphore_releaseWakes(t *testing.T) {
	env, waiters := semEnv(t)
	p := mustAcquire(t, mustSemaphore(t, env.Client, 1))
	done := acquireAsync(context.Background(), mustSemaphore(t, waiters, 1))
	env.AwaitWaiters(1) // subscribed: it parks once its subscription is confirmed
	if err := p.Release(context.Background()); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	if got := recv(t, done); got.err != nil {
		t.Fatalf("Acquire() = %v", got.err)
	}
}

// Do holds a permit while fn runs and gives it back after, also when fn
// fails; with auto-refresh the permit outlives its lease.
func TestSemaphore_Do(t *testing.T) {
	env, _ := semEnv(t)
	s := mustSemaphore(t, env.Client, 1, uncomplicated.WithLease(10*time.Second), uncomplicated.WithAutoRefresh(3*time.Second))
	ctx := context.Background()
	boom := errors.New("boom")
	err := s.Do(ctx, func(ctx context.Context) error {
		if _, ok, _ := s.TryAcquire(ctx); ok {
			t.Error("TryAcquire() inside Do got a second permit")
		}
		for range 10 {
			env.Clock.Add(time.Second)
			time.Sleep(time.Millisecond) // let the refresh run, in real time
		}
		if _, ok, _ := s.TryAcquire(ctx); ok {
			t.Error("TryAcquire() inside Do, past the lease, got a second permit")
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Do() = %v; want fn's error", err)
	}
	mustAcquire(t, s)
}

// permitsKey is the Redis key of the holders of order n's semaphore.
func permitsKey(c *uncomplicated.Client, n int64) string {
	s, _ := uncomplicated.NewSemaphore(c, Order{n}, 1)
	return "lock:permits:{" + s.Name() + "}"
}

func isClosedChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A permit whose entry vanished (an eviction, a restart) is found lost by
// Held, which closes its Lost channel; Refresh then reports ErrLost.
func TestPermit_lostFound(t *testing.T) {
	env, _ := semEnv(t)
	ctx := context.Background()
	s := mustSemaphore(t, env.Client, 1)
	p := mustAcquire(t, s)
	if ok, err := p.Held(ctx); !ok || err != nil {
		t.Fatalf("Held() = %v, %v; want true", ok, err)
	}
	env.Redis.Del(permitsKey(env.Client, 1))
	if ok, err := p.Held(ctx); ok || err != nil {
		t.Fatalf("Held() after the entry vanished = %v, %v; want false, nil", ok, err)
	}
	if !isClosedChan(p.Lost()) {
		t.Error("Lost() still open")
	}
	if err := p.Refresh(ctx); !errors.Is(err, uncomplicated.ErrLost) || !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Refresh() = %v; want ErrLost and ErrNotHeld", err)
	}
}

// A Do that waited longer than its lease before getting in has a fresh
// lease: auto-refresh counts it from the attempt that got it, not from the
// start of the wait.
func TestDo_autoRefreshAfterLongWait(t *testing.T) {
	opts := []uncomplicated.Option{uncomplicated.WithLease(10 * time.Second), uncomplicated.WithAutoRefresh(3 * time.Second)}
	for name, do := range map[string]func(c *uncomplicated.Client, fn func(context.Context) error) error{
		"Semaphore.Do": func(c *uncomplicated.Client, fn func(context.Context) error) error {
			return mustSemaphore(t, c, 1, opts...).Do(context.Background(), fn)
		},
		"RWMutex.Do": func(c *uncomplicated.Client, fn func(context.Context) error) error {
			return mustRW(t, c, opts...).Do(context.Background(), fn)
		},
		"RWMutex.RDo": func(c *uncomplicated.Client, fn func(context.Context) error) error {
			return mustRW(t, c, opts...).RDo(context.Background(), fn)
		},
	} {
		t.Run(name, func(t *testing.T) {
			env, waiters := semEnv(t)
			ctx := context.Background()
			p := mustAcquire(t, mustSemaphore(t, env.Client, 1))
			w := mustRW(t, env.Client)
			mustWLock(t, w)
			var cause error
			done := async(func() error {
				return do(waiters, func(ctx context.Context) error {
					time.Sleep(20 * time.Millisecond) // time for a wrong cancellation to show
					cause = context.Cause(ctx)
					return nil
				})
			})
			env.AwaitWaiters(1)
			env.Advance(15 * time.Second)
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := w.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := recv(t, done); err != nil {
				t.Errorf("Do() after a 15s wait = %v; want nil: the lease is fresh", err)
			}
			if cause != nil {
				t.Errorf("fn's ctx ended: %v", cause)
			}
		})
	}
}
