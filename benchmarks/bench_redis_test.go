package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// BenchmarkUncontended times one lock+unlock of each Redis row's lock by
// one goroutine: RLock+RUnlock and Acquire+Release for the RW read and
// Semaphore rows; the cluster row's on a Cluster of its own.
func BenchmarkUncontended(b *testing.B) {
	s := redistest.Shared(b)
	cfg, err := parseFlags(nil, io.Discard) // the defaults, for the permits
	if err != nil {
		b.Fatal(err)
	}
	var cluster *redistest.Cluster // started for the first cluster row
	for _, r := range allRows() {
		if r.inProcess || r.floor {
			continue
		}
		addr := s.Addr
		if r.cluster {
			if cluster == nil {
				cluster = redistest.StartCluster(b, clusterMasters, 0)
			}
			addr = cluster.Masters[0].Addr
		}
		b.Run(r.name, func(b *testing.B) {
			lockers, closeAll, err := r.open(addr, r.key(), 1, cfg.semPermits())
			if err != nil {
				b.Fatal(err)
			}
			defer closeAll()
			if err := warmUp(lockers); err != nil {
				b.Fatal(err)
			}
			l := lockers[0]
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel() // after the last Unlock: rueidislock ties holds to ctx
			lockUnlock(b, ctx, l)
		})
	}
}

// BenchmarkUncontendedBackground is BenchmarkUncontended/uncomplicated with
// context.Background(), which redigo runs without a goroutine per call.
func BenchmarkUncontendedBackground(b *testing.B) {
	c := backgroundClient(b)
	m, err := uncomplicated.New(c, uncomplicated.Named("bench-background"))
	if err != nil {
		b.Fatal(err)
	}
	lockUnlock(b, context.Background(), m)
}

// BenchmarkUncontendedNoCommandTimeout is BenchmarkUncontendedBackground
// and BenchmarkUncontended/uncomplicated with WithCommandTimeout(0): what
// bounding every call to Redis costs.
func BenchmarkUncontendedNoCommandTimeout(b *testing.B) {
	c := backgroundClient(b, uncomplicated.WithCommandTimeout(0))
	m, err := uncomplicated.New(c, uncomplicated.Named("bench-no-command-timeout"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Background", func(b *testing.B) { lockUnlock(b, context.Background(), m) })
	b.Run("cancellable", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		lockUnlock(b, ctx, m)
	})
}

// BenchmarkUncontendedBackgroundRLock is BenchmarkUncontended/uncomplicated_RW_read
// (RLock+RUnlock) with context.Background().
func BenchmarkUncontendedBackgroundRLock(b *testing.B) {
	c := backgroundClient(b)
	rw, err := uncomplicated.NewRW(c, uncomplicated.Named("bench-background-rw"))
	if err != nil {
		b.Fatal(err)
	}
	lockUnlock(b, context.Background(), readLocker{rw})
}

// BenchmarkUncontendedBackgroundAcquire is
// BenchmarkUncontended/uncomplicated_Semaphore (Acquire+Release) with
// context.Background().
func BenchmarkUncontendedBackgroundAcquire(b *testing.B) {
	c := backgroundClient(b)
	s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named("bench-background-semaphore"), 4)
	if err != nil {
		b.Fatal(err)
	}
	lockUnlock(b, context.Background(), &semaphoreLocker{s: s})
}

// backgroundClient returns a Client on the shared server with opts, closed
// with b.
func backgroundClient(b *testing.B, opts ...uncomplicated.Option) *uncomplicated.Client {
	pool := newPool(redistest.Shared(b).Addr, 2)
	c := uncomplicated.NewClient(redigo.New(pool), opts...)
	b.Cleanup(func() {
		_ = c.Close()
		_ = pool.Close()
	})
	return c
}

// lockUnlock is the benchmark loop: one Lock and one Unlock per op.
func lockUnlock(b *testing.B, ctx context.Context, l locker) {
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
