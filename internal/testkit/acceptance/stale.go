package acceptance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/orders"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Holders that stop: a stuck one is found stale, after the timeout, and a
// crashed one is freed by its lease, on Redis's clock.

// stuckHolders keep one token on the lock of obj for good: a key another
// program SET without a TTL, and a holder that hangs with WithLease(0)
// and the waiters' timeout. hold returns the holder, nil for the raw key.
var stuckHolders = []struct {
	name string
	hold func(t *testing.T, r *rig, obj orders.Order) *uncomplicated.Mutex
}{
	{"raw key", func(t *testing.T, r *rig, obj orders.Order) *uncomplicated.Mutex {
		name := mustNew(t, r.client(), obj).Name()
		r.do(name, "SET", name, "1")
		return nil
	}},
	{"hung holder", func(t *testing.T, r *rig, obj orders.Order) *uncomplicated.Mutex {
		m := mustNew(t, r.client(uncomplicated.WithLease(0), uncomplicated.WithTimeout(staleAfter)), obj)
		mustLock(t, m)
		return m
	}},
}

// staleAfter is the timeout of the stuck holders and their waiters.
const staleAfter = 300 * time.Millisecond

// The gem's third test: a stuck holder makes Lock fail once the timeout has
// passed, and its key stays as it was.
func mutexStaleHolderFail(t *testing.T, d Deployment) {
	for _, stuck := range stuckHolders {
		t.Run(stuck.name, func(t *testing.T) {
			r := newRig(t, d)
			stuck.hold(t, r, orders.Order{N: 1})
			m := mustNew(t, r.client(uncomplicated.WithTimeout(staleAfter)), orders.Order{N: 1})
			before := r.text(m.Name(), "GET", m.Name())
			start := time.Now()
			err := m.Lock(context.Background())
			if !errors.Is(err, uncomplicated.ErrStale) || !errors.Is(err, uncomplicated.ErrNotObtained) {
				t.Fatalf("Lock() = %v; want ErrStale and ErrNotObtained", err)
			}
			if took := time.Since(start); took < staleAfter {
				t.Errorf("Lock() failed after %v; want at least the timeout", took)
			}
			if v := r.text(m.Name(), "GET", m.Name()); strings.TrimSuffix(v, wire.QueuedMark) != strings.TrimSuffix(before, wire.QueuedMark) {
				t.Errorf("stuck value = %q; want %q untouched, but for the mark of a waiter queued (see wire.QueuedMark)", v, before)
			}
		})
	}
}

// TakeOver replaces a stuck holder with a token of ours, the lease and a
// fence above the holder's; the holder no longer has the lock.
func mutexStaleHolderTakeOver(t *testing.T, d Deployment) {
	for _, stuck := range stuckHolders {
		t.Run(stuck.name, func(t *testing.T) {
			r := newRig(t, d)
			holder := stuck.hold(t, r, orders.Order{N: 1})
			m := mustNew(t, r.client(uncomplicated.WithTimeout(staleAfter), uncomplicated.WithTakeOver(true),
				uncomplicated.WithLease(10*time.Second)), orders.Order{N: 1})
			before := r.text(m.Name(), "GET", m.Name())
			if err := m.Lock(context.Background()); err != nil {
				t.Fatalf("Lock() = %v; want the stuck holder taken over", err)
			}
			if v := r.text(m.Name(), "GET", m.Name()); v == before || len(strings.SplitN(v, ".", 2)[0]) != 33 {
				t.Errorf("value after take-over = %q; want our token, 22 secret characters and the Client's ID first", v)
			}
			if pttl := r.number(m.Name(), "PTTL", m.Name()); pttl <= 9_000 || pttl > 10_000 {
				t.Errorf("PTTL after take-over = %d; want the lease, 10000", pttl)
			}
			var held uint64 // the stuck holder's fence
			if holder != nil {
				held = holder.Fence()
			}
			if f := m.Fence(); f <= held {
				t.Errorf("Fence() = %d; want above the stuck holder's, %d", f, held)
			}
			if holder != nil {
				if err := holder.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrNotHeld) {
					t.Errorf("stuck holder's Unlock() = %v; want ErrNotHeld", err)
				}
			}
			if err := m.Unlock(context.Background()); err != nil {
				t.Errorf("Unlock() = %v", err)
			}
		})
	}
}

// A reader that died frees its share when its lease ends, on Redis's
// clock; so does a permit holder that died.
func crashedHolders(t *testing.T, d Deployment) {
	r := newRig(t, d)
	const lease = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dead := r.client(uncomplicated.WithLease(lease))
	rw, _ := uncomplicated.NewRW(dead, uncomplicated.Named("doc"))
	s, _ := uncomplicated.NewSemaphore(dead, uncomplicated.Named("pool"), 1)
	if err := rw.RLock(ctx); err != nil {
		t.Fatalf("RLock() = %v", err)
	}
	if _, err := s.Acquire(ctx); err != nil {
		t.Fatalf("Acquire() = %v", err)
	}
	start := time.Now()
	_ = dead.Close() // the process dies: nothing is released

	live := r.client(uncomplicated.WithTimeout(10 * time.Second))
	writer, _ := uncomplicated.NewRW(live, uncomplicated.Named("doc"))
	if err := writer.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	waited := time.Since(start)
	if _, err := mustNamedSemaphore(t, live, "pool", 1).Acquire(ctx); err != nil {
		t.Fatalf("Acquire() = %v", err)
	}
	if waited < lease-50*time.Millisecond || waited > lease+2*time.Second {
		t.Errorf("writer got the lock %v after the reader died; want about its lease, %v", waited, lease)
	}
}
