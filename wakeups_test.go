package uncomplicated_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Wake-ups on the mock clock: a release hands the lock to the oldest
// waiter in the queue, with no time passing.

// queue returns the tokens of m's waiters in Redis, oldest first.
func queue(t *testing.T, env *uncomplicatedtest.Env, m *uncomplicated.Mutex) []string {
	t.Helper()
	key := "lock:queue:{" + m.Name() + "}"
	if !env.Redis.Exists(key) {
		return nil
	}
	entries, err := env.Redis.List(key)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// waitFor starts m.Lock in a goroutine and returns once it waits in the
// queue, so that waiters started one after another queue in that order.
func waitFor(t *testing.T, env *uncomplicatedtest.Env, ctx context.Context, m *uncomplicated.Mutex) <-chan error {
	t.Helper()
	before, waiters := len(queue(t, env, m)), env.Waiters()
	done := lockAsync(ctx, m)
	env.AwaitWaiters(waiters + 1)
	if n := len(queue(t, env, m)); n != before+1 {
		t.Fatalf("%d waiters in the queue; want %d", n, before+1)
	}
	return done
}

func TestWakeup_handOffWithoutTicks(t *testing.T) {
	env, holder, waiter := stuck(t)
	done := waitFor(t, env, context.Background(), waiter)
	start, held := env.Clock.Now(), holder.Fence()

	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if n := env.Waiters(); n != 0 {
		t.Errorf("Waiters() = %d right after the Unlock; want 0 (handed over)", n)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("Lock() = %v; want nil", err)
	}
	if f := waiter.Fence(); !rising(held, f) {
		t.Errorf("Fence() = %d; want above the holder's, %d", f, held)
	}
	if !env.Clock.Now().Equal(start) {
		t.Errorf("the clock moved %v; want no tick needed", env.Clock.Now().Sub(start))
	}
	if q := queue(t, env, waiter); q != nil {
		t.Errorf("queue = %q; want empty", q)
	}
	if err := waiter.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock() by the new holder = %v", err)
	}
}

func TestWakeup_firstComeFirstServed(t *testing.T) {
	env, holder, _ := stuck(t)
	var waiters []*uncomplicated.Mutex
	var dones []<-chan error
	for range 3 {
		m := mustNew(t, env.NewClient(), Order{1})
		waiters = append(waiters, m)
		dones = append(dones, waitFor(t, env, context.Background(), m))
	}
	prev, fence := holder, holder.Fence()
	for i, m := range waiters {
		if err := prev.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock() = %v", err)
		}
		if err := recv(t, dones[i]); err != nil {
			t.Fatalf("waiter %d: Lock() = %v", i, err)
		}
		if n, want := env.Waiters(), len(waiters)-1-i; n != want {
			t.Errorf("after hand-off %d: Waiters() = %d; want %d", i, n, want)
		}
		if f := m.Fence(); !rising(fence, f) {
			t.Errorf("waiter %d: Fence() = %d; want above %d", i, f, fence)
		}
		prev, fence = m, m.Fence()
	}
}

// A waiter that gives up leaves the queue; a release then skips it.
func TestWakeup_cancelledWaiterLeaves(t *testing.T) {
	env, holder, _ := stuck(t)
	quitter := mustNew(t, env.NewClient(), Order{1})
	ctx, cancel := context.WithCancel(context.Background())
	quit := waitFor(t, env, ctx, quitter)
	next := mustNew(t, env.NewClient(), Order{1})
	done := waitFor(t, env, context.Background(), next)

	cancel()
	if err := recv(t, quit); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock() = %v; want context.Canceled", err)
	}
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("next waiter's Lock() = %v; want nil", err)
	}
	if q := queue(t, env, next); q != nil {
		t.Errorf("queue = %q; want empty", q)
	}
}

// A waiter whose process is gone (its entry stays, and has not expired
// yet, but nothing listens on its channel) is skipped by the release.
func TestWakeup_deadWaiterSkipped(t *testing.T) {
	env, holder, _ := stuck(t)
	key := "lock:queue:{" + holder.Name() + "}"
	if _, err := env.Redis.Push(key, "dead"); err != nil {
		t.Fatal(err)
	}
	if err := env.Redis.Set(key+":dead", "x 0 3600000 1 lock:wake:{"+holder.Name()+"}:gone"); err != nil {
		t.Fatal(err)
	}
	next := mustNew(t, env.NewClient(), Order{1})
	done := waitFor(t, env, context.Background(), next)
	if n := len(queue(t, env, next)); n != 2 {
		t.Fatalf("%d entries in the queue; want 2", n)
	}
	held := holder.Fence()
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("next waiter's Lock() = %v; want nil", err)
	}
	if f := next.Fence(); !rising(held, f) {
		t.Errorf("Fence() = %d; want above the holder's, %d", f, held)
	}
	if q := queue(t, env, next); q != nil {
		t.Errorf("queue = %q; want empty", q)
	}
}

