package uncomplicated_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// On a real server: the listening connection, its loss and its absence.

// subscribers counts the server's connections that have subscriptions.
func (r *rig) subscribers() int {
	r.t.Helper()
	if ids := r.subscriberIDs(); ids != "" {
		return strings.Count(ids, ",") + 1
	}
	return 0
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

// Goroutines of one Client that pass a lock between them, each with a new
// Mutex per call, get it handed over in the release's reply: the waiter
// is woken in-process, and Redis publishes nothing (see
// internal/lua/queue_hand.lua's offer). No two hold it at once.
func TestRedis_handOffWithinOneClientPublishesNothing(t *testing.T) {
	s := redistest.Start(t)
	rec := &callRecorder{}
	c := uncomplicated.NewClient(redigo.New(s.Pool(t)), uncomplicated.WithObserver(rec))
	t.Cleanup(func() { _ = c.Close() })
	const goroutines, each = 6, 40
	var holding atomic.Int32
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				m := mustNew(t, c, Order{7})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := m.Lock(ctx)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				if holding.Add(1) != 1 {
					t.Error("two goroutines hold the lock at once")
				}
				time.Sleep(200 * time.Microsecond)
				holding.Add(-1)
				if err := m.Unlock(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	handedOff := 0
	rec.mu.Lock()
	for _, call := range rec.calls {
		for _, e := range *call {
			if strings.HasPrefix(e, "Acquired "+string(observe.HandedOff)) {
				handedOff++
			}
		}
	}
	rec.mu.Unlock()
	if handedOff < goroutines*each/4 {
		t.Errorf("%d of %d acquisitions handed off; want a quarter at least", handedOff, goroutines*each)
	}
	// The listening connection's probe (see link.Wakeups) is the one SPUBLISH.
	if n := commandCalls(t, s, "spublish") + commandCalls(t, s, "publish"); n != 1 {
		t.Errorf("%d messages published; want only the listening connection's probe: every waiter is of the releasing Client", n)
	}
}
