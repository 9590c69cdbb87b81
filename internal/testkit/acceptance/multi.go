package acceptance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/orders"
)

// multiNoDeadlock: two Clients lock the same three locks, listed in
// opposite orders, 200 times each, and never deadlock nor overlap; on a
// Cluster of three masters the locks live on different masters.
func multiNoDeadlock(t *testing.T, d Deployment) {
	const rounds = 200
	r := newRig(t, d)
	opt := uncomplicated.WithTimeout(5 * time.Second)
	spread := spreadOrders(t, r.client(opt))
	names := make([]string, len(spread))
	tallies := make([]tally, len(spread))
	for i, o := range spread {
		names[i] = mustNew(t, r.client(opt), o).Name()
		tallies[i] = tally{name: names[i], fences: map[uint64]bool{}}
	}
	var wg sync.WaitGroup
	for w := range 2 {
		c := r.client(opt)
		var ms []*uncomplicated.Mutex
		for _, o := range spread {
			ms = append(ms, mustNew(t, c, o))
		}
		if w == 1 {
			slices.Reverse(ms)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := uncomplicated.DoAll(ctx, ms, func(context.Context) error {
					for _, m := range ms {
						i := slices.Index(names, m.Name())
						leave := tallies[i].enter(m.Fence())
						defer leave()
					}
					time.Sleep(100 * time.Microsecond)
					return nil
				})
				cancel()
				if err != nil {
					t.Errorf("worker %d: DoAll() = %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range tallies {
		x := &tallies[i]
		if x.overlaps.Load() != 0 || x.falls.Load() != 0 || len(x.fences) != 2*rounds {
			t.Errorf("%s: overlaps = %d, fences not above the last = %d, distinct fences = %d; want 0, 0, %d",
				x.name, x.overlaps.Load(), x.falls.Load(), len(x.fences), 2*rounds)
		}
	}
}

// multiKeptAlive: while LockAll waits for a busy lock, the lock it has
// already taken outlives its lease, with its fence.
func multiKeptAlive(t *testing.T, d Deployment) {
	const lease = 600 * time.Millisecond
	r := newRig(t, d)
	busy := mustNew(t, r.client(), orders.Order{N: 1})
	mustLock(t, busy)
	c := r.client(uncomplicated.WithLease(lease))
	first, second := mustNew(t, c, orders.Order{N: 0}), mustNew(t, c, orders.Order{N: 1})
	done := make(chan error, 1)
	go func() { done <- uncomplicated.LockAll(context.Background(), second, first) }()
	eventually(t, "holding the first lock", func() bool { return first.Fence() != 0 })
	fence := first.Fence()
	time.Sleep(3 * lease)
	if err := busy.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("LockAll() = %v", err)
	}
	for _, m := range []*uncomplicated.Mutex{first, second} {
		if held, err := m.Held(context.Background()); !held || err != nil {
			t.Errorf("%s: Held() = %v, %v after LockAll; want true, nil", m.Name(), held, err)
		}
	}
	if got := first.Fence(); got != fence {
		t.Errorf("first lock's Fence() = %d after the wait; want %d", got, fence)
	}
	if err := uncomplicated.UnlockAll(context.Background(), first, second); err != nil {
		t.Errorf("UnlockAll() = %v", err)
	}
	for _, m := range []*uncomplicated.Mutex{first, second} {
		if n := r.number(m.Name(), "EXISTS", m.Name()); n != 0 {
			t.Errorf("%s still in Redis after UnlockAll", m.Name())
		}
	}
}

// multiNotStale: while LockAll waits, a lock it holds without a lease is
// refreshed every third of its timeout, so that a waiter that would take
// over a stuck holder finds it busy.
func multiNotStale(t *testing.T, d Deployment) {
	const timeout = 500 * time.Millisecond
	r := newRig(t, d)
	busy := mustNew(t, r.client(), orders.Order{N: 1})
	mustLock(t, busy)
	opts := []uncomplicated.Option{uncomplicated.WithLease(0), uncomplicated.WithTimeout(timeout)}
	c := r.client(opts...)
	first, second := mustNew(t, c, orders.Order{N: 0}), mustNew(t, c, orders.Order{N: 1})
	done := make(chan error, 1)
	go func() { done <- uncomplicated.LockAll(context.Background(), first, second) }()
	eventually(t, "holding the first lock", func() bool { return first.Fence() != 0 })
	taker := mustNew(t, r.client(append(opts, uncomplicated.WithTakeOver(true))...), orders.Order{N: 0})
	ctx, cancel := context.WithTimeout(context.Background(), 4*timeout)
	defer cancel()
	if err := taker.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a taker's Lock() while LockAll waits = %v; want it to find the lock busy until its ctx ends", err)
	}
	if err := busy.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("LockAll() = %v", err)
	}
	if err := uncomplicated.UnlockAll(context.Background(), first, second); err != nil {
		t.Errorf("UnlockAll() = %v", err)
	}
}

// multiFailedNoneHeld: a LockAll that gives up leaves none of its locks
// held, in the process or in Redis.
func multiFailedNoneHeld(t *testing.T, d Deployment) {
	r := newRig(t, d)
	busy := mustNew(t, r.client(), orders.Order{N: 2})
	mustLock(t, busy)
	c := r.client()
	ms := mutexes(t, c, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := uncomplicated.LockAll(ctx, ms...)
	if !errors.Is(err, uncomplicated.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockAll() with order 2 busy = %v; want ErrNotObtained and DeadlineExceeded", err)
	}
	for _, m := range ms[:2] {
		if f := m.Fence(); f != 0 {
			t.Errorf("%s: Fence() = %d after a failed LockAll; want 0", m.Name(), f)
		}
		if n := r.number(m.Name(), "EXISTS", m.Name()); n != 0 {
			t.Errorf("%s still in Redis after a failed LockAll", m.Name())
		}
	}
	mustLock(t, ms[0]) // free in this process too
	if err := ms[0].Unlock(context.Background()); err != nil {
		t.Error(err)
	}
}

// spreadOrders returns three orders whose locks, on c, fall in different
// thirds of the hash slots: on different masters of a Cluster that splits
// the slots evenly among three.
func spreadOrders(t *testing.T, c *uncomplicated.Client) []orders.Order {
	t.Helper()
	var spread []orders.Order
	seen := map[int]bool{}
	for n := int64(0); len(spread) < 3; n++ {
		o := orders.Order{N: n}
		third := hashslot.Of(mustNew(t, c, o).Name()) * 3 / 16384
		if !seen[third] {
			seen[third] = true
			spread = append(spread, o)
		}
	}
	return spread
}
