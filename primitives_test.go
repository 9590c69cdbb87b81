package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Behaviour the three primitives share, tested as a table over them: a
// Mutex, an RWMutex's write lock and a Semaphore of one permit.

// A primitive is one kind of lock, reduced to what the shared tests need.
type primitive struct {
	name string
	// take acquires the lock name of c without waiting, failing the test
	// if it is taken.
	take func(t *testing.T, c *uncomplicated.Client, name string) aHold
	// wait acquires the lock name of c, waiting, and returns its fence.
	wait func(ctx context.Context, c *uncomplicated.Client, name string) (uint64, error)
	// try makes one attempt at the lock name of c, as TryLock does.
	try func(ctx context.Context, c *uncomplicated.Client, name string) (bool, error)
	// do runs fn under a hold of the lock name of c, as Do does.
	do func(ctx context.Context, c *uncomplicated.Client, name string, fn func(context.Context) error) error
	// tryDo runs fn as do does if one attempt gets the lock, as TryDo does.
	tryDo func(ctx context.Context, c *uncomplicated.Client, name string, fn func(context.Context) error) (bool, error)
}

// aHold is one hold of a primitive.
type aHold struct {
	fence   uint64
	refresh func(ctx context.Context) error
	check   func(ctx context.Context) (bool, error) // Held
	release func(ctx context.Context) error         // Unlock or Release
	lost    func() <-chan struct{}
}

var primitives = []primitive{
	{
		name: "Mutex",
		take: func(t *testing.T, c *uncomplicated.Client, name string) aHold {
			t.Helper()
			m := mustNamed(t, c, name)
			if ok, err := m.TryLock(context.Background()); !ok || err != nil {
				t.Fatalf("TryLock() = %v, %v; want true", ok, err)
			}
			return aHold{fence: m.Fence(), refresh: m.Refresh, check: m.Held, release: m.Unlock, lost: m.Lost}
		},
		wait: func(ctx context.Context, c *uncomplicated.Client, name string) (uint64, error) {
			m, err := uncomplicated.New(c, uncomplicated.Named(name))
			if err != nil {
				return 0, err
			}
			err = m.Lock(ctx)
			return m.Fence(), err
		},
		try: func(ctx context.Context, c *uncomplicated.Client, name string) (bool, error) {
			m, err := uncomplicated.New(c, uncomplicated.Named(name))
			if err != nil {
				return false, err
			}
			return m.TryLock(ctx)
		},
		do: func(ctx context.Context, c *uncomplicated.Client, name string, fn func(context.Context) error) error {
			m, err := uncomplicated.New(c, uncomplicated.Named(name))
			if err != nil {
				return err
			}
			return m.Do(ctx, fn)
		},
		tryDo: func(ctx context.Context, c *uncomplicated.Client, name string, fn func(context.Context) error) (bool, error) {
			m, err := uncomplicated.New(c, uncomplicated.Named(name))
			if err != nil {
				return false, err
			}
			return m.TryDo(ctx, fn)
		},
	},
	{
		name: "RWMutex",
		take: func(t *testing.T, c *uncomplicated.Client, name string) aHold {
			t.Helper()
			rw := mustNamedRW(t, c, name)
			if ok, err := rw.TryLock(context.Background()); !ok || err != nil {
				t.Fatalf("TryLock() = %v, %v; want true", ok, err)
			}
			return aHold{fence: rw.Fence(), refresh: rw.Refresh, check: rw.Held, release: rw.Unlock, lost: rw.Lost}
		},
		wait: func(ctx context.Context, c *uncomplicated.Client, name string) (uint64, error) {
			rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
			if err != nil {
				return 0, err
			}
			err = rw.Lock(ctx)
			return rw.Fence(), err
		},
		try: func(ctx context.Context, c *uncomplicated.Client, name string) (bool, error) {
			rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
			if err != nil {
				return false, err
			}
			return rw.TryLock(ctx)
		},
		do: func(ctx context.Context, c *uncomplicated.Client, name string, fn func(context.Context) error) error {
			rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
			if err != nil {
				return err
			}
			return rw.Do(ctx, fn)
		},
		tryDo: func(ctx context.Context, c *uncomplicated.Client, name string, fn func(context.Context) error) (bool, error) {
			rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
			if err != nil {
				return false, err
			}
			return rw.TryDo(ctx, fn)
		},
	},
	{
		name: "Semaphore",
		take: func(t *testing.T, c *uncomplicated.Client, name string) aHold {
			t.Helper()
			s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(name), 1)
			if err != nil {
				t.Fatal(err)
			}
			p, ok, err := s.TryAcquire(context.Background())
			if !ok || err != nil {
				t.Fatalf("TryAcquire() = %v, %v; want a permit", ok, err)
			}
			return aHold{fence: p.Fence(), refresh: p.Refresh, check: p.Held, release: p.Release, lost: p.Lost}
		},
		wait: func(ctx context.Context, c *uncomplicated.Client, name string) (uint64, error) {
			s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(name), 1)
			if err != nil {
				return 0, err
			}
			p, err := s.Acquire(ctx)
			return p.Fence(), err
		},
		try: func(ctx context.Context, c *uncomplicated.Client, name string) (bool, error) {
			s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(name), 1)
			if err != nil {
				return false, err
			}
			_, ok, err := s.TryAcquire(ctx)
			return ok, err
		},
		do: func(ctx context.Context, c *uncomplicated.Client, name string, fn func(context.Context) error) error {
			s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(name), 1)
			if err != nil {
				return err
			}
			return s.Do(ctx, fn)
		},
		tryDo: func(ctx context.Context, c *uncomplicated.Client, name string, fn func(context.Context) error) (bool, error) {
			s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(name), 1)
			if err != nil {
				return false, err
			}
			return s.TryDo(ctx, fn)
		},
	},
}

