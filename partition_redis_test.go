package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A holder cut off from Redis (its proxy relays nothing and closes
// nothing) under a 3s lease refreshed every second learns of its loss
// before Redis frees its lock: fn's ctx is cancelled while the key still
// has at least 30ms to live, in each of three holds, and Do returns within
// 1s of fn with ErrLost, not the deadline of a release that cannot get
// through.
func TestRedis_partitionedHolderKnowsFirst(t *testing.T) {
	s := redistest.Start(t)
	p := redistest.StartProxy(t, s.Addr)
	client := uncomplicated.NewClient(redigo.New(redistest.Pool(t, p.Addr())),
		uncomplicated.WithLease(3*time.Second), uncomplicated.WithAutoRefresh(time.Second))
	t.Cleanup(func() { _ = client.Close() })
	t.Cleanup(func() { p.Blackhole(false) }) // first, so that Close's clean-ups get through

	const holders = 3
	type result struct {
		pttl      int64         // the key's time to live when fn's ctx ended, in ms
		afterFn   time.Duration // from fn's return to Do's
		err       error
		fnCause   error
		cancelled bool
	}
	holding, results := make(chan struct{}, holders), make(chan result, holders)
	for i := range holders {
		m := mustNew(t, client, Order{int64(700 + i)})
		go func() {
			var r result
			var returned time.Time
			r.err = m.Do(context.Background(), func(ctx context.Context) error {
				holding <- struct{}{}
				select {
				case <-ctx.Done():
					r.pttl, _ = redis.Int64(s.Do(t, "PTTL", m.Name()), nil)
					r.cancelled, r.fnCause = true, context.Cause(ctx)
				case <-time.After(10 * time.Second):
				}
				returned = time.Now()
				return ctx.Err()
			})
			r.afterFn = time.Since(returned)
			results <- r
		}()
	}
	for range holders {
		<-holding
	}
	time.Sleep(1500 * time.Millisecond) // a Refresh got through; the next will not
	p.Blackhole(true)
	for i := range holders {
		var r result
		select {
		case r = <-results:
		case <-time.After(15 * time.Second):
			t.Fatal("Do still running 15s after the partition")
		}
		name := fmt.Sprintf("hold %d", i)
		switch {
		case !r.cancelled:
			t.Errorf("%s: fn's ctx not cancelled within 10s of the partition", name)
		case r.pttl < 30:
			t.Errorf("%s: fn's ctx cancelled with %dms of the key's life left; want at least 30ms", name, r.pttl)
		case !errors.Is(r.fnCause, uncomplicated.ErrLost):
			t.Errorf("%s: fn's ctx cause = %v; want ErrLost", name, r.fnCause)
		}
		if !errors.Is(r.err, uncomplicated.ErrLost) || errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("%s: Do() = %v; want ErrLost, and no deadline: the caller's ctx has none", name, r.err)
		}
		if r.afterFn > time.Second {
			t.Errorf("%s: Do returned %v after fn; want within 1s", name, r.afterFn)
		}
		t.Logf("%s: %dms of the key's life left when fn's ctx ended; Do returned %v after fn", name, r.pttl, r.afterFn.Round(time.Millisecond))
	}
}

// As TestRedis_partitionedHolderKnowsFirst, with the holder's CPUs busy (two
// spinning goroutines per CPU, so that its timers fire late) and the cut
// at any moment between refreshes: eight holders, each begun at another
// point of the refresh period, are cut off at once. fn's ctx ends at least
// 30ms before the key's PEXPIRETIME, by the machine's one clock, for each.
func TestRedis_partitionedBusyHolderKnowsFirst(t *testing.T) {
	s := redistest.Start(t)
	p := redistest.StartProxy(t, s.Addr)
	client := uncomplicated.NewClient(redigo.New(redistest.Pool(t, p.Addr())),
		uncomplicated.WithLease(3*time.Second), uncomplicated.WithAutoRefresh(time.Second))
	t.Cleanup(func() { _ = client.Close() })
	t.Cleanup(func() { p.Blackhole(false) })
	redistest.BusyCPUs(t, 2)

	const holders = 8
	type result struct {
		name  string
		ended time.Time // when fn's ctx ended
		err   error
	}
	results := make(chan result, holders)
	for i := range holders {
		m := mustNew(t, client, Order{int64(720 + i)})
		go func() {
			r := result{name: m.Name()}
			r.err = m.Do(context.Background(), func(ctx context.Context) error {
				select {
				case <-ctx.Done():
					r.ended = time.Now()
				case <-time.After(15 * time.Second):
				}
				return nil
			})
			results <- r
		}()
		time.Sleep(time.Second / holders) // the next one's refreshes come later in the period
	}
	time.Sleep(500 * time.Millisecond)
	p.Blackhole(true)
	time.Sleep(50 * time.Millisecond) // a Refresh that got through before has run
	expires := map[string]int64{}     // by lock: PEXPIRETIME, which no Refresh changes now
	for i := range holders {
		name := fmt.Sprintf("lock:uncomplicated_test.Order:%d", 720+i)
		expires[name], _ = redis.Int64(s.Do(t, "PEXPIRETIME", name), nil)
	}
	for range holders {
		var r result
		select {
		case r = <-results:
		case <-time.After(20 * time.Second):
			t.Fatal("Do still running 20s after the partition")
		}
		at := expires[r.name]
		switch {
		case r.ended.IsZero():
			t.Errorf("%s: fn's ctx not cancelled within 15s", r.name)
		case at < 0:
			t.Errorf("%s: PEXPIRETIME %d 50ms after the partition", r.name, at)
		case at-r.ended.UnixMilli() < 30:
			t.Errorf("%s: fn's ctx ended %dms before the key expired; want at least 30ms", r.name, at-r.ended.UnixMilli())
		default:
			t.Logf("%s: fn's ctx ended %dms before the key expired", r.name, at-r.ended.UnixMilli())
		}
		if !errors.Is(r.err, uncomplicated.ErrLost) {
			t.Errorf("%s: Do() = %v; want ErrLost", r.name, r.err)
		}
	}
}
