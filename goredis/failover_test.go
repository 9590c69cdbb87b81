package goredis_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

// A replica takes over from its master during a run, by CLUSTER FAILOVER
// or SENTINEL FAILOVER: the restart watch checks the holds on the node
// that is new to them, and locks go on being acquired and released.

// The key of a hold vanishes on its master, and the change reaches the
// replica; no call of the holder notices, and the restart watch, which has
// already seen the master, does not look. Once the replica has taken over,
// the watch finds a node it has not seen, checks the hold and closes its
// Lost channel. Meanwhile and after, goroutines lock and unlock.
func TestCluster_failover(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	rdb := clusterClient(t, cl)
	c := goredis.NewClient(rdb, uncomplicated.WithTimeout(2*time.Second))
	t.Cleanup(func() { _ = c.Close() })
	ms := onEachMaster(t, cl, c, "failover")
	held := onEachMaster(t, cl, c, "held")[0]
	replica := cl.Replicas[0] // Masters[0]'s
	failover(t, rdb, ms, held, func() error { return cl.Failover(replica) })
	replicated(t, c, ms[0])
	if owner := ownerOf(t, cl, held.Name()); owner != replica {
		t.Errorf("the lock's slot is on %s after the failover; want the replica %s", owner.Addr, replica.Addr)
	}
}

// The same through Sentinel: the master and its replica swap roles.
func TestSentinel_failover(t *testing.T) {
	s := redistest.StartSentinel(t)
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.Name, SentinelAddrs: s.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := goredis.NewClient(rdb, uncomplicated.WithTimeout(2*time.Second))
	t.Cleanup(func() { _ = c.Close() })
	var ms []*uncomplicated.Mutex
	for _, name := range []string{"a", "b", "c"} {
		m, err := c.Named("failover-" + name)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	held, _ := c.Named("held")
	failover(t, rdb, ms, held, s.Failover)
	replicated(t, c, ms[0])
	if addr, err := s.CurrentMaster(); err != nil || addr != s.Replica.Addr {
		t.Errorf("master after the failover: %s, %v; want the replica %s", addr, err, s.Replica.Addr)
	}
}

// failover holds held on the master that run fails over, while goroutines
// lock and unlock ms; see TestCluster_failover.
func failover(t *testing.T, rdb redis.UniversalClient, ms []*uncomplicated.Mutex, held *uncomplicated.Mutex, run func() error) {
	t.Helper()
	ctx := context.Background()
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the restart watch reads the master's run_id
	if _, err := do(ctx, rdb, held.Name(), "DEL", held.Name()); err != nil {
		t.Fatal(err)
	}
	if _, err := do(ctx, rdb, held.Name(), "WAIT", 1, 5000); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := make([]int, len(ms))
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				err := m.Lock(lctx)
				cancel()
				if err != nil {
					time.Sleep(50 * time.Millisecond) // the failover under way
					continue
				}
				mu.Lock()
				counts[i]++
				mu.Unlock()
				_ = m.Unlock(ctx)
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	select {
	case <-held.Lost():
		t.Fatal("Lost closed before the failover: the watch checked a node it had seen")
	default:
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Lost():
	case <-time.After(10 * time.Second):
		t.Error("Lost still open 10s after the failover: the restart watch did not check the hold on its new node")
	}
	mu.Lock()
	before := append([]int(nil), counts...)
	mu.Unlock()
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	for i := range ms {
		if counts[i] <= before[i] {
			t.Errorf("lock %s: %d acquisitions before the failover ended, %d after 2s more; want more", ms[i].Name(), before[i], counts[i])
		}
	}
	if err := held.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Unlock of the vanished hold = %v; want ErrNotHeld", err)
	}
}

// replicated checks WithReplicas on the lock of m, whose master has one
// replica: an acquisition returns once the replica has it; one that asks
// for two fails and gives the lock back.
func replicated(t *testing.T, c *uncomplicated.Client, m *uncomplicated.Mutex) {
	t.Helper()
	ctx := context.Background()
	name := strings.TrimPrefix(m.Name(), "lock:")
	one, _ := c.Named(name, uncomplicated.WithReplicas(1, 5*time.Second))
	if err := one.Lock(ctx); err != nil {
		t.Fatalf("Lock with 1 replica of 1: %v", err)
	}
	if err := one.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	two, _ := c.Named(name, uncomplicated.WithReplicas(2, 100*time.Millisecond))
	if err := two.Lock(ctx); !errors.Is(err, uncomplicated.ErrNotReplicated) {
		t.Fatalf("Lock with 2 replicas of 1 = %v; want ErrNotReplicated", err)
	}
	if ok, err := m.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after the failed acquisition = %v, %v; want the lock given back", ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// After a failover, the Client's subscription to a lock's channel may sit
// on the old master, now a replica, which hears what the new master
// publishes. A release there must not hand the lock to that waiter, whose
// message would read as a grant while the release found nobody listening
// and left the lock free: a third Client would get it beside the waiter.
func TestCluster_handOffsAfterFailover(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	opts := []uncomplicated.Option{uncomplicated.WithTimeout(10 * tick), uncomplicated.WithTicks(10)}
	a := goredis.NewClient(clusterClient(t, cl), opts...)
	b := goredis.NewClient(clusterClient(t, cl), opts...)
	c := goredis.NewClient(clusterClient(t, cl), opts...)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close(); _ = c.Close() })
	rdb := clusterClient(t, cl)
	ctx := context.Background()
	m := onEachMaster(t, cl, a, "handoff")[0]
	name := strings.TrimPrefix(m.Name(), "lock:")
	w, _ := b.Named(name)
	third, _ := c.Named(name)
	round := func() {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		handOff(t, rdb, m, w)
		if ok, err := third.TryLock(ctx); ok || err != nil {
			t.Fatalf("a third Client's TryLock while the waiter holds fence %d = %v, %v; want false", w.Fence(), ok, err)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	round()
	if err := cl.Failover(cl.Replicas[0]); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		round()
	}
}
