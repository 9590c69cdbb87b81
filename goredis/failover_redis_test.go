package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
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
	t.Parallel() // mostly waiting for the sentinels, as the other Sentinel tests
	s := redistest.StartSentinel(t)
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.Name, SentinelAddrs: s.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := goredis.NewClient(rdb, uncomplicated.WithTimeout(2*time.Second))
	t.Cleanup(func() { _ = c.Close() })
	var ms []*uncomplicated.Mutex
	for _, name := range []string{"a", "b", "c"} {
		m, err := uncomplicated.New(c, uncomplicated.Named("failover-"+name))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	held, _ := uncomplicated.New(c, uncomplicated.Named("held"))
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
	fences := make([][]uint64, len(ms)) // of each lock, in the order of its holds
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
				fences[i] = append(fences[i], m.Fence())
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
		for j := 1; j < len(fences[i]); j++ {
			if fences[i][j] <= fences[i][j-1] {
				t.Errorf("lock %s: hold %d got fence %d, not above hold %d's, %d", ms[i].Name(), j, fences[i][j], j-1, fences[i][j-1])
			}
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
	one, _ := uncomplicated.New(c, uncomplicated.Named(name), uncomplicated.WithReplicas(1, 5*time.Second))
	if err := one.Lock(ctx); err != nil {
		t.Fatalf("Lock with 1 replica of 1: %v", err)
	}
	if err := one.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	two, _ := uncomplicated.New(c, uncomplicated.Named(name), uncomplicated.WithReplicas(2, 100*time.Millisecond))
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
	w, _ := uncomplicated.New(b, uncomplicated.Named(name))
	third, _ := uncomplicated.New(c, uncomplicated.Named(name))
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

// A release that reached the old master but not the replica that took
// over leaves the lock held on the new master by a token whose holder has
// released it, for the rest of its lease (10 minutes by default): no one
// gets the lock meanwhile. These tests run workers on several locks
// through go-redis, with the default timeout and lease so that such a
// lock would show, fail the master over, and check that every lock is
// acquired again soon after the workers' client reaches the new master,
// and that none is left held once the workers have stopped.

// After each of three SENTINEL FAILOVERs, back and forth, every lock is
// acquired again within 5 s of the workers' client reaching the new
// master. The old master takes writes until the sentinels make it a
// replica, 8 s later, and the workers' client reaches the new master only
// once a sentinel announces it, up to a second after the promotion: the
// releases of that second that ended holds begun before the promotion
// never reach the new master.
//
// Each round also has a lock that Client a holds at the promotion and
// releases just after it, on the old master, and that from then on only
// Client b wants: b cannot tell a's token from a holder's, so a's restart
// watch alone can release it on the new master.
//
// Under WithReplicas(1, 100ms), a lock can be acquired only once the new
// master has a replica again, which Failover waits for: then is when the
// 5 s start.
func TestSentinel_failoverStrandsNoLock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []uncomplicated.Option
	}{
		{"defaults", nil},
		{"WithReplicas", []uncomplicated.Option{uncomplicated.WithReplicas(1, 100*time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := redistest.StartSentinel(t)
			rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.Name, SentinelAddrs: s.Addrs()})
			t.Cleanup(func() { _ = rdb.Close() })
			a, b := twoClients(t, rdb, tc.opts...)
			w := newWorkload(t)
			w.add(t, "lock:strand-a", a)
			w.add(t, "lock:strand-b", b)
			w.add(t, "lock:strand-ab", a, b)
			w.awaitAcquired(t, a, w.names, time.Now(), 5*time.Second)
			for round := 1; round <= 3; round++ {
				next := s.Replica
				if addr, err := s.CurrentMaster(); err != nil {
					t.Fatal(err)
				} else if addr == s.Replica.Addr {
					next = s.Master
				}
				promoted, reached := watchTakeOver(t, rdb, next, "")
				relay := fmt.Sprintf("lock:strand-relay%d", round)
				m := lockOf(t, a, relay)
				failedOver := make(chan error, 1)
				go func() {
					err := s.Failover()
					if err != nil {
						t.Error(err) // and promoted fails
					}
					failedOver <- err
				}()
				promoted()
				if err := m.Unlock(context.Background()); err != nil {
					// The client switched as it waited for the reply; the
					// Client repeats the release all the same.
					t.Logf("Unlock of %s just after the promotion: %v", relay, err)
				}
				w.add(t, relay, b)
				if err := <-failedOver; err != nil {
					t.FailNow()
				}
				since, after := reached(), "reached it"
				if tc.opts != nil {
					since, after = time.Now(), "it had a replica again" // as Failover returns
				}
				took := w.awaitAcquired(t, a, w.names, since, 5*time.Second)
				t.Logf("failover %d: the workers' client reached the new master %v after its promotion; each lock acquired again %v after %s",
					round, reached().Sub(promoted()).Round(time.Millisecond), took, after)
			}
			w.checkFree(t, a)
		})
	}
}

