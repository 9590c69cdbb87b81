package acceptance

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// The Semaphore on a real deployment: its bound under concurrency and
// take-over races, and leases on Redis's clock.

// Never more than N holders, counted exactly, with waiters in four
// clients; and the permits are used.
func semaphoreNeverMoreThanN(t *testing.T, d Deployment) {
	r := newRig(t, d)
	const permits = 3
	var inside, most, done atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for c := range 4 {
		s := mustNamedSemaphore(t, r.client(uncomplicated.WithTimeout(10*time.Second)), "pool", permits)
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					err := s.Do(ctx, func(context.Context) error {
						n := inside.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(2 * time.Millisecond)
						inside.Add(-1)
						done.Add(1)
						return nil
					})
					if err != nil && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("client %d: Do() = %v", c, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("%d sections, at most %d at once", done.Load(), most.Load())
	if m := most.Load(); m != permits {
		t.Errorf("at most %d holders at once; want exactly %d", m, permits)
	}
}

// Take-over races: waiters in six clients all find the same two stuck
// holders stale at about the same time and race to evict them; Redis never
// has more than two holders, and neither do the waiters.
func semaphoreTakeOverRace(t *testing.T, d Deployment) {
	r := newRig(t, d)
	const permits = 2
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stuck := mustNamedSemaphore(t, r.client(uncomplicated.WithLease(0), uncomplicated.WithTimeout(300*time.Millisecond)), "pool", permits)
	var held []*uncomplicated.Permit
	for range permits {
		p, err := stuck.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	key := r.key("permits", stuck.Name())
	var inside, most, sections atomic.Int64
	var wg sync.WaitGroup
	for c := range 6 {
		s := mustNamedSemaphore(t, r.client(uncomplicated.WithTimeout(300*time.Millisecond), uncomplicated.WithTicks(10),
			uncomplicated.WithTakeOver(true), uncomplicated.WithLease(5*time.Second)), "pool", permits)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				err := s.Do(ctx, func(context.Context) error {
					n := inside.Add(1)
					defer inside.Add(-1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					if z, err := number(r.try(key, "ZCARD", key)); err != nil {
						t.Errorf("ZCARD: %v", err)
					} else if z > permits {
						t.Errorf("Redis has %d holders; want at most %d", z, permits)
					}
					time.Sleep(20 * time.Millisecond)
					sections.Add(1)
					return nil
				})
				if err != nil {
					t.Errorf("client %d: Do() = %v", c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > permits || m == 0 {
		t.Errorf("at most %d waiters held a permit at once; want 1 to %d", m, permits)
	}
	if n := sections.Load(); n != 18 {
		t.Errorf("%d sections; want 18", n)
	}
	for i, p := range held {
		if err := p.Release(ctx); !errors.Is(err, uncomplicated.ErrLost) {
			t.Errorf("stuck holder %d's Release() = %v; want ErrLost", i, err)
		}
	}
}

// A permit's lease is on Redis's clock: its score is the server's time
// plus the lease, and a Refresh pushes it on.
func semaphoreLeaseScore(t *testing.T, d Deployment) {
	r := newRig(t, d)
	const lease = 10 * time.Second
	s := mustNamedSemaphore(t, r.client(uncomplicated.WithLease(lease)), "pool", 1)
	p, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	key := r.key("permits", s.Name())
	left := func() time.Duration {
		t.Helper()
		scores := r.texts(key, "ZRANGE", key, 0, -1, "WITHSCORES")
		if len(scores) != 2 {
			t.Fatalf("ZRANGE WITHSCORES = %q; want one holder and its score", scores)
		}
		score, err := strconv.ParseFloat(scores[1], 64)
		if err != nil {
			t.Fatalf("score %q: %v", scores[1], err)
		}
		now := r.texts(key, "TIME") // the clock of the node that has the key
		if len(now) != 2 {
			t.Fatalf("TIME = %q; want seconds and microseconds", now)
		}
		sec, _ := strconv.ParseInt(now[0], 10, 64)
		usec, _ := strconv.ParseInt(now[1], 10, 64)
		return time.Duration(int64(score)-(sec*1000+usec/1000)) * time.Millisecond
	}
	if l := left(); l <= lease-time.Second || l > lease {
		t.Errorf("lease left after Acquire = %v; want just under %v", l, lease)
	}
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := left(); l <= lease-time.Second || l > lease {
		t.Errorf("lease left after Refresh = %v; want just under %v", l, lease)
	}
}
