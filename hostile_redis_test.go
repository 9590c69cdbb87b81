package uncomplicated_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// Options at the ends of their valid ranges make mutexes that lock,
// refresh and unlock, on miniredis and on a real redis-server.
func TestHostile_optionExtremes(t *testing.T) {
	cases := []struct {
		name string
		opt  uncomplicated.Option
		pttl time.Duration // the lock key's TTL after Lock, within 10%; -1: none
	}{
		{"WithTimeout(1ns)", uncomplicated.WithTimeout(1), time.Millisecond},
		{"WithTimeout(MaxInt64)", uncomplicated.WithTimeout(math.MaxInt64), math.MaxInt64},
		{"WithLease(0)", uncomplicated.WithLease(0), -1 * time.Millisecond},
		{"WithLease(1ns)", uncomplicated.WithLease(1), time.Millisecond},
		{"WithLease(MaxInt64)", uncomplicated.WithLease(math.MaxInt64), math.MaxInt64},
		{"WithTicks(1)", uncomplicated.WithTicks(1), 2 * limits.Timeout},
		{"WithTicks(MaxInt)", uncomplicated.WithTicks(math.MaxInt), 2 * limits.Timeout},
		{"WithTakeOver(true)", uncomplicated.WithTakeOver(true), 2 * limits.Timeout},
		{"WithClock(nil)", uncomplicated.WithClock(nil), 2 * limits.Timeout},
		{"WithLogger(nil)", uncomplicated.WithLogger(nil), 2 * limits.Timeout},
		{"nil Option", nil, 2 * limits.Timeout},
		{"WithPrefix odd", uncomplicated.WithPrefix("a*b?[c]\x00:"), 2 * limits.Timeout},
	}
	backends := []struct {
		name string
		pool func(t *testing.T) *redis.Pool
	}{
		{"miniredis", func(t *testing.T) *redis.Pool { return newHostileRig(t).pool }},
		{"redis-server", func(t *testing.T) *redis.Pool { return redistest.Shared(t).Pool(t) }},
	}
	for _, b := range backends {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				if b.name == "miniredis" && tc.pttl == math.MaxInt64 {
					t.Skip("miniredis: a PX of 9223372036855 ms overflows its time.Duration TTL and the key expires at once; real Redis keeps it")
				}
				pool := b.pool(t)
				client := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithPrefix(fmt.Sprintf("hostile%d", prefixes.Add(1))))
				t.Cleanup(func() { _ = client.Close() })
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				m, err := uncomplicated.New(client, Order{1}, tc.opt)
				if err != nil {
					t.Fatalf("New(%s) = %v; want a valid option", tc.name, err)
				}
				if err := noPanic(t, "Lock", func() error { return m.Lock(ctx) }); err != nil {
					t.Fatalf("Lock() = %v", err)
				}
				if tc.pttl > 0 && tc.pttl <= time.Millisecond { // a 1 ms lease may be gone already
					return
				}
				conn := pool.Get()
				defer conn.Close()
				pttl, err := redis.Int64(conn.Do("PTTL", m.Name()))
				wantMs := tc.pttl.Milliseconds()
				if tc.pttl == math.MaxInt64 {
					wantMs++ // rounded up
				}
				ok := pttl >= wantMs*9/10 && pttl <= wantMs
				if tc.pttl < 0 {
					ok = pttl == -1 // no expiry
				}
				if err != nil || !ok {
					t.Errorf("PTTL = %d, %v; want about %d", pttl, err, wantMs)
				}
				if err := m.Refresh(ctx); err != nil {
					t.Errorf("Refresh() = %v", err)
				}
				if err := m.Unlock(ctx); err != nil {
					t.Errorf("Unlock() = %v", err)
				}
			})
		}
	}
}
