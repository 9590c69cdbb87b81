package acceptance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/orders"
)

// The Mutex on a real deployment: TTLs, scripts and concurrency as Redis
// really has them.

// The gem's first test: the key exists while the lock is held, and is gone
// after; its TTL is the lease, by default twice the timeout.
func mutexLockWorks(t *testing.T, d Deployment) {
	r := newRig(t, d)
	m := mustNew(t, r.client(uncomplicated.WithTimeout(time.Minute)), orders.Order{N: 1})
	err := m.Do(context.Background(), func(context.Context) error {
		if pttl := r.number(m.Name(), "PTTL", m.Name()); pttl <= 119_000 || pttl > 120_000 {
			t.Errorf("PTTL inside Do = %d; want just under 120000, twice the timeout", pttl)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do() = %v", err)
	}
	if n := r.number(m.Name(), "EXISTS", m.Name()); n != 0 {
		t.Errorf("EXISTS after Do = %d; want 0", n)
	}
}

// The gem's second test: two processes locking one object run one after
// the other, and the second sees what the first wrote.
func mutexSequentialAccess(t *testing.T, d Deployment) {
	r := newRig(t, d)
	opt := uncomplicated.WithTimeout(2 * time.Second)
	a, b := mustNew(t, r.client(opt), orders.Order{N: 1}), mustNew(t, r.client(opt), orders.Order{N: 1})
	log := a.Name() + ":log"
	var wg sync.WaitGroup
	for _, m := range []*uncomplicated.Mutex{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := m.Do(context.Background(), func(context.Context) error {
				n, err := number(r.try(log, "LLEN", log))
				if err == nil {
					_, err = r.try(log, "RPUSH", log, fmt.Sprintf("%d was there before me", n))
				}
				return err
			})
			if err != nil {
				t.Errorf("Do() = %v", err)
			}
		}()
	}
	wg.Wait()
	got := r.texts(log, "LRANGE", log, 0, -1)
	if len(got) != 2 || got[0] != "0 was there before me" || got[1] != "1 was there before me" {
		t.Errorf("log = %q; want each holder to see the writes before it", got)
	}
}

// The gem's fourth test: a value someone else wrote while we held the lock
// survives our release, which reports the loss.
func mutexNotOverwritten(t *testing.T, d Deployment) {
	r := newRig(t, d)
	m := mustNew(t, r.client(), orders.Order{N: 1})
	err := m.Do(context.Background(), func(context.Context) error {
		r.do(m.Name(), "SET", m.Name(), "someone else")
		return nil
	})
	if !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Do() = %v; want ErrNotHeld", err)
	}
	if v := r.text(m.Name(), "GET", m.Name()); v != "someone else" {
		t.Errorf("value after release = %q; want \"someone else\"", v)
	}
}

// Sixteen goroutines in two Clients take fifty locks in turn, each around a
// read-modify-write of the lock's counter that is not atomic: the lock alone
// makes every count exact, and each lock's fences rise from holder to
// holder. The lock names hash to many cluster slots. With shared, the
// goroutines of a Client share its one Mutex of each lock.
func mutexExclusion(t *testing.T, d Deployment) {
	const clients, workers, names = 2, 8, 50
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			r := newRig(t, d)
			opt := uncomplicated.WithTimeout(2 * time.Second)
			tallies := make([]tally, names)
			for i, m := range mutexes(t, r.client(opt), names) {
				tallies[i] = tally{name: m.Name(), counter: m.Name() + ":counter", fences: map[uint64]bool{}}
				r.do(tallies[i].counter, "SET", tallies[i].counter, 0)
			}
			var wg sync.WaitGroup
			for range clients {
				c := r.client(opt)
				sharedMs := mutexes(t, c, names)
				for range workers {
					ms := sharedMs
					if !shared {
						ms = mutexes(t, c, names)
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i, m := range ms {
							err := m.Do(context.Background(), func(context.Context) error {
								leave := tallies[i].enter(m.Fence())
								defer leave()
								return r.increment(tallies[i].counter)
							})
							if err != nil {
								t.Errorf("Do() = %v", err)
								return
							}
						}
					}()
				}
			}
			wg.Wait()
			for i := range tallies {
				x := &tallies[i]
				n := r.number(x.counter, "GET", x.counter)
				if n != clients*workers || x.overlaps.Load() != 0 || x.falls.Load() != 0 || len(x.fences) != clients*workers {
					t.Errorf("%s: counter = %d, overlaps = %d, fences not above the last = %d, distinct fences = %d; want %d, 0, 0, %[6]d",
						x.name, n, x.overlaps.Load(), x.falls.Load(), len(x.fences), clients*workers)
				}
				if n := r.llen(r.key("queue", x.name)); n != 0 {
					t.Errorf("%s: %d entries left in the queue; want 0", x.name, n)
				}
			}
		})
	}
}

