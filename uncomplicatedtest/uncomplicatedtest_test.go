package uncomplicatedtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

func TestNew_clockNearNow(t *testing.T) {
	env := uncomplicatedtest.New(t)
	if d := time.Since(env.Clock.Now()); d < 0 || d > time.Minute {
		t.Errorf("Clock.Now() is %v from now; want near now", d)
	}
}

// Redis's clock moves with each script, as a real server's does, so that
// holds that follow each other while the mock clock stands still get
// rising fences; a lease set meanwhile still ends when Advance says.
func TestEnv_fencesRiseWhileTheClockStands(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithLease(time.Second))
	ctx := context.Background()
	m, err := uncomplicated.New(env.Client, uncomplicated.Named("x"))
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i := range 100 {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if f := m.Fence(); f <= last {
			t.Fatalf("hold %d: fence %d; want above %d", i, f, last)
		}
		last = m.Fence()
		if i < 99 {
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	env.Advance(time.Second - time.Nanosecond)
	if !env.Redis.Exists(m.Name()) {
		t.Fatal("lock gone before its lease")
	}
	env.Advance(time.Nanosecond)
	if env.Redis.Exists(m.Name()) {
		t.Error("lock still there after its lease")
	}
}

// Advance moves Redis TTLs with the clock: a key with a 10s TTL is there
// after 10s less a nanosecond and gone at 10s.
func TestEnv_Advance_ttl(t *testing.T) {
	env := uncomplicatedtest.New(t)
	env.Redis.Set("k", "v")
	env.Redis.SetTTL("k", 10*time.Second)
	env.Advance(10*time.Second - time.Nanosecond)
	if !env.Redis.Exists("k") {
		t.Fatal("key gone before its TTL")
	}
	env.Advance(time.Nanosecond)
	if env.Redis.Exists("k") {
		t.Error("key still there after its TTL")
	}
}

// Advance stops at every waiter's wake-up: a waiter on a lock whose holder
// expires gets it at the first tick after the expiry, never later, however
// the goroutines are scheduled.
func TestEnv_Advance_wakesEveryWaiter(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(time.Minute), uncomplicated.WithTicks(60))
	ctx := context.Background()
	holder, _ := uncomplicated.New(env.Client, Order{N: 1}, uncomplicated.WithLease(10*time.Second))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 5
	done := make(chan error, n)
	for range n {
		m, _ := uncomplicated.New(env.NewClient(), Order{N: 1})
		go func() {
			err := m.Lock(ctx)
			if err == nil {
				err = m.Unlock(ctx)
			}
			done <- err
		}()
	}
	env.AwaitWaiters(n)
	// Each waiter, once the lock is free, takes it within one tick (1s) and
	// unlocks at once; five of them need at most five ticks.
	env.Advance(10*time.Second + n*time.Second)
	if w := env.Waiters(); w != 0 {
		t.Fatalf("Waiters() = %d; want 0", w)
	}
	for range n {
		if err := <-done; err != nil {
			t.Errorf("Lock/Unlock = %v", err)
		}
	}
}

func TestEnv_AwaitWaiters_countsOnlyWaiters(t *testing.T) {
	env := uncomplicatedtest.New(t)
	m, _ := uncomplicated.New(env.Client, Order{N: 1})
	if w := env.Waiters(); w != 0 {
		t.Errorf("Waiters() with nobody locking = %d; want 0", w)
	}
	if err := m.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	other, _ := uncomplicated.New(env.Client, Order{N: 1})
	done := make(chan error, 1)
	go func() { done <- other.Lock(ctx) }()
	env.AwaitWaiters(1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Lock() = %v; want context.Canceled", err)
	}
	if w := env.Waiters(); w != 0 {
		t.Errorf("Waiters() after the waiter gave up = %d; want 0", w)
	}
}
