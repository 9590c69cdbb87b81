package uncomplicated_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// A Client knows its own tokens: a waiter that finds its lock held by a
// token of its own Client that no hold owns releases it at once, and a
// release lost in a failover is repeated on the new master.

// A release that never reached Redis leaves the lock to a token that no
// hold of the Client owns: the Client's next acquisition of the lock
// releases it at once, rather than wait for the lease (10 minutes) or the
// timeout (5).
func TestOrphan_lostRelease(t *testing.T) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			fp, _ := newFaultPool(t)
			c := uncomplicated.NewClient(redigo.New(fp))
			t.Cleanup(func() { _ = c.Close() })
			h := p.take(t, c, "job")
			fp.dropNextRequest()
			if err := h.release(context.Background()); err == nil {
				t.Fatal("release that never reached Redis = nil; want its error")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			fence, err := p.wait(ctx, c, "job")
			if err != nil || fence <= h.fence {
				t.Fatalf("the next acquisition = fence %d, %v; want one above %d", fence, err, h.fence)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the next acquisition took %v; want it at once", took)
			}
		})
	}
}

// A waiter never releases a token that a hold owns: another Client's, or
// one of its own Client's through another lock value of the same name.
func TestOrphan_heldTokensStay(t *testing.T) {
	for _, p := range primitives {
		for _, same := range []bool{false, true} {
			name := p.name + "/another Client"
			if same {
				name = p.name + "/the same Client"
			}
			t.Run(name, func(t *testing.T) {
				env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks))
				holder := env.NewClient(uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks))
				if same {
					holder = env.Client
				}
				h := p.take(t, holder, "job")
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { _, err := p.wait(ctx, env.Client, "job"); done <- err }()
				env.AwaitWaiters(1)
				env.Advance(3 * tick)
				if n := env.Waiters(); n != 1 {
					t.Fatalf("Waiters() = %d; want the waiter still waiting", n)
				}
				cancel()
				err := recv(t, done)
				if !errors.Is(err, uncomplicated.ErrNotObtained) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "busy: lock:job held by") {
					t.Errorf("the waiter's error = %v; want ErrNotObtained, Canceled, and who held the lock", err)
				}
				if ok, err := h.check(context.Background()); !ok || err != nil {
					t.Errorf("the holder's Held() = %v, %v; want true", ok, err)
				}
			})
		}
	}
}

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
