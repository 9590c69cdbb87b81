package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

// Integration tests on a real redis-server that the tests start on a free
// loopback port: TTLs, scripts and concurrency as Redis really has them.
// They skip when redis-server is not on PATH, and fail instead when
// UNCOMPLICATED_REQUIRE_REDIS=1.

var prefixes atomic.Int64

// rig is a test's corner of the shared server: a prefix of its own, so that
// tests never meet each other's locks, and a connection for checks.
type rig struct {
	t      *testing.T
	pool   *redis.Pool
	prefix string
	conn   redis.Conn
}

func newRig(t *testing.T) *rig {
	t.Helper()
	pool := redistest.Shared(t).Pool(t)
	conn, err := pool.GetContext(context.Background())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &rig{t: t, pool: pool, prefix: fmt.Sprintf("t%d", prefixes.Add(1)), conn: conn}
}

// client returns a Client with opts, as one process would have.
func (r *rig) client(opts ...uncomplicated.Option) *uncomplicated.Client {
	c := uncomplicated.NewClient(r.pool, append([]uncomplicated.Option{uncomplicated.WithPrefix(r.prefix)}, opts...)...)
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (r *rig) do(cmd string, args ...any) any {
	r.t.Helper()
	reply, err := r.conn.Do(cmd, args...)
	if err != nil {
		r.t.Fatalf("%s: %v", cmd, err)
	}
	return reply
}

// The gem's first test: the key exists while the lock is held, and is gone
// after; its TTL is the lease, by default twice the timeout.
func TestRedis_lockWorks(t *testing.T) {
	r := newRig(t)
	m := mustNew(t, r.client(uncomplicated.WithTimeout(time.Minute)), Order{1})
	err := m.Do(context.Background(), func(context.Context) error {
		if pttl, _ := redis.Int64(r.do("PTTL", m.Name()), nil); pttl <= 119_000 || pttl > 120_000 {
			t.Errorf("PTTL inside Do = %d; want just under 120000, twice the timeout", pttl)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do() = %v", err)
	}
	if n, _ := redis.Int(r.do("EXISTS", m.Name()), nil); n != 0 {
		t.Errorf("EXISTS after Do = %d; want 0", n)
	}
}

// The gem's second test: two processes locking one object run one after
// the other, and the second sees what the first wrote.
func TestRedis_sequentialAccess(t *testing.T) {
	r := newRig(t)
	opt := uncomplicated.WithTimeout(2 * time.Second)
	a, b := mustNew(t, r.client(opt), Order{1}), mustNew(t, r.client(opt), Order{1})
	log := a.Name() + ":log"
	var wg sync.WaitGroup
	for _, m := range []*uncomplicated.Mutex{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := m.Do(context.Background(), func(ctx context.Context) error {
				conn, err := r.pool.GetContext(ctx)
				if err != nil {
					return err
				}
				defer conn.Close()
				n, err := redis.Int(conn.Do("LLEN", log))
				if err == nil {
					_, err = conn.Do("RPUSH", log, fmt.Sprintf("%d was there before me", n))
				}
				return err
			})
			if err != nil {
				t.Errorf("Do() = %v", err)
			}
		}()
	}
	wg.Wait()
	got, _ := redis.Strings(r.do("LRANGE", log, 0, -1), nil)
	if len(got) != 2 || got[0] != "0 was there before me" || got[1] != "1 was there before me" {
		t.Errorf("log = %q; want each holder to see the writes before it", got)
	}
}

// The gem's third test: a key with no TTL that nobody releases makes Lock
// fail once the timeout has passed, and stays as it was.
func TestRedis_failOnStuckHolder(t *testing.T) {
	r := newRig(t)
	m := mustNew(t, r.client(uncomplicated.WithTimeout(300*time.Millisecond)), Order{1})
	r.do("SET", m.Name(), "1")
	start := time.Now()
	err := m.Lock(context.Background())
	if !errors.Is(err, uncomplicated.ErrStale) {
		t.Fatalf("Lock() = %v; want ErrStale", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("Lock() failed after %v; want at least the timeout", took)
	}
	if v, _ := redis.String(r.do("GET", m.Name()), nil); v != "1" {
		t.Errorf("stuck value = %q; want \"1\" untouched", v)
	}
}

// The gem's fourth test: a value someone else wrote while we held the lock
// survives our release, which reports the loss.
func TestRedis_notOverwritten(t *testing.T) {
	r := newRig(t)
	m := mustNew(t, r.client(), Order{1})
	err := m.Do(context.Background(), func(context.Context) error {
		r.do("SET", m.Name(), "someone else")
		return nil
	})
	if !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Do() = %v; want ErrNotHeld", err)
	}
	if v, _ := redis.String(r.do("GET", m.Name()), nil); v != "someone else" {
		t.Errorf("value after release = %q; want \"someone else\"", v)
	}
}

func TestRedis_takeOver(t *testing.T) {
	r := newRig(t)
	m := mustNew(t, r.client(uncomplicated.WithTimeout(300*time.Millisecond), uncomplicated.WithStalePolicy(uncomplicated.TakeOver),
		uncomplicated.WithLease(10*time.Second)), Order{1})
	r.do("SET", m.Name(), "1")
	if err := m.Lock(context.Background()); err != nil {
		t.Fatalf("Lock() = %v; want the stuck holder taken over", err)
	}
	if v, _ := redis.String(r.do("GET", m.Name()), nil); v == "1" || len(v) != 22 {
		t.Errorf("value after take-over = %q; want our 22-character token", v)
	}
	if pttl, _ := redis.Int64(r.do("PTTL", m.Name()), nil); pttl <= 9_000 || pttl > 10_000 {
		t.Errorf("PTTL after take-over = %d; want the lease, 10000", pttl)
	}
	if f := m.Fence(); f != 1 {
		t.Errorf("Fence() = %d; want 1", f)
	}
	if err := m.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock() = %v", err)
	}
}

// Eight goroutines, fifty rounds each, around a read-modify-write of a
// counter in Redis that is not atomic: the lock alone makes it exact.
func TestRedis_mutualExclusion(t *testing.T) {
	const workers, rounds = 8, 50
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			r := newRig(t)
			opts := []uncomplicated.Option{uncomplicated.WithTimeout(2 * time.Second)}
			one := mustNew(t, r.client(opts...), Order{1})
			counter := one.Name() + ":counter"
			var inside, overlaps atomic.Int32
			fences := make(chan uint64, workers*rounds)
			var wg sync.WaitGroup
			for range workers {
				m := one
				if !shared {
					m = mustNew(t, r.client(opts...), Order{1})
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range rounds {
						err := m.Do(context.Background(), func(ctx context.Context) error {
							if inside.Add(1) != 1 {
								overlaps.Add(1)
							}
							defer inside.Add(-1)
							fences <- m.Fence()
							return increment(ctx, r.pool, counter)
						})
						if err != nil {
							t.Errorf("Do() = %v", err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(fences)
			if n, _ := redis.Int(r.do("GET", counter), nil); n != workers*rounds || overlaps.Load() != 0 {
				t.Errorf("counter = %d, overlaps = %d; want %d, 0", n, overlaps.Load(), workers*rounds)
			}
			seen := map[uint64]bool{}
			for f := range fences {
				seen[f] = true
			}
			if len(seen) != workers*rounds {
				t.Errorf("%d distinct fences; want %d", len(seen), workers*rounds)
			}
			if n := r.queueLen(one); n != 0 {
				t.Errorf("%d entries left in the queue; want 0", n)
			}
		})
	}
}

// increment reads, pauses and writes back: a lost update without the lock.
func increment(ctx context.Context, pool *redis.Pool, key string) error {
	conn, err := pool.GetContext(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	n, err := redis.Int(conn.Do("GET", key))
	if err != nil && !errors.Is(err, redis.ErrNil) {
		return err
	}
	time.Sleep(100 * time.Microsecond)
	_, err = conn.Do("SET", key, n+1)
	return err
}

func TestRedis_TryLock(t *testing.T) {
	r := newRig(t)
	opts := []uncomplicated.Option{uncomplicated.WithStalePolicy(uncomplicated.TakeOver)}
	a := mustNew(t, r.client(append(opts, uncomplicated.WithLease(0))...), Order{1})
	b := mustNew(t, r.client(opts...), Order{1})
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
func TestRedis_lease(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	forever := mustNew(t, r.client(uncomplicated.WithLease(0)), Order{1})
	mustLock(t, forever)
	if pttl, _ := redis.Int64(r.do("PTTL", forever.Name()), nil); pttl != -1 {
		t.Errorf("PTTL with WithLease(0) = %d; want -1", pttl)
	}

	m := mustNew(t, r.client(uncomplicated.WithLease(300*time.Millisecond)), Order{2})
	mustLock(t, m)
	before, _ := redis.String(r.do("GET", m.Name()), nil)
	time.Sleep(200 * time.Millisecond)
	if err := m.Refresh(ctx); err != nil {
		t.Fatalf("Refresh() = %v", err)
	}
	after, _ := redis.String(r.do("GET", m.Name()), nil)
	if pttl, _ := redis.Int64(r.do("PTTL", m.Name()), nil); pttl <= 200 || after == before {
		t.Errorf("after Refresh: PTTL %d, token changed %v; want over 200 and true", pttl, after != before)
	}
	time.Sleep(400 * time.Millisecond)
	if err := m.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Unlock() after the lease = %v; want ErrNotHeld", err)
	}
	other := mustNew(t, r.client(), Order{2})
	if ok, err := other.TryLock(ctx); !ok || err != nil || other.Fence() != 2 {
		t.Errorf("TryLock() after the lease = %v, %v, fence %d; want true, nil, 2", ok, err, other.Fence())
	}
}

// The fence counter never expires; its cost is one small key per lock name.
func TestRedis_fenceCounter(t *testing.T) {
	r := newRig(t)
	m := mustNew(t, r.client(), Order{42})
	mustLock(t, m)
	key := fenceKeyOf(r.prefix, m)
	if ttl, _ := redis.Int64(r.do("PTTL", key), nil); ttl != -1 {
		t.Errorf("PTTL of %s = %d; want -1, no expiry", key, ttl)
	}
	bytes, _ := redis.Int64(r.do("MEMORY", "USAGE", key), nil)
	t.Logf("MEMORY USAGE %s = %d bytes", key, bytes)
	if bytes <= 0 || bytes > 200 {
		t.Errorf("MEMORY USAGE of the fence counter = %d; want a small key", bytes)
	}
}

// A Redis that refuses connections, or accepts and never answers, ends Lock
// by its ctx deadline: no hang.
func TestRedis_unreachable(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		silent.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused.Close()

	for name, addr := range map[string]string{"silent": silent.Addr().String(), "refused": refused.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr)
			}}
			defer pool.Close()
			m, err := uncomplicated.NewClient(pool).Named("x")
			if err != nil {
				t.Fatal(err)
			}
			const limit = 200 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			start := time.Now()
			err = m.Lock(ctx)
			if took := time.Since(start); err == nil || took > limit+100*time.Millisecond {
				t.Errorf("Lock() = %v after %v; want an error within %v", err, took, limit)
			}
			if name == "silent" && !(errors.Is(err, uncomplicated.ErrNotObtained) && errors.Is(err, context.DeadlineExceeded)) {
				t.Errorf("Lock() = %v; want ErrNotObtained and context.DeadlineExceeded", err)
			}
			if m.Fence() != 0 {
				t.Errorf("Fence() = %d after a failed Lock", m.Fence())
			}
		})
	}
}

