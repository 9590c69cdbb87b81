package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Deterministic tests of the wait loop: a mock clock and miniredis, moved
// together by uncomplicatedtest.Env.Advance, which lets every waiter finish
// its work at each instant before time moves on.

// The waiters' timeout, and its ticks: few, to keep the number of instants
// Advance stops at small.
const (
	patience = time.Minute
	ticks    = 10
	tick     = patience / ticks
)

// stuck returns an Env whose lock on order 1 is held, with no expiry, by a
// holder that will never unlock, and a waiter Mutex with opts on the same
// lock in another client (another process).
func stuck(t *testing.T, opts ...uncomplicated.Option) (env *uncomplicatedtest.Env, holder, waiter *uncomplicated.Mutex) {
	t.Helper()
	env = uncomplicatedtest.New(t)
	holder = mustNew(t, env.Client, Order{1}, uncomplicated.WithLease(0), uncomplicated.WithTimeout(patience))
	mustLock(t, holder)
	other := env.NewClient(uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks))
	waiter = mustNew(t, other, Order{1}, opts...)
	return env, holder, waiter
}

func TestWait_staleAfterExactlyTheTimeout(t *testing.T) {
	for _, policy := range []bool{false, true} {
		t.Run(fmt.Sprintf("takeover=%v", policy), func(t *testing.T) {
			env, holder, waiter := stuck(t, uncomplicated.WithTakeOver(policy))
			start := env.Clock.Now()
			done := lockAsync(context.Background(), waiter)
			env.AwaitWaiters(1)

			env.Advance(patience - time.Nanosecond)
			if n := env.Waiters(); n != 1 {
				t.Fatalf("Waiters() = %d a nanosecond before the timeout; want 1", n)
			}
			env.Advance(time.Nanosecond)
			err := recv(t, done)
			if got := env.Clock.Since(start); got != patience {
				t.Errorf("Lock returned after %v; want %v", got, patience)
			}
			if !policy {
				checkStale(t, err, waiter.Name())
				if f := holder.Fence(); f == 0 {
					t.Errorf("holder's Fence() = %d; want its own", f)
				}
				if err := holder.Unlock(context.Background()); err != nil {
					t.Errorf("holder's Unlock() = %v; want nil (Fail must leave the lock alone)", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lock() = %v; want nil (taken over)", err)
			}
			if f := waiter.Fence(); !rising(holder.Fence(), f) {
				t.Errorf("Fence() after take-over = %d; want above the stale holder's, %d", f, holder.Fence())
			}
			if err := holder.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrNotHeld) {
				t.Errorf("stale holder's Unlock() = %v; want ErrNotHeld", err)
			}
			if err := waiter.Unlock(context.Background()); err != nil {
				t.Errorf("Unlock() = %v; want nil", err)
			}
		})
	}
}

func checkStale(t *testing.T, err error, name string) {
	t.Helper()
	if !errors.Is(err, uncomplicated.ErrStale) || !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Fatalf("Lock() = %v; want ErrStale and ErrNotObtained", err)
	}
	for _, want := range []string{name, patience.String()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Lock() = %q; want it to name %q", err, want)
		}
	}
}