// The same on a Cluster of three masters with a replica each, with locks
// on every master: a replica takes over by CLUSTER FAILOVER, and another
// after its master was killed.
//
// A CLUSTER FAILOVER loses no write: the master stops taking them until
// its replica has caught up. A master that dies does lose the writes its
// replica has not received yet. The test makes that certain: it pauses
// the replica (SIGSTOP) and closes its link on the master (a paused
// replica still receives, in its socket's buffer, what the master sends),
// lets the locks on that master be released twice, then kills the master
// and lets the replica go on. Until the replica takes over, the other
// masters answer CLUSTERDOWN, so Unlocks fail on every master and leave
// their keys too. A lock there that Client a releases while the replica
// is cut off, and that only Client b wants after, shows a's restart watch
// at work, as in the Sentinel test.
func TestCluster_failoverStrandsNoLock(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 1)
	// Locks on each master, which stay on a master each through the
	// failovers: onEachMaster knows only the masters as started.
	c := goredis.NewClient(clusterClient(t, cl))
	solo, shared := lockNames(onEachMaster(t, cl, c, "solo")), lockNames(onEachMaster(t, cl, c, "shared"))
	relay := lockNames(onEachMaster(t, cl, c, "relay"))[1]
	_ = c.Close()
	start := func(t *testing.T, rdb redis.UniversalClient) (w *workload, a, b *uncomplicated.Client) {
		a, b = twoClients(t, rdb)
		w = newWorkload(t)
		for i := range solo {
			w.add(t, solo[i], a)
			w.add(t, shared[i], a, b)
		}
		w.awaitAcquired(t, a, w.names, time.Now(), 5*time.Second)
		return w, a, b
	}

	t.Run("CLUSTER_FAILOVER", func(t *testing.T) {
		rdb := clusterClient(t, cl)
		w, a, _ := start(t, rdb)
		replica := cl.Replicas[0] // of the master of solo[0] and shared[0]
		promoted, reached := watchTakeOver(t, rdb, replica, solo[0])
		if err := cl.Failover(replica); err != nil {
			t.Fatal(err)
		}
		took := w.awaitAcquired(t, a, w.names, reached(), 5*time.Second)
		t.Logf("the workers' client reached the new master %v after its promotion; each lock acquired again %v after that",
			reached().Sub(promoted()).Round(time.Millisecond), took)
		w.checkFree(t, a)
	})

	t.Run("killed_master", func(t *testing.T) {
		// go-redis learns where a slot went from a MOVED, which no node
		// sends for a dead master's slots, or by reading the slot map
		// every ClusterStateReloadInterval, 60 s by default: the driver
		// has it reload the map when a call fails, so the default does.
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
		t.Cleanup(func() { _ = rdb.Close() })
		master, replica := cl.Masters[1], cl.Replicas[1] // the failover above left them alone
		if owner := ownerOf(t, cl, solo[1]); owner != master {
			t.Fatalf("%s is on %s; want %s", solo[1], owner.Addr, master.Addr)
		}
		w, a, b := start(t, rdb)
		promoted, reached := watchTakeOver(t, rdb, replica, solo[1])
		m := lockOf(t, a, relay)
		time.Sleep(1500 * time.Millisecond) // a's restart watch notes the master of the lock
		if err := replica.Pause(); err != nil {
			t.Fatal(err)
		}
		if n := master.Do(t, "CLIENT", "KILL", "TYPE", "replica"); n != int64(1) {
			t.Fatalf("CLIENT KILL TYPE replica on the master = %v; want 1", n)
		}
		w.awaitAcquired(t, a, []string{solo[1], shared[1]}, time.Now(), 5*time.Second) // released twice since
		if err := m.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock of %s: %v", relay, err)
		}
		w.add(t, relay, b)
		killed := time.Now()
		master.Kill()
		if err := replica.Resume(); err != nil {
			t.Fatal(err)
		}
		took := w.awaitAcquired(t, a, w.names, reached(), 5*time.Second)
		t.Logf("the replica was promoted %v after the kill, the workers' client reached it %v after that; each lock acquired again %v after that",
			promoted().Sub(killed).Round(time.Millisecond), reached().Sub(promoted()).Round(time.Millisecond), took)
		if late := reached().Sub(promoted()); late > 5*time.Second {
			t.Errorf("the workers' client reached the promoted replica %v after its promotion; want at most 5s", late.Round(time.Millisecond))
		}
		w.checkFree(t, a)
	})
}

