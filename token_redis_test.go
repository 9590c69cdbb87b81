package uncomplicated_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A failover to a replica that had not received a release, nor the
// Refresh before it, brings the hold back on the new master: the Client,
// whose restart watch sees the new run_id, releases it there, also when it
// holds nothing else. Here the "failover" is a pool switched to a second
// server holding the lock's keys as they were before the Refresh.
func TestRerelease_afterFailover(t *testing.T) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			before, after := redistest.Start(t), redistest.Start(t)
			pool, switchTo := switchingPool(t, before)
			client := uncomplicated.NewClient(redigo.New(pool))
			t.Cleanup(func() { _ = client.Close() })

			h := p.take(t, client, "job")
			polls := 0 // each counts as an INFO call itself
			eventually(t, "the run_id read", func() bool {
				polls++
				return infoCalls(t, before) >= polls
			})
			keys, _ := redis.Strings(before.Do(t, "KEYS", "lock:*"), nil)
			dumps := make([]string, len(keys))
			for i, k := range keys {
				dumps[i], _ = redis.String(before.Do(t, "DUMP", k), nil)
			}
			if err := h.refresh(context.Background()); err != nil {
				t.Fatalf("Refresh() = %v", err)
			}
			if err := h.release(context.Background()); err != nil {
				t.Fatalf("release = %v", err)
			}
			for i, k := range keys {
				after.Do(t, "RESTORE", k, 0, dumps[i], "REPLACE")
			}
			other := uncomplicated.NewClient(redigo.New(after.Pool(t)))
			t.Cleanup(func() { _ = other.Close() })
			if ok, err := p.try(context.Background(), other, "job"); ok || err != nil {
				t.Fatalf("TryLock on the new master before the watch = %v, %v; want the hold back", ok, err)
			}
			switchTo(after)
			eventually(t, "the release repeated", func() bool {
				info, err := inspect.Lock(context.Background(), other, "lock:job")
				return err == nil && !info.Held()
			})
		})
	}
}

// A release that failed is repeated by the restart watch at its next
// reading: another Client's waiter gets the lock within about a second,
// not the lease.
func TestRerelease_failedRelease(t *testing.T) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			fp := &faultPool{pool: r.pool, hung: make(chan struct{}, 16), stalled: make(chan struct{}, 1)}
			c := uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithPrefix(r.prefix))
			t.Cleanup(func() { _ = c.Close() })
			h := p.take(t, c, "job")
			fp.dropNextRequest()
			if err := h.release(context.Background()); !errors.Is(err, errLostReply) {
				t.Fatalf("release = %v; want the Pool's failure", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			if _, err := p.wait(ctx, r.client(), "job"); err != nil {
				t.Fatalf("another Client's acquisition = %v", err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("another Client got the lock after %v; want the watch's next reading, about a second", took)
			}
		})
	}
}

// A release that meets a node without the lock (a client still routing to
// the old master for a moment of a failover) finds nothing of the hold and
// reports it lost; the lock stays held on the master the acquisition
// reached. The restart watch repeats that release at its next reading too:
// another Client gets the lock within about a second, not the lease.
func TestRerelease_releaseFoundNothing(t *testing.T) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			master, stale := redistest.Start(t), redistest.Start(t)
			pool, switchTo := switchingPool(t, master)
			client := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithLease(time.Minute))
			t.Cleanup(func() { _ = client.Close() })
			h := p.take(t, client, "job")
			switchTo(stale)
			if err := h.release(context.Background()); !errors.Is(err, uncomplicated.ErrLost) {
				t.Fatalf("release on a node without the lock = %v; want ErrLost", err)
			}
			switchTo(master)
			other := uncomplicated.NewClient(redigo.New(master.Pool(t)))
			t.Cleanup(func() { _ = other.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			if _, err := p.wait(ctx, other, "job"); err != nil {
				t.Fatalf("another Client's acquisition = %v", err)
			}
			if took := time.Since(start); took > 2500*time.Millisecond {
				t.Errorf("another Client got the lock after %v; want the watch's next reading, about a second", took)
			}
		})
	}
}