// A new holder token, from a Refresh or from a new holder, restarts the
// waiter's patience: staleness then comes a whole timeout after the waiter
// first sees the new token, which it does at its next tick.
func TestWait_newTokenResetsPatience(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, env *uncomplicatedtest.Env, holder *uncomplicated.Mutex)
	}{
		{"refresh", func(t *testing.T, _ *uncomplicatedtest.Env, holder *uncomplicated.Mutex) {
			if err := holder.Refresh(context.Background()); err != nil {
				t.Fatalf("Refresh() = %v", err)
			}
		}},
		{"new holder", func(t *testing.T, env *uncomplicatedtest.Env, holder *uncomplicated.Mutex) {
			// The holder's lease ends and another process takes the lock
			// before the waiter's next tick. (An Unlock would hand the
			// lock to the waiter, which waits in the queue.)
			env.Redis.Del(holder.Name())
			mustLock(t, mustNew(t, env.NewClient(uncomplicated.WithTimeout(patience)), Order{1}, uncomplicated.WithLease(0)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, holder, waiter := stuck(t)
			done := lockAsync(context.Background(), waiter)
			env.AwaitWaiters(1)

			env.Advance(patience / 2)
			tc.change(t, env, holder)
			env.Advance(patience - time.Nanosecond)
			if n := env.Waiters(); n != 1 {
				t.Fatalf("Waiters() = %d a timeout after the token changed; want 1", n)
			}
			env.Advance(tick + time.Nanosecond)
			checkStale(t, recv(t, done), waiter.Name())
		})
	}
}

// Two waiters reach the stale holder at the same instant: one takes it
// over, the other sees the new holder and goes on waiting for it.
func TestWait_lostTakeOverRace(t *testing.T) {
	env, holder, b := stuck(t, uncomplicated.WithTakeOver(true))
	c := mustNew(t, env.NewClient(uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks)), Order{1},
		uncomplicated.WithTakeOver(true))
	doneB := lockAsync(context.Background(), b)
	doneC := lockAsync(context.Background(), c)
	env.AwaitWaiters(2)

	env.Advance(patience)
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() after the take-over = %d; want 1", n)
	}
	winner, loser, doneLoser := b, c, doneC
	select {
	case <-time.After(10 * time.Second):
		t.Fatal("neither waiter returned")
	case err := <-doneB:
		if err != nil {
			t.Fatalf("b.Lock() = %v", err)
		}
	case err := <-doneC:
		if err != nil {
			t.Fatalf("c.Lock() = %v", err)
		}
		winner, loser, doneLoser = c, b, doneB
	}
	won := winner.Fence()
	if !rising(holder.Fence(), won) {
		t.Errorf("winner's Fence() = %d; want above the stale holder's, %d", won, holder.Fence())
	}
	if err := holder.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("stale holder's Unlock() = %v; want ErrNotHeld", err)
	}

	if err := winner.Unlock(context.Background()); err != nil {
		t.Fatalf("winner's Unlock() = %v", err)
	}
	env.Advance(tick)
	if err := recv(t, doneLoser); err != nil {
		t.Fatalf("loser's Lock() = %v; want nil once the winner unlocked", err)
	}
	if f := loser.Fence(); !rising(won, f) {
		t.Errorf("loser's Fence() = %d; want above the winner's, %d", f, won)
	}
}

func TestWait_contextEnds(t *testing.T) {
	cases := []struct {
		name string
		end  func(env *uncomplicatedtest.Env, ctx context.Context) (context.Context, func())
		want error
	}{
		{"cancel", func(_ *uncomplicatedtest.Env, ctx context.Context) (context.Context, func()) {
			return context.WithCancel(ctx)
		}, context.Canceled},
		{"deadline", func(env *uncomplicatedtest.Env, ctx context.Context) (context.Context, func()) {
			return env.Clock.WithTimeout(ctx, patience/2)
		}, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, holder, waiter := stuck(t)
			ctx, end := tc.end(env, context.Background())
			defer end()
			done := lockAsync(ctx, waiter)
			env.AwaitWaiters(1)
			if tc.want == context.Canceled {
				end()
			} else {
				env.Advance(patience / 2)
			}
			err := recv(t, done)
			if !errors.Is(err, uncomplicated.ErrNotObtained) || !errors.Is(err, tc.want) {
				t.Fatalf("Lock() = %v; want ErrNotObtained and %v", err, tc.want)
			}
			if waiter.Fence() != 0 || holder.Fence() == 0 {
				t.Errorf("fences = %d, %d; want 0 and the holder's", waiter.Fence(), holder.Fence())
			}
		})
	}
}

