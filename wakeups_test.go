package uncomplicated_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
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
	if n := env.Redis.CommandCount() - before; n != 7 {
		t.Errorf("%d Redis commands to join the queue; want 7 (EVALSHA, TIME, the SET that finds the lock taken, RPUSH, SET of its key, PTTL and PEXPIRE of the new queue)", n)
	}
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, again); err != nil {
		t.Fatal(err)
	}
}

// On a real server: the listening connection, its loss and its absence.

// subscribers counts the server's connections that have subscriptions.
func (r *rig) subscribers() int {
	r.t.Helper()
	if ids := r.subscriberIDs(); ids != "" {
		return strings.Count(ids, ",") + 1
	}
	return 0
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

// queueLen is the length of m's queue of waiters.
func (r *rig) queueLen(m *uncomplicated.Mutex) int {
	return r.llen(r.prefix + ":queue:{" + m.Name() + "}")
}

// Waiters on many locks share their Client's one listening connection, and
// all get their lock when it is released.
func TestRedis_oneListeningConnection(t *testing.T) {
	defer uncomplicated.SetPinAfter(time.Hour)() // no restart watch's listening connection: this test counts them
	const locks = 200
	r := newRig(t)
	holders, waiters := r.client(), r.client()
	var held []*uncomplicated.Mutex
	var dones []<-chan error
	for i := range locks {
		h := mustNew(t, holders, Order{int64(i)})
		mustLock(t, h)
		held = append(held, h)
		dones = append(dones, lockAsync(context.Background(), mustNew(t, waiters, Order{int64(i)})))
	}
	eventually(t, "every waiter in its queue", func() bool {
		for _, h := range held {
			if r.queueLen(h) != 1 {
				return false
			}
		}
		return true
	})
	if n := r.subscribers(); n != 1 {
		t.Errorf("%d connections with subscriptions; want 1", n)
	}
	for _, h := range held {
		if err := h.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range dones {
		if err := recv(t, d); err != nil {
			t.Errorf("waiter %d: Lock() = %v", i, err)
		}
	}
}

// A killed listening connection is made again and subscribed again, and
// the waiter in the queue still gets the lock handed over.
func TestRedis_listenerReconnects(t *testing.T) {
	defer uncomplicated.SetPinAfter(time.Hour)() // no restart watch's listening connection: this test counts them
	r := newRig(t)
	holder := mustNew(t, r.client(), Order{1})
	mustLock(t, holder)
	waiter := mustNew(t, r.client(uncomplicated.WithTimeout(time.Hour)), Order{1})
	done := lockAsync(context.Background(), waiter)
	eventually(t, "the waiter in the queue", func() bool { return r.queueLen(holder) == 1 })

	r.do("CLIENT", "KILL", "TYPE", "pubsub")
	eventually(t, "subscribed again", func() bool { return r.subscribers() == 1 })
	held := holder.Fence()
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	if f := waiter.Fence(); !rising(held, f) {
		t.Errorf("Fence() = %d; want above the holder's, %d", f, held)
	}
}

// deafPool's connections cannot receive: a Client on it never listens.
type deafPool struct{ *redis.Pool }

func (p deafPool) GetContext(ctx context.Context) (redis.Conn, error) {
	c, err := p.Pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return deafConn{c.(redis.ConnWithContext)}, nil
}

type deafConn struct{ redis.ConnWithContext }

// Close ends the connection underneath, which the pool then drops, as
// the listener's close does with a connection that can receive.
func (c deafConn) Close() error {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	_, _ = c.ConnWithContext.ReceiveContext(ctx) // redigo ends a connection whose ctx has expired
	return c.ConnWithContext.Close()
}

func (deafConn) ReceiveContext(context.Context) (any, error) { return nil, errors.New("deaf") }

// Without wake-ups, waiters never join a queue and get the lock on their
// ticks.
func TestRedis_ticksWithoutWakeups(t *testing.T) {
	r := newRig(t)
	holder := mustNew(t, r.client(), Order{1})
	mustLock(t, holder)
	deaf := uncomplicated.NewClient(redigo.New(deafPool{r.pool}), uncomplicated.WithPrefix(r.prefix),
		uncomplicated.WithTimeout(time.Second), uncomplicated.WithTicks(20))
	t.Cleanup(func() { _ = deaf.Close() })
	waiter := mustNew(t, deaf, Order{1})
	done := lockAsync(context.Background(), waiter)
	time.Sleep(200 * time.Millisecond) // some ticks
	if n := r.queueLen(holder); n != 0 {
		t.Errorf("queue length %d; want 0 (not listening, so not queued)", n)
	}
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("Lock() = %v", err)
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

// Close ends the listening connection.
func TestRedis_closeStopsListening(t *testing.T) {
	defer uncomplicated.SetPinAfter(time.Hour)() // no restart watch's listening connection: this test counts them
	r := newRig(t)
	holder := mustNew(t, r.client(), Order{1})
	mustLock(t, holder)
	c := r.client()
	done := lockAsync(context.Background(), mustNew(t, c, Order{1}))
	eventually(t, "listening", func() bool { return r.subscribers() == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); !errors.Is(err, uncomplicated.ErrClosed) {
		t.Errorf("Lock() = %v; want ErrClosed", err)
	}
	eventually(t, "no longer listening", func() bool { return r.subscribers() == 0 })
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

// A pool whose connections time out reads keeps one listening connection:
// its PINGs come more often than the timeout.
func TestRedis_listenerOutlivesReadTimeout(t *testing.T) {
	defer uncomplicated.SetPinAfter(time.Hour)() // no restart watch's listening connection: this test counts them
	r := newRig(t)
	pool := &redis.Pool{MaxIdle: 8, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", redistest.Shared(t).Addr, redis.DialReadTimeout(1500*time.Millisecond))
	}}
	t.Cleanup(func() { _ = pool.Close() })
	holder := mustNew(t, r.client(), Order{1})
	mustLock(t, holder)
	c := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithPrefix(r.prefix), uncomplicated.WithTimeout(time.Hour))
	t.Cleanup(func() { _ = c.Close() })
	done := lockAsync(context.Background(), mustNew(t, c, Order{1}))
	eventually(t, "listening", func() bool { return r.subscribers() == 1 })
	before := r.subscriberIDs()
	time.Sleep(4 * time.Second)
	if after := r.subscriberIDs(); after != before {
		t.Errorf("listening connection %s became %s; want it kept", before, after)
	}
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
}

// subscriberIDs lists the ids of the connections with subscriptions.
func (r *rig) subscriberIDs() string {
	r.t.Helper()
	list, err := redis.String(r.do("CLIENT", "LIST"), nil)
	if err != nil {
		r.t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " flags=P ") { // SUBSCRIBE or SSUBSCRIBE
			ids = append(ids, strings.Fields(line)[0])
		}
	}
	return strings.Join(ids, ",")
}