// A waiter stopped by Close leaves the queue on its way out.
func TestWakeup_closedClientLeaves(t *testing.T) {
	env, _, _ := stuck(t)
	closing := env.NewClient()
	m := mustNew(t, closing, Order{1})
	quit := waitFor(t, env, context.Background(), m)
	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, quit); !errors.Is(err, uncomplicated.ErrClosed) {
		t.Fatalf("Lock() on the closed Client = %v; want ErrClosed", err)
	}
	if q := queue(t, env, m); q != nil {
		t.Errorf("queue = %q; want empty", q)
	}
}

// A waiter that takes a stuck lock over leaves the queue, and the next
// release hands the lock to the waiter behind it.
func TestWakeup_takeOverLeavesQueue(t *testing.T) {
	env, _, taker := stuck(t, uncomplicated.WithTakeOver(true))
	done := waitFor(t, env, context.Background(), taker)
	env.Advance(patience)
	if err := recv(t, done); err != nil {
		t.Fatalf("Lock() = %v; want taken over", err)
	}
	if q := queue(t, env, taker); q != nil {
		t.Fatalf("queue after take-over = %q; want empty", q)
	}
	next := mustNew(t, env.NewClient(), Order{1})
	nextDone := waitFor(t, env, context.Background(), next)
	if err := taker.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if err := recv(t, nextDone); err != nil {
		t.Fatalf("next waiter's Lock() = %v", err)
	}
}

// A lock that is never contended never subscribes; a waiter subscribes
// before it joins the queue, and its Client keeps the subscription, so that
// its next wait joins the queue on its first attempt.
func TestWakeup_subscriptions(t *testing.T) {
	defer uncomplicated.SetPinAfter(time.Hour)() // no restart watch's listening connection: this test counts them
	env, holder, waiter := stuck(t)
	free := mustNew(t, env.Client, Order{2})
	mustLock(t, free)
	if err := free.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ch := env.Redis.PubSubChannels(""); len(ch) != 0 {
		t.Fatalf("channels after an uncontended Lock = %q; want none", ch)
	}

	done := waitFor(t, env, context.Background(), waiter)
	ch := env.Redis.PubSubChannels("")
	if len(ch) != 1 || !strings.HasPrefix(ch[0], "lock:wake:{"+waiter.Name()+"}:") {
		t.Fatalf("channels of a waiter = %q; want its lock's, with the lock's hash tag", ch)
	}
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	recv(t, done)
	if err := waiter.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustLock(t, holder)
	if got := env.Redis.PubSubChannels(""); len(got) != 1 {
		t.Fatalf("channels once the waiter is done = %q; want it kept", got)
	}

	// Waiting again: the first attempt joins the queue (one attempt, then
	// asleep), as the subscription is already confirmed.
	before := env.Redis.CommandCount()
	again := lockAsync(context.Background(), waiter)
	env.AwaitWaiters(1)
	if n := env.Redis.CommandCount() - before; n != 10 {
		t.Errorf("%d Redis commands to join the queue; want 10 (EVALSHA, TIME, the SET that finds the lock taken, RPUSH, HSET of its entry, PTTL and PEXPIRE of the new queue and of its entries, the SET that marks the holder's value)", n)
	}
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, again); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond for up to ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: not %s", what)
		}
	}
}

