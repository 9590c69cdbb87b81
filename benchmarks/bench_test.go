package main

import (
	"context"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// BenchmarkUncontended times one lock+unlock of each Redis row's lock by
// one goroutine.
func BenchmarkUncontended(b *testing.B) {
	s := redistest.Shared(b)
	for _, r := range allRows() {
		if r.inProcess {
			continue
		}
		b.Run(r.name, func(b *testing.B) {
			lockers, closeAll, err := r.open(s.Addr, r.key(), 1)
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
	pool := newPool(redistest.Shared(b).Addr)
	defer pool.Close()
	c := uncomplicated.NewClient(pool)
	defer c.Close()
	m, err := c.Named("bench-background")
	if err != nil {
		b.Fatal(err)
	}
	lockUnlock(b, context.Background(), m)
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
