package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

func testEnv(t *testing.T) *env {
	t.Helper()
	e, err := newEnv(false, redistest.Shared(t).Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e
}

// testCluster returns the env of a Cluster of its own, stopped at cleanup.
func testCluster(t *testing.T) *env {
	t.Helper()
	c := redistest.StartCluster(t, clusterMasters, 0)
	var addrs []string
	for _, m := range c.Masters {
		addrs = append(addrs, m.Addr)
	}
	e, err := newEnv(true, addrs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e
}

// TestRows runs every row briefly, on the shared server or a Cluster, and
// checks that each acquired the lock, never by more holders than it
// allows, and counted its commands and the servers' CPU time.
func TestRows(t *testing.T) {
	d := &deployments{server: testEnv(t), cluster: testCluster(t)}
	for _, e := range []*env{d.server, d.cluster} {
		if e.overhead != int64(len(e.nodes)) {
			t.Errorf("%s: INFO adds %d commands to the count, want %d", e.name(), e.overhead, len(e.nodes))
		}
	}
	cfg := config{duration: 300 * time.Millisecond, workers: 4, hold: time.Millisecond, think: time.Millisecond, uncontended: 20}
	capacity := map[holders]int{exclusive: 1, shared: 4, permitted: 2}
	for _, r := range allRows() {
		res := d.on(r.cluster).runRow(r, cfg)
		switch {
		case res.failed != nil:
			t.Errorf("%s: %v", r.name, res.failed)
		case res.capacity != capacity[r.holders]:
			t.Errorf("%s: capacity %d, want %d", r.name, res.capacity, capacity[r.holders])
		case res.overlaps != 0 || res.acquisitions == 0 || res.errors != 0:
			t.Errorf("%s: %d overlaps and %d errors (first: %v) in %d acquisitions", r.name, res.overlaps, res.errors, res.firstErr, res.acquisitions)
		case res.utilisation <= 0 || res.utilisation > 1:
			t.Errorf("%s: utilisation %.3f, want in (0, 1]", r.name, res.utilisation)
		// At most one PUBLISH an acquisition, give or take the hand-offs to
		// acquisitions after the run's end, which it does not count.
		case r.floor && (res.cmdsLockUnlock != 0 || res.cmdsPerAcq <= 0 || res.cmdsPerAcq > 1.1):
			t.Errorf("%s: %.3f commands per lock+unlock, %.3f per acquisition; want none, and about one PUBLISH at most", r.name, res.cmdsLockUnlock, res.cmdsPerAcq)
		case !r.inProcess && !r.floor && (res.cmdsLockUnlock < 2 || res.cmdsPerAcq < 2):
			t.Errorf("%s: %.2f commands per lock+unlock, %.2f per acquisition; want at least 2", r.name, res.cmdsLockUnlock, res.cmdsPerAcq)
		case !r.inProcess && res.cpuPerAcq <= 0:
			t.Errorf("%s: Redis CPU %v per acquisition, want more than 0", r.name, res.cpuPerAcq)
		}
		if r.own && (r.ceiling == "" || !slices.ContainsFunc(allRows(), func(c row) bool { return c.name == r.ceiling && c.inProcess })) {
			t.Errorf("%s: no in-process ceiling row %q", r.name, r.ceiling)
		}
		if r.base != "" && !slices.ContainsFunc(allRows(), func(b row) bool { return b.name == r.base && !b.inProcess && !b.own }) {
			t.Errorf("%s: no base row %q", r.name, r.base)
		}
	}
}

// TestInterleave checks that the interleaved run times every Redis row it
// is given, ours and the peers, and no in-process one.
func TestInterleave(t *testing.T) {
	d := &deployments{server: testEnv(t)}
	cfg := config{workers: 4, uncontended: 20}
	var results []result
	for _, r := range allRows() {
		if !r.cluster && (r.name == ours || r.own || r.base != "" || r.name == "redsync 1ms" || r.name == ceiling) {
			results = append(results, result{name: r.name, own: r.own, base: r.base, inProcess: r.inProcess})
		}
	}
	if err := d.interleaveRows(cfg, results); err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if got := r.interleaved > 0; got != !r.inProcess {
			t.Errorf("%s: interleaved p50 %v", r.name, r.interleaved)
		}
	}
}

// TestPushFloor checks the push floor on a real server: one holder at a
// time, waiters served by hand-offs, each heard on the waiter's own
// subscription, and the hand-off ratios printed against it.
func TestPushFloor(t *testing.T) {
	e := testEnv(t)
	cfg := config{duration: 300 * time.Millisecond, workers: 4, hold: time.Millisecond, think: time.Millisecond}
	lockers, closeAll, err := openPushFloor(e.addr, "floor-test", cfg.workers, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	var res result
	res.merge(contend(lockers, cfg, 1))
	if res.overlaps != 0 || res.errors != 0 {
		t.Errorf("%d overlaps, %d errors (first %v) in %d acquisitions", res.overlaps, res.errors, res.firstErr, res.acquisitions)
	}
	if res.handoffs == 0 || res.handoffP50 <= 0 {
		t.Fatalf("%d hand-offs in %d acquisitions, p50 %v", res.handoffs, res.acquisitions, res.handoffP50)
	}
	// A waiter that gives up leaves the queue: the lock stays usable. (A
	// worker waiting when the run ended gave up too: fresh lockers.)
	fresh, closeFresh, err := openPushFloor(e.addr, "floor-test-quit", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFresh()
	holder, quitter := fresh[0], fresh[1]
	if err := holder.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := quitter.Lock(ctx); err == nil {
		t.Fatal("a second Lock got the held push-floor lock")
	}
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := holder.Lock(ctx); err != nil {
		t.Fatalf("Lock after a waiter gave up = %v; want the free lock", err)
	}
	res.name = pushFloor
	var b strings.Builder
	printFloorRatios(&b, []result{res, {name: ours, handoffs: 5, handoffP50: 2 * res.handoffP50}})
	if want := "uncomplicated 2.00×"; !strings.Contains(b.String(), want) {
		t.Errorf("want %q in %q", want, b.String())
	}
}

// TestMixRows runs every row of the mix briefly and checks that each read
// and wrote, without overlaps or errors.
func TestMixRows(t *testing.T) {
	e := testEnv(t)
	cfg := config{duration: 300 * time.Millisecond, workers: 4, hold: time.Millisecond, think: time.Millisecond, reads: 0.7}
	for _, r := range allMixRows() {
		res := e.runMix(r, cfg)
		n, first := res.errors()
		switch {
		case res.failed != nil:
			t.Errorf("%s: %v", r.name, res.failed)
		case res.reads.acquisitions == 0 || res.writes.acquisitions == 0:
			t.Errorf("%s: %d reads, %d writes", r.name, res.reads.acquisitions, res.writes.acquisitions)
		case res.overlaps != 0 || n != 0:
			t.Errorf("%s: %d overlaps, %d errors (first: %v)", r.name, res.overlaps, n, first)
		case !r.inProcess && res.cmds < 2*int64(res.reads.acquisitions+res.writes.acquisitions):
			t.Errorf("%s: %d commands for %d acquisitions", r.name, res.cmds, res.reads.acquisitions+res.writes.acquisitions)
		}
	}
}

// TestScaleRun checks that every waiter of a small scale run acquires, on
// the server and on a Cluster, where the locks spread over every master,
// the waiting Client listens on one sharded pub/sub connection to each and
// the holder on none.
func TestScaleRun(t *testing.T) {
	cluster := testCluster(t)
	for _, run := range []struct {
		e      *env
		client string
	}{{testEnv(t), ""}, {cluster, ""}, {cluster, "rueidis"}} {
		e := run.e
		res, err := e.scaleRun(100, run.client)
		if err != nil {
			t.Fatalf("%s %s: %v", e.name(), run.client, err)
		}
		if res.acquired != 100 || res.early != 0 || res.errors != 0 {
			t.Errorf("%s: acquired %d of 100, %d before the unlocks, %d errors (first: %v)", e.name(), res.acquired, res.early, res.errors, res.firstErr)
		}
		if !e.cluster {
			continue
		}
		for i, addr := range res.nodes { // the waiters' Client's, and the holder's once its holds are a second old
			if n := res.subscribers[i]; n < 1 || n > 2 || res.sharded[i] != n || res.keys[i] == 0 {
				t.Errorf("%s %s: master %s: %d pub/sub connections, %d sharded, %d keys; want 1 or 2, as many sharded, and some keys", e.name(), run.client, addr, res.subscribers[i], res.sharded[i], res.keys[i])
			}
		}
	}
}

// TestFleet runs every fleet row briefly: each pairs keys without error,
// ours send the commands of a lock and of a quick unlock (EVALSHA,
// GET, DEL), and leave no key.
func TestFleet(t *testing.T) {
	e := testEnv(t)
	cfg := config{duration: 300 * time.Millisecond, keys: 100, goroutines: 4, workload: "fleet", rounds: 1}
	var results []fleetResult
	for _, r := range allFleetRows() {
		res := e.runFleet(r, cfg)
		if res.err != nil || res.errors != 0 || res.pairs == 0 || res.cpuPerPair <= 0 {
			t.Errorf("%s: %d pairs, %d errors, %v of CPU a pair, err %v", r.name, res.pairs, res.errors, res.cpuPerPair, res.err)
		}
		if r.peer != "" && (res.cmdsPerPair < 5.9 || res.cmdsPerPair > 6.5) {
			t.Errorf("%s: %.2f commands a pair; want a lock's 3 and a quick unlock's 3", r.name, res.cmdsPerPair)
		}
		if r.peer != "" && res.keysLeft != 0 {
			t.Errorf("%s: %d keys left of %d locks; want none", r.name, res.keysLeft, cfg.keys)
		}
		results = append(results, medianFleet([]fleetResult{res}))
	}
	var out strings.Builder
	printFleet(&out, cfg, results)
	for _, want := range []string{"uncomplicated rueidis ÷ rueidislock", "uncomplicated valkey-go ÷ valkeylock", "uncomplicated ÷ redsync 1ms", "uncomplicated go-redis ÷ redislock 1ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printFleet lacks %q:\n%s", want, out.String())
		}
	}
}
