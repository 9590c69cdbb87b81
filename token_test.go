package uncomplicated_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// A Client knows its own tokens: a waiter that finds its lock held by a
// token of its own Client that no hold owns releases it at once, and a
// release lost in a failover is repeated on the new master (on real
// redis-servers, in token_redis_test.go).

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