// After Close, Lock reports ErrClosed, and Unlock still releases.
func TestRedis_closedClient(t *testing.T) {
	r := newRig(t)
	c := r.client()
	m := mustNew(t, c, Order{1})
	mustLock(t, m)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(context.Background()); !errors.Is(err, uncomplicated.ErrClosed) || !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Errorf("Lock() after Close = %v; want ErrClosed and ErrNotObtained", err)
	}
	if err := m.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrClosed) || errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Unlock() after Close = %v; want ErrClosed alone", err)
	}
	if n, _ := redis.Int(r.do("EXISTS", m.Name()), nil); n != 0 {
		t.Errorf("EXISTS after Unlock = %d; want 0: Unlock releases after Close too", n)
	}
}

// On real Redis too, a fence counter that is not a number fails Lock at once
// and the script undoes its SET.
func TestRedis_brokenFence(t *testing.T) {
	r := newRig(t)
	m := mustNew(t, r.client(), Order{1})
	r.do("SET", fenceKeyOf(r.prefix, m), "not a number")
	if err := m.Lock(context.Background()); err == nil {
		t.Fatal("Lock() = nil; want the fence counter's error")
	}
	if n, _ := redis.Int(r.do("EXISTS", m.Name()), nil); n != 0 {
		t.Errorf("lock key left behind by a failed acquisition")
	}
}