func mustNamed(t *testing.T, c *uncomplicated.Client, name string, opts ...uncomplicated.Option) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(c, uncomplicated.Named(name), opts...)
	if err != nil {
		t.Fatalf("Named(%q) = %v", name, err)
	}
	return m
}

func mustNamedRW(t *testing.T, c *uncomplicated.Client, name string) *uncomplicated.RWMutex {
	t.Helper()
	rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
	if err != nil {
		t.Fatalf("NamedRW(%q) = %v", name, err)
	}
	return rw
}

// Inside fn of Do, FenceOf tells the hold's fence, also through a ctx
// derived from fn's; outside it tells none.
func TestFenceOf_Do(t *testing.T) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			r := newHostileRig(t)
			ctx := context.Background()
			var last uint64
			for i := 1; i <= 2; i++ {
				err := p.do(ctx, r.client, "job", func(ctx context.Context) error {
					type key struct{}
					if f, ok := uncomplicated.FenceOf(context.WithValue(ctx, key{}, 1)); f <= last || !ok {
						t.Errorf("FenceOf() in Do number %d = %d, %v; want one above %d, true", i, f, ok, last)
					} else {
						last = f
					}
					return nil
				})
				if err != nil {
					t.Fatalf("Do() = %v", err)
				}
			}
			if f, ok := uncomplicated.FenceOf(ctx); f != 0 || ok {
				t.Errorf("FenceOf() outside Do = %d, %v; want 0, false", f, ok)
			}
		})
	}
}

// TryDo runs fn under the hold when one attempt gets the lock, with its
// fence in fn's ctx, and releases it; a held lock runs nothing.
func TestTryDo(t *testing.T) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			r := newHostileRig(t)
			ctx := context.Background()
			var last uint64
			for i := 1; i <= 2; i++ {
				var fence uint64
				ok, err := p.tryDo(ctx, r.client, "job", func(ctx context.Context) error {
					fence, _ = uncomplicated.FenceOf(ctx)
					return errFn
				})
				if !ok || !errors.Is(err, errFn) || fence <= last {
					t.Fatalf("TryDo() number %d = %v, %v, fence %d; want true, fn's error, a fence above %d", i, ok, err, fence, last)
				}
				last = fence
			}
			h := p.take(t, r.client, "job")
			defer func() { _ = h.release(ctx) }()
			ok, err := p.tryDo(ctx, r.client, "job", func(context.Context) error {
				t.Error("fn ran while the lock was held")
				return nil
			})
			if ok || err != nil {
				t.Errorf("TryDo() on a held lock = %v, %v; want false, nil", ok, err)
			}
		})
	}
	rw := mustNamedRW(t, newHostileRig(t).client, "report")
	var fenced bool
	if ok, err := rw.TryRDo(context.Background(), func(ctx context.Context) error { _, fenced = uncomplicated.FenceOf(ctx); return nil }); !ok || err != nil || fenced {
		t.Errorf("TryRDo() = %v, %v, fenced %v; want true, nil, no fence", ok, err, fenced)
	}
	if ok, err := rw.TryLock(context.Background()); !ok || err != nil {
		t.Fatalf("TryLock() = %v, %v", ok, err)
	}
	if ok, err := rw.TryRDo(context.Background(), func(context.Context) error { return nil }); ok || err != nil {
		t.Errorf("TryRDo() under a writer = %v, %v; want false, nil", ok, err)
	}
}

var errFn = errors.New("fn failed")