// twoClients returns two Clients on rdb with opts, labelled "a" and "b",
// closed at t's end.
func twoClients(t *testing.T, rdb redis.UniversalClient, opts ...uncomplicated.Option) (a, b *uncomplicated.Client) {
	opts = slices.Clip(opts)
	a = goredis.NewClient(rdb, append(opts, uncomplicated.WithHolderLabel("a"))...)
	b = goredis.NewClient(rdb, append(opts, uncomplicated.WithHolderLabel("b"))...)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// lockOf returns c's lock with the full name name, locked.
func lockOf(t *testing.T, c *uncomplicated.Client, name string) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(c, uncomplicated.Named(strings.TrimPrefix(name, "lock:")))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(context.Background()); err != nil {
		t.Fatalf("Lock of %s: %v", name, err)
	}
	return m
}

// lockNames returns the full names of ms.
func lockNames(ms []*uncomplicated.Mutex) []string {
	var names []string
	for _, m := range ms {
		names = append(names, m.Name())
	}
	return names
}

// watchTakeOver returns functions that wait for the moment replica said
// it was a master, and for the moment a command through rdb for key ("" on
// a Sentinel) first reached it.
func watchTakeOver(t *testing.T, rdb redis.UniversalClient, replica *redistest.Server, key string) (promoted, reached func() time.Time) {
	t.Helper()
	own := direct(t, replica)
	id := infoField(context.Background(), own, "", "server", "run_id")
	if id == "" {
		t.Fatalf("no run_id from %s", replica.Addr)
	}
	promoted = firstTime(t, replica.Addr+" says it is a master", func(ctx context.Context) bool {
		return infoField(ctx, own, "", "replication", "role") == "master"
	})
	reached = firstTime(t, "a command through go-redis for "+key+" reaches "+replica.Addr, func(ctx context.Context) bool {
		return infoField(ctx, rdb, key, "server", "run_id") == id
	})
	return promoted, reached
}

// A workload is goroutines that lock a lock, hold it for a moment and
// unlock it, over and over until stopped, and when each lock was
// acquired. On a lock with one worker, each hold has the full lease, as in
// the report of the bug; on a lock with a worker in each of two Clients,
// most holds are hand-offs, which hold the lock for a claim of a second
// until they are taken (rarely: they end first).
type workload struct {
	names  []string        // the locks' full names (Mutex.Name), as added
	ctx    context.Context // ends the goroutines
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex             // guards acquired, grants and unlocks
	acquired map[string][]time.Time // by lock name, in order
	grants   map[string][]grant     // by lock name
	unlocks  map[string][]error     // the failed Unlocks, by lock name
}

// A grant is one acquisition of a workload's lock: when its Lock began
// and returned, and its fence.
type grant struct {
	began, got time.Time
	fence      uint64
}

// workFor is how long a worker holds a lock, so that a failover finds
// most locks held.
const workFor = 5 * time.Millisecond

// newWorkload returns a workload without workers; it stops at t's end.
func newWorkload(t *testing.T) *workload {
	ctx, cancel := context.WithCancel(context.Background())
	w := &workload{ctx: ctx, cancel: cancel, acquired: map[string][]time.Time{}, grants: map[string][]grant{}, unlocks: map[string][]error{}}
	t.Cleanup(w.stop)
	return w
}

