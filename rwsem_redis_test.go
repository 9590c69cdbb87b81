package uncomplicated_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// Integration tests of the RWMutex and the Semaphore on a real
// redis-server: exclusion under concurrency, writer preference, and leases
// that Redis's own clock ends.

// Never a reader with a writer, never two writers: writers and readers in
// three clients, each checking on entry what the others are doing.
func TestRedis_RWMutex_exclusion(t *testing.T) {
	r := newRig(t)
	var readers, writers, maxReaders atomic.Int64
	var violations, reads, writes atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for c := range 3 {
		client := r.client(uncomplicated.WithTimeout(10 * time.Second))
		for g := range 5 {
			rw, err := client.NamedRW("doc")
			if err != nil {
				t.Fatal(err)
			}
			writer := g < 2
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					var err error
					if writer {
						err = rw.Do(ctx, func(context.Context) error {
							if writers.Add(1) != 1 || readers.Load() != 0 {
								violations.Add(1)
							}
							time.Sleep(time.Millisecond)
							writers.Add(-1)
							writes.Add(1)
							return nil
						})
					} else {
						err = rw.RDo(ctx, func(context.Context) error {
							n := readers.Add(1)
							if writers.Load() != 0 {
								violations.Add(1)
							}
							for m := maxReaders.Load(); n > m && !maxReaders.CompareAndSwap(m, n); m = maxReaders.Load() {
							}
							time.Sleep(2 * time.Millisecond)
							readers.Add(-1)
							reads.Add(1)
							return nil
						})
					}
					if err != nil && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("client %d goroutine %d: %v", c, g, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("%d reads, %d writes, at most %d readers at once", reads.Load(), writes.Load(), maxReaders.Load())
	if n := violations.Load(); n != 0 {
		t.Errorf("%d sections shared the lock with a writer", n)
	}
	if writes.Load() == 0 || reads.Load() == 0 {
		t.Errorf("%d reads and %d writes; want both", reads.Load(), writes.Load())
	}
	if maxReaders.Load() < 2 {
		t.Errorf("at most %d readers at once; want readers to share the lock", maxReaders.Load())
	}
}

// A steady stream of readers, always at least one inside, cannot starve a
// writer: each Lock waits only for the readers already in.
func TestRedis_RWMutex_writerNotStarved(t *testing.T) {
	r := newRig(t)
	const readHold = 20 * time.Millisecond
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	for i := range 4 {
		rw, err := r.client(uncomplicated.WithTimeout(10 * time.Second)).NamedRW("report")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * readHold / 4) // staggered: the readers overlap
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := rw.RDo(ctx, func(context.Context) error {
					time.Sleep(readHold)
					reads.Add(1)
					return nil
				})
				cancel()
				if err != nil {
					t.Errorf("RDo() = %v", err)
					return
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	time.Sleep(100 * time.Millisecond) // the stream is running

	writer, err := r.client(uncomplicated.WithTimeout(10 * time.Second)).NamedRW("report")
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		err := writer.Lock(ctx)
		waits = append(waits, time.Since(start))
		cancel()
		if err != nil {
			t.Fatalf("Lock() under a stream of readers = %v after %v", err, waits[len(waits)-1])
		}
		time.Sleep(2 * time.Millisecond)
		if err := writer.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock() = %v", err)
		}
		time.Sleep(3 * readHold) // the readers pile in again
	}
	slices.Sort(waits)
	t.Logf("writer waits under %d reads: median %v, max %v", reads.Load(), waits[len(waits)/2], waits[len(waits)-1])
	if max := waits[len(waits)-1]; max > 2*time.Second {
		t.Errorf("max writer wait %v; want well below 2s, as readers hold for %v", max, readHold)
	}
}

// A reader that died frees its share when its lease ends, on Redis's
// clock; so does a permit holder that died.
func TestRedis_crashedHolders(t *testing.T) {
	r := newRig(t)
	const lease = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dead := r.client(uncomplicated.WithLease(lease))
	rw, _ := dead.NamedRW("doc")
	s, _ := dead.NamedSemaphore("pool", 1)
	if err := rw.RLock(ctx); err != nil {
		t.Fatalf("RLock() = %v", err)
	}
	if _, err := s.Acquire(ctx); err != nil {
		t.Fatalf("Acquire() = %v", err)
	}
	start := time.Now()
	_ = dead.Close() // the process dies: nothing is released

	live := r.client(uncomplicated.WithTimeout(10 * time.Second))
	writer, _ := live.NamedRW("doc")
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

func mustNamedSemaphore(t *testing.T, c *uncomplicated.Client, name string, permits int) *uncomplicated.Semaphore {
	t.Helper()
	s, err := c.NamedSemaphore(name, permits)
	if err != nil {
		t.Fatalf("NamedSemaphore(%q, %d) = %v", name, permits, err)
	}
	return s
}

// Never more than N holders, counted exactly, with waiters in four
// clients; and the permits are used.
func TestRedis_Semaphore_neverMoreThanN(t *testing.T) {
	r := newRig(t)
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
func TestRedis_Semaphore_takeOverRace(t *testing.T) {
	r := newRig(t)
	const permits = 2
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stuck := mustNamedSemaphore(t, r.client(uncomplicated.WithLease(0)), "pool", permits)
	var held []*uncomplicated.Permit
	for range permits {
		p, err := stuck.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	key := r.prefix + ":permits:{" + stuck.Name() + "}"
	var inside, most, sections atomic.Int64
	var wg sync.WaitGroup
	for c := range 6 {
		s := mustNamedSemaphore(t, r.client(uncomplicated.WithTimeout(300*time.Millisecond), uncomplicated.WithTicks(10),
			uncomplicated.WithStalePolicy(uncomplicated.TakeOver), uncomplicated.WithLease(5*time.Second)), "pool", permits)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				err := s.Do(ctx, func(context.Context) error {
					n := inside.Add(1)
					defer inside.Add(-1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					if z := zcard(t, r.pool, key); z > permits {
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

func zcard(t *testing.T, pool *redis.Pool, key string) int {
	conn := pool.Get()
	defer conn.Close()
	n, err := redis.Int(conn.Do("ZCARD", key))
	if err != nil {
		t.Errorf("ZCARD: %v", err)
	}
	return n
}

// A permit's lease is on Redis's clock: its score is the server's time
// plus the lease, and a Refresh pushes it on.
func TestRedis_Semaphore_leaseScore(t *testing.T) {
	r := newRig(t)
	const lease = 10 * time.Second
	s := mustNamedSemaphore(t, r.client(uncomplicated.WithLease(lease)), "pool", 1)
	p, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	key := r.prefix + ":permits:{" + s.Name() + "}"
	left := func() time.Duration {
		scores, err := redis.Strings(r.do("ZRANGE", key, 0, -1, "WITHSCORES"), nil)
		if err != nil || len(scores) != 2 {
			t.Fatalf("ZRANGE = %v, %v", scores, err)
		}
		score, _ := strconv.ParseInt(scores[1], 10, 64)
		now, _ := redis.Int64s(r.do("TIME"), nil)
		return time.Duration(score-(now[0]*1000+now[1]/1000)) * time.Millisecond
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
