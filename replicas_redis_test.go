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
)

// WithReplicas on a real master with one replica: an acquisition, by an
// attempt or a hand-off, returns once the replica has it; one that the
// replica cannot acknowledge in time fails and gives the lock back.
func TestRedis_WithReplicas(t *testing.T) {
	master := redistest.Start(t, "--repl-diskless-sync-delay", "0")
	host, port, _ := strings.Cut(master.Addr, ":")
	replica := redistest.Start(t, "--replicaof", host, port, "--enable-debug-command", "yes")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(replica.Do(t, "INFO", "replication").([]byte)), "master_link_status:up") {
		if time.Now().After(deadline) {
			t.Fatal("the replica never caught up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx := context.Background()
	c := uncomplicated.NewClient(redigo.New(master.Pool(t)), uncomplicated.WithReplicas(1, 2*time.Second), uncomplicated.WithTimeout(time.Second))
	t.Cleanup(func() { _ = c.Close() })
	m, err := uncomplicated.New(c, uncomplicated.Named("r"))
	if err != nil {
		t.Fatal(err)
	}
	key := m.Name()
	onReplica := func() string {
		v, _ := redis.String(replica.Do(t, "GET", key), nil)
		return v
	}

	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := onReplica(), master.Do(t, "GET", key); got != string(want.([]byte)) {
		t.Errorf("the replica has %q after Lock; want the master's %q", got, want)
	}
	waiter, _ := uncomplicated.New(c, uncomplicated.Named("r"))
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	time.Sleep(100 * time.Millisecond) // the waiter queues
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := onReplica(), master.Do(t, "GET", key); got != string(want.([]byte)) {
		t.Errorf("the replica has %q after a hand-off; want the master's %q", got, want)
	}
	waits := commandCalls(t, master, "wait")
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := commandCalls(t, master, "wait") - waits; n != 1 || onReplica() != "" {
		t.Errorf("Unlock sent %d WAITs, and the replica has %q; want one, which it acknowledged: the release too survives a failover", n, onReplica())
	}

	// A replica that sleeps cannot acknowledge within 100 ms.
	go func() {
		conn, err := redis.Dial("tcp", replica.Addr)
		if err == nil {
			_, _ = conn.Do("DEBUG", "SLEEP", "1")
			conn.Close()
		}
	}()
	time.Sleep(50 * time.Millisecond)
	quick, _ := uncomplicated.New(c, uncomplicated.Named("r"), uncomplicated.WithReplicas(1, 100*time.Millisecond))
	err = quick.Lock(ctx)
	if !errors.Is(err, uncomplicated.ErrNotReplicated) || !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Fatalf("Lock with the replica asleep = %v; want ErrNotReplicated and ErrNotObtained", err)
	}
	if v := master.Do(t, "GET", key); v != nil {
		t.Errorf("lock key = %q after the failed acquisition; want it given back", v)
	}
	if err := quick.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Unlock after it = %v; want ErrNotHeld", err)
	}

	// Two replicas are more than there are. An Observer hears an error,
	// and never of the hold that was given back.
	rec := &callRecorder{}
	two, _ := uncomplicated.New(c, uncomplicated.Named("r"), uncomplicated.WithReplicas(2, 100*time.Millisecond), uncomplicated.WithObserver(rec))
	if err := two.Lock(ctx); !errors.Is(err, uncomplicated.ErrNotReplicated) {
		t.Fatalf("Lock asking for 2 replicas of 1 = %v; want ErrNotReplicated", err)
	}
	if got := rec.take(); len(got) != 1 || !strings.Contains(got[0], ": NotAcquired error after ") || strings.Contains(got[0], "Released") {
		t.Errorf("calls = %q; want one NotAcquired error, and no Released", got)
	}
	if _, err := uncomplicated.New(c, uncomplicated.Named("r"), uncomplicated.WithReplicas(-1, time.Second)); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("WithReplicas(-1) = %v; want ErrInvalidArgument", err)
	}
	if _, err := uncomplicated.New(c, uncomplicated.Named("r"), uncomplicated.WithReplicas(1, 0)); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("WithReplicas(1, 0) = %v; want ErrInvalidArgument", err)
	}
}