// add starts a worker on the lock with the full name name in each of
// clients.
func (w *workload) add(t *testing.T, name string, clients ...*uncomplicated.Client) {
	t.Helper()
	w.names = append(w.names, name)
	for _, c := range clients {
		m, err := uncomplicated.New(c, uncomplicated.Named(strings.TrimPrefix(name, "lock:")))
		if err != nil {
			t.Fatal(err)
		}
		w.wg.Add(1)
		go w.run(m)
	}
}

func (w *workload) run(m *uncomplicated.Mutex) {
	defer w.wg.Done()
	for w.ctx.Err() == nil {
		began := time.Now()
		if err := m.Lock(w.ctx); err != nil {
			// Redis unreachable, or not replicating: try again shortly.
			select {
			case <-w.ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		got := time.Now()
		w.mu.Lock()
		w.acquired[m.Name()] = append(w.acquired[m.Name()], got)
		w.grants[m.Name()] = append(w.grants[m.Name()], grant{began, got, m.Fence()})
		w.mu.Unlock()
		time.Sleep(workFor)
		if err := m.Unlock(context.Background()); err != nil {
			w.mu.Lock()
			w.unlocks[m.Name()] = append(w.unlocks[m.Name()], err)
			w.mu.Unlock()
		}
	}
}

// failedUnlocks says how many Unlocks of the lock name failed, and the
// last error.
func (w *workload) failedUnlocks(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	errs := w.unlocks[name]
	if len(errs) == 0 {
		return "no Unlock failed"
	}
	return fmt.Sprintf("%d Unlocks failed, the last with %v", len(errs), errs[len(errs)-1])
}

// stop stops the goroutines and waits for them.
func (w *workload) stop() {
	w.cancel()
	w.wg.Wait()
}

// acquisitions returns how many times the lock name was acquired from
// since to until, and when first.
func (w *workload) acquisitions(name string, since, until time.Time) (n int, first time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, at := range w.acquired[name] {
		if !at.Before(since) && !at.After(until) {
			if n == 0 {
				first = at
			}
			n++
		}
	}
	return n, first
}

// awaitAcquired waits until each of the locks names has been acquired
// three times from since, and returns how long after since each was
// first. It fails t for each lock that was not within limit of since,
// with what c's Inspect finds of it.
func (w *workload) awaitAcquired(t *testing.T, c *uncomplicated.Client, names []string, since time.Time, limit time.Duration) map[string]time.Duration {
	t.Helper()
	const want = 3 // more than a stray acquisition on the old master
	deadline := since.Add(limit)
	for {
		took, missing := map[string]time.Duration{}, []string(nil)
		for _, name := range names {
			n, first := w.acquisitions(name, since, deadline)
			if n < want {
				missing = append(missing, name)
				continue
			}
			took[strings.TrimPrefix(name, "lock:")] = first.Sub(since).Round(time.Millisecond)
		}
		if len(missing) == 0 {
			return took
		}
		if time.Now().After(deadline) {
			for _, name := range missing {
				n, _ := w.acquisitions(name, since, deadline)
				t.Errorf("%s acquired %d times in the %v after the new master was reached; want %d or more. Redis has %s; %s",
					name, n, limit, want, describe(c, name), w.failedUnlocks(name))
			}
			return took
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkFree stops w and checks that Redis has no holder of its locks
// left: every worker unlocked what it held, so a holder left is a token
// released, or a hand-off to a worker that stopped waiting, which lasts
// its claim, a second. It waits that second. It checks the fences too
// (see checkFences).
func (w *workload) checkFree(t *testing.T, c *uncomplicated.Client) {
	t.Helper()
	w.stop()
	w.checkFences(t)
	deadline := time.Now().Add(3 * time.Second)
	for _, name := range w.names {
		for {
			in, err := inspect.Lock(context.Background(), c, name)
			if err == nil && !in.Held() {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s, with every worker stopped for 3s: %s; want no holder (%s)", name, describe(c, name), w.failedUnlocks(name))
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// checkFences checks that no grant of a lock got a fence at or below that
// of a grant of the lock that had returned before it began, failovers
// included: what a failover loses of a lock never makes its fences go
// back. (Grants that overlap in time may come in either order.)
func (w *workload) checkFences(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, gs := range w.grants {
		byGot := slices.Clone(gs)
		slices.SortFunc(byGot, func(a, b grant) int { return a.got.Compare(b.got) })
		var highest uint64 // of the grants that returned before the one looked at began
		i, bad := 0, 0
		for _, g := range slices.SortedFunc(slices.Values(gs), func(a, b grant) int { return a.began.Compare(b.began) }) {
			for ; i < len(byGot) && byGot[i].got.Before(g.began); i++ {
				highest = max(highest, byGot[i].fence)
			}
			if g.fence <= highest {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d grants got a fence at or below that of a grant before them", name, bad, len(gs))
		}
	}
}

// describe says what inspect.Lock finds of the lock name: its holders, with
// their Client's label, fence and lease left.
func describe(c *uncomplicated.Client, name string) string {
	in, err := inspect.Lock(context.Background(), c, name)
	if err != nil {
		return fmt.Sprintf("Inspect: %v", err)
	}
	if !in.Held() {
		return "no holder"
	}
	var b strings.Builder
	for _, h := range in.Holders {
		fmt.Fprintf(&b, "holder %q, fence %d, lease left %v; ", h.Label, h.Fence, h.LeaseLeft.Round(time.Second))
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// firstTime polls cond every few milliseconds, for 30 s at most, and
// returns a function that waits for the moment cond first held; it fails
// t when cond never did, saying what it awaited.
func firstTime(t *testing.T, what string, cond func(context.Context) bool) func() time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	at := make(chan time.Time, 1)
	go func() {
		defer close(at)
		for ctx.Err() == nil {
			if cond(ctx) {
				at <- time.Now()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var got time.Time
	var once sync.Once
	t.Cleanup(func() { cancel(); once.Do(func() { got = <-at }) })
	return func() time.Time {
		t.Helper()
		once.Do(func() { got = <-at })
		if got.IsZero() {
			t.Fatalf("%s: not within 30s", what)
		}
		return got
	}
}

// direct returns a go-redis client of s alone, closed at t's end.
func direct(t *testing.T, s *redistest.Server) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// infoField returns a field of an INFO section from the node that serves
// key through rdb (see do), or "" when it does not answer.
func infoField(ctx context.Context, rdb redis.UniversalClient, key, section, name string) string {
	reply, err := do(ctx, rdb, key, "INFO", section)
	info, _ := reply.(string)
	if err != nil {
		return ""
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// The README's Sentinel example stays available through a failover: with
// its settings (go-redis following Sentinel, ContextTimeoutEnabled, the
// default options), no lock goes more than 5s without an acquisition
// while SENTINEL FAILOVER runs and after. (WithReplicas(1, d) with one
// replica would block them until the old master is back as a replica in
// sync.)
func TestSentinel_readmeExampleStaysAvailable(t *testing.T) {
	t.Parallel() // mostly waiting for the sentinels, as the other Sentinel tests
	s := redistest.StartSentinel(t)
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.Name,
		SentinelAddrs: s.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	locks := goredis.NewClient(rdb)
	t.Cleanup(func() { _ = locks.Close() })
	m, err := uncomplicated.New(locks, uncomplicated.Named("readme-sentinel"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []time.Time // when each acquisition returned
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := m.Lock(ctx); err == nil {
				mu.Lock()
				got = append(got, time.Now())
				mu.Unlock()
				_ = m.Unlock(ctx)
			}
			cancel()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := s.Failover(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	last, gap := start, time.Duration(0)
	for _, at := range got {
		if at.After(start) {
			gap, last = max(gap, at.Sub(last)), at
		}
	}
	gap = max(gap, time.Since(last)-20*time.Millisecond)
	if gap > 5*time.Second {
		t.Errorf("no acquisition for %v during or after the failover; want at most 5s", gap.Round(time.Millisecond))
	}
	t.Logf("longest time without an acquisition from SENTINEL FAILOVER on: %v", gap.Round(time.Millisecond))
}
