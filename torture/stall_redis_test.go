package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// TestMutex_staleQueueEntry guards against the stall the torture found
// after restart, reset and blackhole faults (fixed on main by 2f2f5f9): a
// waiter that gives up while Redis is unreachable leaves its queue entry,
// and since its Client still listens on the lock, the next Unlock handed
// the lock to nobody for a whole lease. Its entry now expires a few of its
// ticks after its last attempt, and the queue with it, so that nothing of
// it is left when Redis is reachable again. It takes about 10 s.
func TestMutex_staleQueueEntry(t *testing.T) {
	const lease = 2 * time.Second
	srv, p, a, b := proxied(t, uncomplicated.WithTimeout(lease), uncomplicated.WithTakeOver(true))
	ctx := context.Background()

	holder, _ := uncomplicated.New(a, uncomplicated.Named("k"), uncomplicated.WithLease(time.Minute)) // outlasts the outage
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter, _ := uncomplicated.New(b, uncomplicated.Named("k"))
	wctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(wctx) }()
	awaitQueue(t, srv.Addr, 1) // the waiter is queued
	// Redis becomes unreachable for the waiter: it gives up at its
	// deadline, and its clean-up cannot reach Redis either.
	p.Blackhole(true)
	if err := <-done; !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Fatalf("waiter Lock() = %v; want ErrNotObtained", err)
	}
	time.Sleep(6 * time.Second) // past the clean-up's 5 s bound
	p.Reset()
	p.Blackhole(false)
	time.Sleep(2500 * time.Millisecond) // b's listening connection is back

	awaitQueue(t, srv.Addr, 0) // the entry the first one left expired, and the queue
	// A second waiter of the same Client queues: the Client listens on the
	// lock again.
	second, _ := uncomplicated.New(b, uncomplicated.Named("k"))
	go func() { done <- second.Lock(ctx) }()
	awaitQueue(t, srv.Addr, 1)

	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := <-done; err != nil {
		t.Fatalf("second waiter Lock() = %v; want nil", err)
	}
	if wait := time.Since(start); wait > lease/2 {
		t.Errorf("the queued waiter got the lock %v after Unlock (fence %d); want at once: "+
			"the Unlock handed it to the gone waiter's entry, for its whole lease", wait, second.Fence())
	}
	_ = second.Unlock(ctx)
}

// proxied starts a redis-server and a fault proxy in front of it, and
// returns them with two Clients with opts: a, the holder, talks to the
// server directly; b, the waiter, through the proxy. All stop at the
// test's end.
func proxied(t *testing.T, opts ...uncomplicated.Option) (srv *redistest.Server, p *redistest.Proxy, a, b *uncomplicated.Client) {
	t.Helper()
	requireRedis(t)
	srv = redistest.Start(t)
	p, err := redistest.NewProxy(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	direct, viaProxy := newPool(srv.Addr, time.Second), newPool(p.Addr(), time.Second)
	a, b = uncomplicated.NewClient(redigo.New(direct), opts...), uncomplicated.NewClient(redigo.New(viaProxy), opts...)
	t.Cleanup(func() {
		_ = b.Close()
		_ = a.Close()
		_ = viaProxy.Close()
		_ = direct.Close()
		p.Close()
	})
	return srv, p, a, b
}

// awaitQueue waits until the lock k's queue has n entries.
func awaitQueue(t *testing.T, addr string, n int) {
	t.Helper()
	c, err := redis.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got, _ := redis.Int(c.Do("LLEN", "lock:queue:{lock:k}")); got == n {
			return
		}
	}
	t.Fatalf("queue never had %d entries", n)
}