// A read hold has no fence: inside RDo, FenceOf tells none, even when RDo
// runs inside the fn of another lock's Do.
func TestFenceOf_RDo(t *testing.T) {
	r := newHostileRig(t)
	rw := mustNamedRW(t, r.client, "report")
	check := func(ctx context.Context) error {
		if f, ok := uncomplicated.FenceOf(ctx); f != 0 || ok {
			t.Errorf("FenceOf() in RDo = %d, %v; want 0, false", f, ok)
		}
		return nil
	}
	if err := rw.RDo(context.Background(), check); err != nil {
		t.Fatal(err)
	}
	err := mustNamed(t, r.client, "other").Do(context.Background(), func(ctx context.Context) error {
		return rw.RDo(ctx, check)
	})
	if err != nil {
		t.Fatal(err)
	}
	var none context.Context
	if f, ok := uncomplicated.FenceOf(none); f != 0 || ok {
		t.Errorf("FenceOf(nil) = %d, %v; want 0, false", f, ok)
	}
}

var policies = []bool{false, true}

// With only WithTimeout(d) set, a holder that hangs (never refreshes) is
// found stale d after the waiter first saw it: its lease, twice d, has not
// ended by then. Fail returns ErrStale; TakeOver takes the lock over under
// a higher fence.
func TestDefaultLease_staleAtTheTimeout(t *testing.T) {
	const d = time.Minute
	for _, p := range primitives {
		for _, policy := range policies {
			t.Run(p.name+"/"+fmt.Sprintf("takeover=%v", policy), func(t *testing.T) {
				env := uncomplicatedtest.New(t)
				holder := env.NewClient(uncomplicated.WithTimeout(d))
				held := p.take(t, holder, "report").fence
				env.Advance(d / 4) // the waiter comes later
				waiter := env.NewClient(uncomplicated.WithTimeout(d), uncomplicated.WithTakeOver(policy))
				start := env.Clock.Now()
				done := make(chan waited, 1)
				go func() {
					f, err := p.wait(context.Background(), waiter, "report")
					done <- waited{f, err}
				}()
				env.AwaitWaiters(1)
				env.Advance(d - time.Nanosecond)
				if n := env.Waiters(); n != 1 {
					t.Fatalf("Waiters() a nanosecond before the timeout = %d; want 1", n)
				}
				env.Advance(time.Nanosecond)
				got := recv(t, done)
				if took := env.Clock.Since(start); took != d {
					t.Errorf("the waiter returned after %v; want %v", took, d)
				}
				checkStalePolicy(t, policy, got, held)
			})
		}
	}
}

type waited struct {
	fence uint64
	err   error
}

func checkStalePolicy(t *testing.T, policy bool, got waited, held uint64) {
	t.Helper()
	switch {
	case !policy && !errors.Is(got.err, uncomplicated.ErrStale):
		t.Errorf("waiter's error = %v; want ErrStale", got.err)
	case policy && (got.err != nil || got.fence <= held):
		t.Errorf("waiter's take-over = fence %d, %v; want a fence above %d, nil", got.fence, got.err, held)
	}
}

// Records of the course of a lock are Debug; a stale holder, a take-over
// and a lost hold are Warn, so that a logger at Info, as slog.Default is,
// shows them. Each record names the lock, and those about a hold give its
// fence.
func TestLogs_levels(t *testing.T) {
	whats := map[string]string{"Mutex": "lock", "RWMutex": "write lock", "Semaphore": "permit"}
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			env := uncomplicatedtest.New(t)
			rec := &logRecorder{}
			opts := []uncomplicated.Option{uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks),
				uncomplicated.WithLease(0), uncomplicated.WithLogger(slog.New(rec))}
			ctx := context.Background()
			h := p.take(t, env.NewClient(opts...), "report")

			failing := env.NewClient(opts...)
			done := make(chan error, 1)
			go func() { _, err := p.wait(ctx, failing, "report"); done <- err }()
			env.AwaitWaiters(1)
			env.Advance(patience)
			if err := recv(t, done); !errors.Is(err, uncomplicated.ErrStale) {
				t.Fatalf("waiter under Fail = %v; want ErrStale", err)
			}

			taking := env.NewClient(append(opts, uncomplicated.WithTakeOver(true))...)
			go func() { done <- p.do(ctx, taking, "report", func(context.Context) error { return nil }) }()
			env.AwaitWaiters(1)
			env.Advance(patience)
			if err := recv(t, done); err != nil {
				t.Fatalf("Do() under TakeOver = %v", err)
			}
			rec.onLost(func() { _ = h.lost() }) // a handler that calls back into the hold
			for range 2 {
				if r := recv(t, async2(func() (bool, error) { return h.check(ctx) })); r.v || r.err != nil {
					t.Fatalf("Held() of the holder taken over = %v, %v; want false, nil", r.v, r.err)
				}
			}
			if err := h.refresh(ctx); !errors.Is(err, uncomplicated.ErrLost) {
				t.Fatalf("Refresh() of the holder taken over = %v; want ErrLost", err)
			}
			if err := h.release(ctx); !errors.Is(err, uncomplicated.ErrLost) {
				t.Fatalf("release of the holder taken over = %v; want ErrLost", err)
			}

			w := whats[p.name]
			want := []string{"DEBUG " + w + " acquired fence=#1", "DEBUG " + w + " busy, waiting", "WARN " + w + " stale",
				"DEBUG " + w + " busy, waiting", "WARN " + w + " taken over fence=#2", "DEBUG " + w + " acquired fence=#2",
				"DEBUG " + w + " released fence=#2",
				"WARN " + w + " lost fence=#1"}
			if got, ok := renameFences(rec.all()); !slices.Equal(got, want) || !ok {
				t.Errorf("records:\n%q\nwant:\n%q, the fences rising", got, want)
			}
			for _, lock := range rec.locks {
				if lock != "lock:report" {
					t.Errorf("record's lock = %q; want lock:report", lock)
				}
			}
		})
	}
}