// Between attempts a waiter sleeps a random time below min(timeout/ticks,
// 1s): in every window of that length it tries Redis at least once, and on
// average about twice (a mean sleep of half the bound), never like a busy
// loop. The 5m/100 case fails if the 1s cap is missing, the 1m/1000 one if
// ticks is ignored; a jitter test in internal/config/config_test.go checks the randomness.
func TestWait_tickBounds(t *testing.T) {
	cases := []struct {
		timeout time.Duration
		ticks   int
		bound   time.Duration
	}{
		{10 * time.Second, 100, 100 * time.Millisecond},
		{5 * time.Minute, 100, time.Second},
		{time.Minute, 1000, 60 * time.Millisecond},
		{2 * time.Second, 1, time.Second},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/%d", tc.timeout, tc.ticks), func(t *testing.T) {
			env := uncomplicatedtest.New(t)
			mustLock(t, mustNew(t, env.Client, Order{1}, uncomplicated.WithLease(0)))
			waiter := mustNew(t, env.Client, Order{1}, uncomplicated.WithTimeout(tc.timeout), uncomplicated.WithTicks(tc.ticks))
			ctx, cancel := context.WithCancel(context.Background())
			done := lockAsync(ctx, waiter)
			env.AwaitWaiters(1)

			// One attempt in the queue is seven commands: the script's
			// EVALSHA, the GET that finds the lock taken, TIME, the HGET and
			// HSET of its entry (its deadline pushed back), and the PTTLs of
			// the queue and of its entries.
			const perAttempt = 7
			windows := min(int(tc.timeout/tc.bound)-1, 50)
			start := env.Redis.CommandCount()
			for i := range windows {
				before := env.Redis.CommandCount()
				env.Advance(tc.bound)
				if env.Redis.CommandCount() == before {
					t.Fatalf("no attempt in window %d of %v", i, tc.bound)
				}
			}
			attempts := (env.Redis.CommandCount() - start) / perAttempt
			if windows >= 20 && attempts > 4*windows {
				t.Errorf("%d attempts in %d windows; want about %d, as a mean sleep of half the bound gives", attempts, windows, 2*windows)
			}
			cancel()
			if err := recv(t, done); !errors.Is(err, context.Canceled) {
				t.Fatalf("Lock() = %v; want context.Canceled", err)
			}
		})
	}
}

// A holder whose lease ends frees the lock: the waiter gets it at its next
// tick, long before it would judge the holder stale.
func TestWait_leaseExpires(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks))
	holder := mustNew(t, env.Client, Order{1}, uncomplicated.WithLease(patience/4))
	mustLock(t, holder)
	waiter := mustNew(t, env.Client, Order{1})
	done := lockAsync(context.Background(), waiter)
	env.AwaitWaiters(1)

	env.Advance(patience/4 - time.Millisecond)
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() before the lease ends = %d; want 1", n)
	}
	env.Advance(time.Millisecond + tick)
	if err := recv(t, done); err != nil {
		t.Fatalf("Lock() = %v; want nil after the holder's lease", err)
	}
	if f := waiter.Fence(); !rising(holder.Fence(), f) {
		t.Errorf("Fence() = %d; want above the expired holder's, %d", f, holder.Fence())
	}
	if err := holder.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("expired holder's Unlock() = %v; want ErrNotHeld", err)
	}
}