// A Client keeps a bounded number of subscriptions once their waiters are
// gone, the least recently used going first.
func TestWakeup_idleSubscriptionsBounded(t *testing.T) {
	defer uncomplicated.SetPinAfter(time.Hour)() // no restart watch's listening connection: this test counts them
	defer uncomplicated.SetMaxIdleChannels(2)()
	env := uncomplicatedtest.New(t)
	holders, waiters := env.NewClient(), env.NewClient()
	for i := range 4 {
		h := mustNew(t, holders, Order{int64(i)})
		mustLock(t, h)
		w := mustNew(t, waiters, Order{int64(i)})
		done := waitFor(t, env, context.Background(), w)
		if err := h.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, done); err != nil {
			t.Fatal(err)
		}
		if err := w.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	eventually(t, "two subscriptions left", func() bool {
		got = env.Redis.PubSubChannels("")
		return len(got) == 2
	})
	for _, ch := range got {
		if !strings.Contains(ch, "Order:2}") && !strings.Contains(ch, "Order:3}") {
			t.Errorf("kept %q; want the channels of orders 2 and 3, the latest", ch)
		}
	}
}

// A waiter stopped by Close while a release hands it the lock releases it
// again, so that the next waiter gets it.
func TestWakeup_closeDuringHandOff(t *testing.T) {
	for i := range 20 {
		env, holder, _ := stuck(t)
		closing := env.NewClient()
		quitter := mustNew(t, closing, Order{1})
		quit := waitFor(t, env, context.Background(), quitter)
		next := mustNew(t, env.NewClient(), Order{1})
		done := waitFor(t, env, context.Background(), next)

		unlocked := make(chan error, 1)
		go func() { unlocked <- holder.Unlock(context.Background()) }()
		if err := closing.Close(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, unlocked); err != nil {
			t.Fatalf("round %d: Unlock() = %v", i, err)
		}
		if err := recv(t, quit); err == nil { // the hand-off won the race: pass the lock on
			if err := quitter.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrClosed) {
				t.Fatalf("round %d: Unlock() after Close = %v; want ErrClosed", i, err)
			}
		}
		if err := recv(t, done); err != nil {
			t.Fatalf("round %d: next waiter's Lock() = %v; want the lock", i, err)
		}
	}
}

// A release that hands the lock to a waiter of its own Client yields to
// it: on a process with more runnable goroutines than CPUs, the new holder
// runs before the releaser goes on, rather than after every goroutine
// queued for a CPU. With one CPU, the waiter's Lock has returned by the
// time Unlock does (nearly always: Go's scheduler looks at its global
// queue, where the releaser goes, now and then); without the yield, never.
func TestWakeup_releaserYieldsToTheWaiterItWoke(t *testing.T) {
	env := uncomplicatedtest.New(t)
	const handOffs = 20
	first := 0
	for range handOffs {
		holder, waiter := mustNew(t, env.Client, Order{2}), mustNew(t, env.Client, Order{2})
		mustLock(t, holder)
		done := waitFor(t, env, context.Background(), waiter)
		procs := runtime.GOMAXPROCS(1)
		err := holder.Unlock(context.Background())
		select {
		case <-done:
			first++
			done = nil
		default:
		}
		runtime.GOMAXPROCS(procs)
		if err != nil {
			t.Fatalf("Unlock() = %v", err)
		}
		if done != nil {
			if err := recv(t, done); err != nil {
				t.Fatalf("Lock() = %v", err)
			}
		}
		if err := waiter.Unlock(context.Background()); err != nil {
			t.Fatalf("waiter's Unlock() = %v", err)
		}
	}
	if first < handOffs*3/4 {
		t.Errorf("the waiter's Lock had returned when Unlock did in %d of %d hand-offs; want at least %d", first, handOffs, handOffs*3/4)
	}
}

// A hold that took the lock free releases on the lock's key alone (an
// EVALSHA that runs GET and DEL), while nobody queued behind it; once a
// waiter has, that release finds the waiter's mark and the full release
// hands the lock on. A hold that a release handed over releases with the
// full release at once.
func TestRelease_quickWhileNobodyQueued(t *testing.T) {
	env, holder, waiter := stuck(t)
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustLock(t, holder)
	before := env.Redis.CommandCount()
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := env.Redis.CommandCount() - before; n != 3 {
		t.Errorf("%d Redis commands to release a lock nobody waits for; want 3 (EVALSHA, GET, DEL)", n)
	}

	mustLock(t, holder)
	done := waitFor(t, env, context.Background(), waiter)
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("the waiter's Lock() = %v; want the lock handed over", err)
	}
	before = env.Redis.CommandCount()
	if err := waiter.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := env.Redis.CommandCount() - before; n != 4 {
		t.Errorf("%d Redis commands to release a lock handed over; want 4 (EVALSHA, GET, LPOP, DEL), the full release alone", n)
	}
}