// tally is what the holders of one lock of mutexExclusion saw.
type tally struct {
	name     string
	counter  string // the key of the lock's counter
	inside   atomic.Int32
	overlaps atomic.Int32  // holders that found another inside
	falls    atomic.Int32  // holders whose fence was not above the last one's
	last     atomic.Uint64 // the fence of the last holder in
	mu       sync.Mutex    // guards fences
	fences   map[uint64]bool
}

// enter records a holder with fence coming in, and returns its way out.
func (x *tally) enter(fence uint64) (leave func()) {
	if x.inside.Add(1) != 1 {
		x.overlaps.Add(1)
	}
	if fence <= x.last.Swap(fence) {
		x.falls.Add(1)
	}
	x.mu.Lock()
	x.fences[fence] = true
	x.mu.Unlock()
	return func() { x.inside.Add(-1) }
}

// mutexes returns the Mutexes of orders 0 to n-1 on c.
func mutexes(t *testing.T, c *uncomplicated.Client, n int) []*uncomplicated.Mutex {
	t.Helper()
	ms := make([]*uncomplicated.Mutex, n)
	for i := range ms {
		ms[i] = mustNew(t, c, orders.Order{N: int64(i)})
	}
	return ms
}

// increment reads, pauses and writes back: a lost update without the lock.
func (r *rig) increment(key string) error {
	n, err := number(r.try(key, "GET", key))
	if err != nil {
		return err
	}
	time.Sleep(100 * time.Microsecond)
	_, err = r.try(key, "SET", key, n+1)
	return err
}

func mutexTryLock(t *testing.T, d Deployment) {
	r := newRig(t, d)
	opts := []uncomplicated.Option{uncomplicated.WithTakeOver(true)}
	a := mustNew(t, r.client(append(opts, uncomplicated.WithLease(0))...), orders.Order{N: 1})
	b := mustNew(t, r.client(opts...), orders.Order{N: 1})
	ctx := context.Background()
	if ok, err := a.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock() on a free lock = %v, %v; want true, nil", ok, err)
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Errorf("TryLock() on a held lock = %v, %v; want false, nil", ok, err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Errorf("a.Unlock() = %v; want nil: TryLock never takes over", err)
	}
}

// Lease rules as real Redis keeps them: no TTL with WithLease(0); Refresh
// restarts the lease and rotates the token; an expired lock is lost.
func mutexLease(t *testing.T, d Deployment) {
	r := newRig(t, d)
	ctx := context.Background()
	forever := mustNew(t, r.client(uncomplicated.WithLease(0)), orders.Order{N: 1})
	mustLock(t, forever)
	if pttl := r.number(forever.Name(), "PTTL", forever.Name()); pttl != -1 {
		t.Errorf("PTTL with WithLease(0) = %d; want -1", pttl)
	}

	m := mustNew(t, r.client(uncomplicated.WithLease(300*time.Millisecond)), orders.Order{N: 2})
	mustLock(t, m)
	fence := m.Fence()
	before := r.text(m.Name(), "GET", m.Name())
	time.Sleep(200 * time.Millisecond)
	if err := m.Refresh(ctx); err != nil {
		t.Fatalf("Refresh() = %v", err)
	}
	after := r.text(m.Name(), "GET", m.Name())
	if pttl := r.number(m.Name(), "PTTL", m.Name()); pttl <= 200 || after == before {
		t.Errorf("after Refresh: PTTL %d, token changed %v; want over 200 and true", pttl, after != before)
	}
	time.Sleep(400 * time.Millisecond)
	if err := m.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Unlock() after the lease = %v; want ErrNotHeld", err)
	}
	other := mustNew(t, r.client(), orders.Order{N: 2})
	if ok, err := other.TryLock(ctx); !ok || err != nil || other.Fence() <= fence {
		t.Errorf("TryLock() after the lease = %v, %v, fence %d; want true, nil, above the expired hold's %d", ok, err, other.Fence(), fence)
	}
}

// Each hold's fence is at least Redis's clock in microseconds at its grant
// and above every earlier hold's; the holder's key carries it, "<token>
// <fence>", and is all a held Mutex keeps in Redis: a released one keeps
// nothing.
func mutexFences(t *testing.T, d Deployment) {
	r := newRig(t, d)
	m := mustNew(t, r.client(), orders.Order{N: 42})
	var last uint64
	for i := 1; i <= 3; i++ {
		before := r.clock(m.Name())
		mustLock(t, m)
		if f := m.Fence(); f <= last || f < before {
			t.Errorf("Fence() of hold %d = %d; want above %d and at least Redis's clock, %d", i, f, last, before)
		}
		last = m.Fence()
		if v := r.text(m.Name(), "GET", m.Name()); !strings.HasSuffix(v, " "+strconv.FormatUint(last, 10)) {
			t.Errorf("lock key = %q; want the token and the fence %d", v, last)
		}
		if keys := r.leftovers(m.Name()); len(keys) != 1 {
			t.Errorf("keys of the held lock = %q; want its lock key alone", keys)
		}
		if err := m.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock() = %v", err)
		}
		if keys := r.leftovers(m.Name()); len(keys) != 0 {
			t.Errorf("keys of the released lock = %q; want none", keys)
		}
	}
}