// Close wakes a waiting Lock, and every later call reports ErrClosed.
func TestClient_Close(t *testing.T) {
	env := uncomplicatedtest.New(t)
	holder := mustNew(t, env.Client, Order{1})
	mustLock(t, holder)
	client := env.NewClient()
	waiter := mustNew(t, client, Order{1})
	done := lockAsync(context.Background(), waiter)
	env.AwaitWaiters(1)

	if err := client.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	err := recv(t, done)
	if !errors.Is(err, uncomplicated.ErrClosed) || !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Fatalf("waiting Lock() after Close = %v; want ErrClosed and ErrNotObtained", err)
	}
	ctx := context.Background()
	calls := map[string]error{
		"Lock":    waiter.Lock(ctx),
		"Unlock":  waiter.Unlock(ctx),
		"Refresh": waiter.Refresh(ctx),
		"Do":      waiter.Do(ctx, func(context.Context) error { return nil }),
		"Close":   client.Close(),
	}
	_, calls["TryLock"] = waiter.TryLock(ctx)
	_, calls["New"] = uncomplicated.New(client, Order{2})
	_, calls["Named"] = uncomplicated.New(client, uncomplicated.Named("x"))
	for name, err := range calls {
		if want := name != "Close"; errors.Is(err, uncomplicated.ErrClosed) != want {
			t.Errorf("%s() after Close = %v; want ErrClosed: %v", name, err, want)
		}
		if want := name == "Lock" || name == "TryLock" || name == "Do"; errors.Is(err, uncomplicated.ErrNotObtained) != want {
			t.Errorf("%s() after Close = %v; want ErrNotObtained: %v", name, err, want)
		}
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Errorf("Unlock() on an open client = %v", err)
	}
}

// A release counts as work under way for a clock that follows the waiters,
// from before it stops its hold's take of a claim until it has named the
// waiter it woke: otherwise uncomplicatedtest's Advance could move past
// the claim of the hold it releases, or of the hold it hands over, while
// the release is on its way.
func TestWait_releaseIsWorkUnderWay(t *testing.T) {
	clk := &handOffClock{Mock: clock.NewMock(), parked: make(chan string, 16)}
	clk.Set(time.Now())
	_, cs := miniClients(t, 2, uncomplicated.WithClock(clk))
	holder := mustNew(t, cs[0], Order{1})
	mustLock(t, holder)
	waiter := mustNew(t, cs[1], Order{1})
	done := lockAsync(context.Background(), waiter)
	for token := ""; token == ""; token = recv(t, clk.parked) {
	} // queued in Redis; the mock clock never moves, so it sleeps until woken
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("waiter's Lock() = %v", err)
	}
	if err := waiter.Unlock(context.Background()); err != nil { // stops the take of its claim
		t.Fatal(err)
	}
	clk.mu.Lock()
	defer clk.mu.Unlock()
	if want := []int{3}; !slices.Equal(clk.atHandOff, want) {
		t.Errorf("calls started by each hand-off = %v; want %v (two Locks and the release)", clk.atHandOff, want)
	}
	if want := []int{1}; !slices.Equal(clk.atTakeEnd, want) {
		t.Errorf("calls under way when each take of a claim ended = %v; want %v (the release)", clk.atTakeEnd, want)
	}
	if clk.active != 0 {
		t.Errorf("calls under way at the end = %d; want 0", clk.active)
	}
}

// handOffClock is a mock clock that follows the waiters (as
// uncomplicatedtest's does) and records how many calls had begun by each
// hand-off, how many were under way when a take of a claim ended, and the
// token of each waiter that sleeps.
type handOffClock struct {
	*clock.Mock
	parked    chan string
	mu        sync.Mutex
	started   int   // calls that began
	active    int   // calls under way
	atHandOff []int // started, at each hand-off
	atTakeEnd []int // active, at the end of each take
}

func (c *handOffClock) Waiting(delta int) {
	c.mu.Lock()
	c.active += delta
	if delta > 0 {
		c.started++
	}
	c.mu.Unlock()
}

func (c *handOffClock) Park(_ time.Time, token string) func() {
	select {
	case c.parked <- token:
	default: // the test has seen what it waits for
	}
	return func() {}
}

func (c *handOffClock) HandOff(string) {
	c.mu.Lock()
	c.atHandOff = append(c.atHandOff, c.started)
	c.mu.Unlock()
}

func (c *handOffClock) Due(time.Time) func() {
	return func() {
		c.mu.Lock()
		c.atTakeEnd = append(c.atTakeEnd, c.active)
		c.mu.Unlock()
	}
}
