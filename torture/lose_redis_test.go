package main

import (
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// TestLose runs both means of the lose fault on a lone persistent server:
// a rollback restores a lock's keys as a snapshot had them, and a restart
// without persistence leaves the server empty, answering.
func TestLose(t *testing.T) {
	requireRedis(t)
	srv := redistest.Start(t, persistent...)
	c := &coordinator{opts: options{Timeout: time.Second}, rec: newRecord(), lock: srv, keys: []string{"m"},
		onLock: map[string]bool{lockName("m"): true}}
	checkRollback(t, c, lockName("m"))

	do(t, c, "SET", "kept", "1")
	if err := srv.Restart(); err != nil { // persistent: a restart keeps it
		t.Fatal(err)
	}
	if got, err := redis.String(c.lockDo("kept", "GET", "kept")); err != nil || got != "1" {
		t.Fatalf("GET kept after a restart = %q, %v; want 1: the server does not persist", got, err)
	}
	checkRestartEmpty(t, c)
}

// TestLose_cluster runs both means of the lose fault on the faulted master
// of a persistent Cluster, which serves its slots again after a restart
// without persistence. It takes about 4 s: a master restarted refuses
// commands on keys for 2 s.
func TestLose_cluster(t *testing.T) {
	requireRedis(t)
	c := &coordinator{opts: options{Keys: 1, Timeout: time.Second}, rec: newRecord()}
	err := c.launchCluster()
	if c.cluster != nil {
		t.Cleanup(c.cluster.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	lock := lockName(c.keys[0])
	if !c.onLock[lock] {
		t.Fatalf("%s is not on the faulted master; want it there", lock)
	}
	checkRollback(t, c, lock)
	checkRestartEmpty(t, c)
	if !c.clusterOK() {
		t.Errorf("the Cluster is not ok after the restart; want ok")
	}
	if _, err := c.lockDo(lock, "SET", lock, "x"); err != nil {
		t.Errorf("SET %s on its master after the restart: %v; want it served there still", lock, err)
	}
}

// do runs a command on the server that holds key args[0], failing the test
// on error.
func do(t *testing.T, c *coordinator, cmd string, args ...any) any {
	t.Helper()
	reply, err := c.lockDo(args[0].(string), cmd, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return reply
}

// checkRollback snapshots lock's keys, changes them, and checks that a
// rollback to the snapshot brings them back, each with its TTL then (the
// timeout for one that had none), and deletes those made since, while the
// keys of another lock stay as they are.
func checkRollback(t *testing.T, c *coordinator, lock string) {
	t.Helper()
	queue, extra, made := "lock:queue:{"+lock+"}", "lock:semfence:{"+lock+"}", "lock:writer:{"+lock+"}"
	other := "lock:queue:{" + lock + "-other}" // another lock's key
	do(t, c, "SET", lock, "token 1", "PX", 60_000)
	do(t, c, "RPUSH", queue, "w1", "w2")
	do(t, c, "PEXPIRE", queue, 30_000)
	do(t, c, "SET", extra, "7") // no TTL
	do(t, c, "SET", other, "kept")

	c.snaps = &snapshots{rings: map[string][]snapshot{}}
	conn, err := dialLock(c.lock.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := c.snapshot(conn, []string{lock}); err != nil {
		t.Fatalf("snapshot() = %v", err)
	}
	snap, ok := c.snaps.pick(lock, 0, time.Now().Add(time.Second))
	if !ok || len(snap.keys) != 3 {
		t.Fatalf("snapshot of %s = %v, %v; want its 3 keys", lock, snap.keys, ok)
	}

	do(t, c, "SET", lock, "token 2", "PX", 60_000)
	do(t, c, "DEL", queue)
	do(t, c, "SET", made, "token 3")
	do(t, c, "SET", other, "changed")
	if err := restore(conn, lock, snap.keys, c.opts.Timeout); err != nil {
		t.Fatalf("restore() = %v", err)
	}

	for _, want := range []struct {
		key, value       string
		pttlMin, pttlMax int64 // ms
	}{
		{lock, "token 1", 59_000, 60_000},
		{extra, "7", 900, 1000},
		{other, "changed", -1, -1},
	} {
		got, err := redis.String(do(t, c, "GET", want.key), nil)
		pttl, _ := redis.Int64(do(t, c, "PTTL", want.key), nil)
		if err != nil || got != want.value || pttl < want.pttlMin || pttl > want.pttlMax {
			t.Errorf("after the rollback, %s = %q, PTTL %d, %v; want %q, PTTL in [%d, %d]", want.key, got, pttl, err, want.value, want.pttlMin, want.pttlMax)
		}
	}
	if got, err := redis.Strings(do(t, c, "LRANGE", queue, 0, -1), nil); err != nil || len(got) != 2 || got[0] != "w1" {
		t.Errorf("after the rollback, %s = %v, %v; want [w1 w2]", queue, got, err)
	}
	if n, _ := redis.Int(do(t, c, "EXISTS", made), nil); n != 0 {
		t.Errorf("after the rollback, %s exists; want it deleted", made)
	}
	do(t, c, "DEL", lock, queue, extra)
	do(t, c, "DEL", other)
}

// checkRestartEmpty restarts c's lock server without persistence and
// checks that it answers, holds no key, and that the loss names the locks
// on it.
func checkRestartEmpty(t *testing.T, c *coordinator) {
	t.Helper()
	lock := lockName(c.keys[0])
	do(t, c, "SET", lock, "token 1")
	at, err := c.restartEmpty()
	if err != nil {
		t.Fatalf("restartEmpty() = %v", err)
	}
	if n, err := redis.Int(dialDo(c.lock.Addr, "DBSIZE")); err != nil || n != 0 {
		t.Errorf("DBSIZE after a restart without persistence = %d, %v; want 0", n, err)
	}
	if len(c.rec.Losses) != 1 {
		t.Fatalf("%d losses recorded; want 1", len(c.rec.Losses))
	}
	l := c.rec.Losses[0]
	if l.rollback || l.from != at.UnixNano() || l.back < l.from || len(l.locks) != 1 || l.locks[0] != lock {
		t.Errorf("loss = %+v; want a restart at %d, answering after, of [%s]", l, at.UnixNano(), lock)
	}
}