// async2 runs f in a goroutine and delivers its results.
func async2[T any](f func() (T, error)) <-chan result[T] {
	done := make(chan result[T], 1)
	go func() {
		v, err := f()
		done <- result[T]{v, err}
	}()
	return done
}

type result[T any] struct {
	v   T
	err error
}

// A failed call to Redis is Warn; LOADING, which Lock waits out, is Info;
// a call that the caller's ctx ended is not logged.
func TestLogs_redisErrors(t *testing.T) {
	fp, _ := newFaultPool(t)
	rec := &logRecorder{}
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithLogger(slog.New(rec))), Order{1})
	ctx := context.Background()
	fp.loading.Store(1)
	mustLock(t, m)
	fp.down.Store(true)
	if err := m.Unlock(ctx); err == nil {
		t.Fatal("Unlock() with Redis down = nil; want its error")
	}
	fp.down.Store(false)
	release := fp.hangNext()
	cctx, cancel := context.WithCancel(ctx)
	go func() { <-fp.hung; cancel() }()
	if _, err := m.TryLock(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("TryLock() cut by ctx = %v; want Canceled", err)
	}
	release()
	want := []string{"INFO Redis call failed", "DEBUG lock acquired fence=#1", "WARN Redis call failed"}
	if got, _ := renameFences(rec.all()); !slices.Equal(got, want) {
		t.Errorf("records:\n%q\nwant:\n%q", got, want)
	}
	for i, a := range rec.attrs {
		if strings.HasSuffix(rec.msgs[i], "failed") && (a["error"] == "" || a["lock"] != m.Name()) {
			t.Errorf("record %q has lock %q, error %q; want both", rec.msgs[i], a["lock"], a["error"])
		}
	}
}

// A waiter finds a holder stuck only once it has kept one token for the
// holder's own timeout, when that is longer than the waiter's: a holder
// that refreshes within its timeout is busy to every waiter, and one that
// stops is taken over its own timeout after its last Refresh.
func TestPatience_theHoldersTimeout(t *testing.T) {
	const own, holders = 10 * time.Second, 30 * time.Second
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			env := uncomplicatedtest.New(t)
			ctx := context.Background()
			h := p.take(t, env.NewClient(uncomplicated.WithTimeout(holders), uncomplicated.WithLease(0)), "report")
			waiter := env.NewClient(uncomplicated.WithTimeout(own), uncomplicated.WithTicks(ticks), uncomplicated.WithTakeOver(true))
			done := make(chan waited, 1)
			go func() {
				f, err := p.wait(ctx, waiter, "report")
				done <- waited{f, err}
			}()
			env.AwaitWaiters(1)
			for range 3 { // refreshes every 20 s: busy, though the waiter's timeout is 10 s
				env.Advance(holders - own)
				if err := h.refresh(ctx); err != nil {
					t.Fatalf("Refresh() = %v", err)
				}
			}
			refreshed := env.Clock.Now()
			env.Advance(holders - time.Nanosecond)
			if n := env.Waiters(); n != 1 {
				t.Fatalf("Waiters() before the holder's timeout = %d; want 1", n)
			}
			env.Advance(waiterTick) // the waiter saw the last token at its next tick
			got := recv(t, done)
			if got.err != nil || got.fence <= h.fence {
				t.Fatalf("the waiter's take-over = fence %d, %v; want one above %d", got.fence, got.err, h.fence)
			}
			if took := env.Clock.Since(refreshed); took < holders || took > holders+waiterTick {
				t.Errorf("taken over %v after the last Refresh; want the holder's timeout, %v, and a tick or two", took, holders)
			}
		})
	}
}
