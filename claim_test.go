package uncomplicated_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Hand-offs are claims: a release gives the oldest waiter the lock for a
// short claim only, which the waiter's Client turns into the whole lease
// half-way through, unless a Refresh does it first.

// claim is the claim of a waiter with the test's patience and ticks: a
// second, below its expiry of three ticks and 100 ms. waiterTick is its
// tick: patience/ticks, but at most a second.
const (
	claim      = time.Second
	waiterTick = time.Second
)

// handOff makes a hold of p on "job" on env's Client and a waiter for it
// on another Client with opts, queued, and releases the hold: the waiter
// gets it. It returns the waiter's fence.
func handOff(t *testing.T, env *uncomplicatedtest.Env, p primitive, opts ...uncomplicated.Option) uint64 {
	t.Helper()
	h := p.take(t, env.Client, "job")
	waiter := env.NewClient(append([]uncomplicated.Option{uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks)}, opts...)...)
	done := make(chan waited, 1)
	go func() {
		f, err := p.wait(context.Background(), waiter, "job")
		done <- waited{f, err}
	}()
	env.AwaitWaiters(1)
	if err := h.release(context.Background()); err != nil {
		t.Fatalf("release = %v", err)
	}
	got := recv(t, done)
	if got.err != nil || got.fence <= h.fence {
		t.Fatalf("the waiter's acquisition = fence %d, %v; want a hand-off above %d", got.fence, got.err, h.fence)
	}
	return got.fence
}

// leaseLeft is how long the only holder of "job" has left in Redis.
func leaseLeft(t *testing.T, env *uncomplicatedtest.Env) time.Duration {
	t.Helper()
	info, err := inspect.Lock(context.Background(), env.Client, "lock:job")
	if err != nil || len(info.Holders) != 1 {
		t.Fatalf("Inspect = %+v, %v; want one holder", info, err)
	}
	return info.Holders[0].LeaseLeft
}

// A hand-off holds the lock for the claim, until the Client takes it
// half-way through: then the whole lease restarts.
func TestClaim_takenHalfWay(t *testing.T) {
	const lease = 10 * time.Second
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			env := uncomplicatedtest.New(t)
			handOff(t, env, p, uncomplicated.WithLease(lease))
			if left := leaseLeft(t, env); left != claim {
				t.Fatalf("lease left after the hand-off = %v; want the claim, %v", left, claim)
			}
			env.Advance(claim/2 - time.Millisecond)
			if left := leaseLeft(t, env); left != claim/2+time.Millisecond {
				t.Fatalf("lease left before the take = %v; want %v", left, claim/2+time.Millisecond)
			}
			env.Advance(time.Millisecond)
			if left := leaseLeft(t, env); left != lease {
				t.Errorf("lease left after the take = %v; want the whole lease, %v", left, lease)
			}
			env.Advance(lease - time.Millisecond)
			if left := leaseLeft(t, env); left != time.Millisecond {
				t.Errorf("lease left a lease after the take = %v; want 1ms", left)
			}
		})
	}
}

// A waiter that is paused while it waits, and is handed the lock, holds it
// up only for its claim: the next waiter gets it by its own attempt within
// a claim and a tick of the release. The paused waiter is a queue entry
// copied from a real waiter, which then gave up, on a channel that a
// connection subscribes to but never reads.
func TestClaim_pausedWaiter(t *testing.T) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			env := uncomplicatedtest.New(t)
			ctx := context.Background()
			h := p.take(t, env.Client, "job")
			queue, entries := queueKeyOf(p, "lock:job"), entriesKeyOf(p, "lock:job")
			opts := []uncomplicated.Option{uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks)}

			wctx, cancel := context.WithCancel(ctx)
			gaveUp := make(chan error, 1)
			go func() { _, err := p.wait(wctx, env.NewClient(opts...), "job"); gaveUp <- err }()
			env.AwaitWaiters(1)
			tokens, _ := env.Redis.List(queue)
			if len(tokens) != 1 {
				t.Fatalf("queue %s = %q; want the waiter", queue, tokens)
			}
			fields := strings.Fields(env.Redis.HGet(entries, tokens[0])) // its deadline, then its entry
			cancel()
			recv(t, gaveUp)

			paused := env.Redis.Addr()
			sub := redis.PubSubConn{Conn: dial(t, paused)}
			if err := sub.Subscribe("paused-channel"); err != nil {
				t.Fatal(err)
			}
			fields[len(fields)-1] = "paused-channel"
			if _, err := env.Redis.Lpush(queue, "paused-token"); err != nil {
				t.Fatal(err)
			}
			env.Redis.HSet(entries, "paused-token", strings.Join(fields, " "))

			done := make(chan waited, 1)
			go func() {
				f, err := p.wait(ctx, env.NewClient(opts...), "job")
				done <- waited{f, err}
			}()
			env.AwaitWaiters(1)
			released := env.Clock.Now()
			if err := h.release(ctx); err != nil {
				t.Fatalf("release = %v", err)
			}
			env.Advance(claim - time.Millisecond)
			if n := env.Waiters(); n != 1 {
				t.Fatalf("Waiters() while the paused waiter's claim lasts = %d; want 1", n)
			}
			env.Advance(waiterTick + time.Millisecond)
			got := recv(t, done)
			if got.err != nil {
				t.Fatalf("the live waiter's acquisition = %v", got.err)
			}
			if waited := env.Clock.Since(released); waited > claim+waiterTick {
				t.Errorf("the live waiter got the lock %v after the release; want at most a claim and a tick, %v", waited, claim+waiterTick)
			}
		})
	}
}

// queueKeyOf is the key of the queue of p's lock name.
func queueKeyOf(p primitive, name string) string {
	switch p.name {
	case "RWMutex":
		return "lock:rwqueue:{" + name + "}"
	case "Semaphore":
		return "lock:semqueue:{" + name + "}"
	}
	return "lock:queue:{" + name + "}"
}

// entriesKeyOf is the key of the entries of p's queue for lock name.
func entriesKeyOf(p primitive, name string) string {
	switch p.name {
	case "RWMutex":
		return "lock:rwentries:{" + name + "}"
	case "Semaphore":
		return "lock:sementries:{" + name + "}"
	}
	return "lock:entries:{" + name + "}"
}

// dial returns a connection to addr, closed when the test ends.
func dial(t *testing.T, addr string) redis.Conn {
	t.Helper()
	c, err := redis.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A Refresh takes the claim: the whole lease restarts, and the Client has
// nothing left to take.
func TestClaim_takenByRefresh(t *testing.T) {
	const lease = time.Hour
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	a := mustNamed(t, env.Client, "job")
	mustLock(t, a)
	b := mustNamed(t, env.NewClient(uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks), uncomplicated.WithLease(lease)), "job")
	done := lockAsync(ctx, b)
	env.AwaitWaiters(1)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	env.Advance(claim / 4)
	if err := b.Refresh(ctx); err != nil {
		t.Fatalf("Refresh() = %v", err)
	}
	if left := leaseLeft(t, env); left != lease {
		t.Errorf("lease left after Refresh = %v; want %v", left, lease)
	}
	token, _ := env.Redis.Get(b.Name())
	env.Advance(claim)
	if now, _ := env.Redis.Get(b.Name()); now != token {
		t.Errorf("token after the claim's half-way point = %q; want %q, untaken again", now, token)
	}
}
