package uncomplicated_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Bad input to LockAll, UnlockAll and DoAll is refused before anything
// reaches Redis.
func TestLockAll_invalid(t *testing.T) {
	env := uncomplicatedtest.New(t)
	a, b := mustNew(t, env.Client, Order{1}), mustNew(t, env.Client, Order{2})
	again := mustNew(t, env.Client, Order{1})
	ok := func(context.Context) error { return nil }
	cases := []struct {
		name string
		call func() error
	}{
		{"no Mutex", func() error { return uncomplicated.LockAll(context.Background()) }},
		{"nil Mutex", func() error { return uncomplicated.LockAll(context.Background(), a, nil) }},
		{"zero Mutex", func() error { return uncomplicated.LockAll(context.Background(), a, &uncomplicated.Mutex{}) }},
		{"the same Mutex twice", func() error { return uncomplicated.LockAll(context.Background(), a, b, a) }},
		{"one name twice on one Client", func() error { return uncomplicated.LockAll(context.Background(), a, again) }},
		{"nil ctx", func() error { return uncomplicated.LockAll(nil, a) }}, //nolint:staticcheck // the point
		{"UnlockAll, one name twice", func() error { return uncomplicated.UnlockAll(context.Background(), a, again) }},
		{"UnlockAll, none", func() error { return uncomplicated.UnlockAll(context.Background()) }},
		{"DoAll, nil fn", func() error { return uncomplicated.DoAll(context.Background(), []*uncomplicated.Mutex{a}, nil) }},
		{"DoAll, none", func() error { return uncomplicated.DoAll(context.Background(), nil, ok) }},
		{"DoAll, twice", func() error { return uncomplicated.DoAll(context.Background(), []*uncomplicated.Mutex{b, b}, ok) }},
	}
	for _, tc := range cases {
		if err := tc.call(); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
			t.Errorf("%s: %v; want ErrInvalidArgument", tc.name, err)
		}
	}
	if keys := env.Redis.Keys(); len(keys) != 0 {
		t.Errorf("keys in Redis after bad input: %v", keys)
	}
}

// LockAll takes the locks in the order of their names, whatever the order
// they are listed in: behind a busy order 1, it holds order 0 and not yet
// order 2. A release hands it the busy one.
func TestLockAll_nameOrder(t *testing.T) {
	env := uncomplicatedtest.New(t)
	busy := mustNew(t, env.NewClient(), Order{1})
	mustLock(t, busy)
	ms := []*uncomplicated.Mutex{mustNew(t, env.Client, Order{2}), mustNew(t, env.Client, Order{1}), mustNew(t, env.Client, Order{0})}
	done := make(chan error, 1)
	go func() { done <- uncomplicated.LockAll(context.Background(), ms...) }()
	env.AwaitWaiters(1)
	if !env.Redis.Exists(ms[2].Name()) || env.Redis.Exists(ms[0].Name()) {
		t.Errorf("waiting for order 1: order 0 held %v, order 2 held %v; want true, false",
			env.Redis.Exists(ms[2].Name()), env.Redis.Exists(ms[0].Name()))
	}
	if err := busy.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("LockAll() = %v", err)
	}
	for _, m := range ms {
		if m.Fence() == 0 || !env.Redis.Exists(m.Name()) {
			t.Errorf("%s: Fence() = %d, in Redis %v after LockAll; want a fence, true", m.Name(), m.Fence(), env.Redis.Exists(m.Name()))
		}
	}
}

// UnlockAll unlocks in the reverse of LockAll's order, every lock whatever
// the others return, and joins the errors.
func TestUnlockAll_reverseOrderEveryLock(t *testing.T) {
	rec := &logRecorder{}
	env := uncomplicatedtest.New(t, uncomplicated.WithLogger(slog.New(rec)))
	ms := []*uncomplicated.Mutex{mustNew(t, env.Client, Order{1}), mustNew(t, env.Client, Order{3}), mustNew(t, env.Client, Order{2})}
	if err := uncomplicated.LockAll(context.Background(), ms...); err != nil {
		t.Fatal(err)
	}
	env.Redis.Del(ms[2].Name()) // order 2's lock lost
	err := uncomplicated.UnlockAll(context.Background(), ms...)
	if !errors.Is(err, uncomplicated.ErrLost) || !strings.Contains(err.Error(), ms[2].Name()) {
		t.Errorf("UnlockAll() with order 2 lost = %v; want ErrLost about %s", err, ms[2].Name())
	}
	var released []string
	rec.mu.Lock()
	for i, msg := range rec.msgs {
		if strings.HasPrefix(msg, "DEBUG lock released") {
			released = append(released, rec.locks[i])
		}
	}
	rec.mu.Unlock()
	if want := []string{ms[1].Name(), ms[0].Name()}; !slices.Equal(released, want) {
		t.Errorf("released %v; want %v", released, want)
	}
	for _, m := range ms {
		if env.Redis.Exists(m.Name()) || m.Fence() != 0 {
			t.Errorf("%s still held after UnlockAll", m.Name())
		}
	}
}

// DoAll unlocks every lock when fn panics, and the panic goes on; inside
// fn each Mutex has its own fence.
func TestDoAll_panicUnlocks(t *testing.T) {
	env := uncomplicatedtest.New(t)
	a, b := mustNew(t, env.Client, Order{1}), mustNew(t, env.Client, Order{2})
	mustLock(t, b)
	earlier := b.Fence()
	if err := b.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recover() = %v; want the panic of fn", r)
			}
		}()
		_ = uncomplicated.DoAll(context.Background(), []*uncomplicated.Mutex{b, a}, func(ctx context.Context) error {
			if a.Fence() == 0 || !rising(earlier, b.Fence()) {
				t.Errorf("Fence() inside fn = %d, %d; want a's own, and b's above its earlier %d", a.Fence(), b.Fence(), earlier)
			}
			if _, ok := uncomplicated.FenceOf(ctx); ok {
				t.Errorf("FenceOf(fn's ctx) has a fence; want none of several")
			}
			panic("boom")
		})
	}()
	for _, m := range []*uncomplicated.Mutex{a, b} {
		if env.Redis.Exists(m.Name()) {
			t.Errorf("%s still in Redis after fn panicked", m.Name())
		}
	}
}

// With WithAutoRefresh, DoAll cancels fn's ctx when any of its locks is
// lost, and its error wraps ErrLost.
func TestDoAll_lost(t *testing.T) {
	mr, cs := miniClients(t, 1, uncomplicated.WithAutoRefresh(10*time.Millisecond))
	a, b := mustNew(t, cs[0], Order{1}), mustNew(t, cs[0], Order{2})
	err := uncomplicated.DoAll(context.Background(), []*uncomplicated.Mutex{a, b}, func(ctx context.Context) error {
		mr.Del(b.Name())
		return causeWithin(ctx, 10*time.Second)
	})
	if !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("DoAll() with a lock lost = %v; want ErrLost", err)
	}
	if mr.Exists(a.Name()) {
		t.Errorf("%s still in Redis after DoAll", a.Name())
	}
}

// panicHandler is a slog handler that panics on the records of one lock.
type panicHandler struct{ lock string }

func (h panicHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h panicHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h panicHandler) WithGroup(string) slog.Handler            { return h }
func (h panicHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "lock" && a.Value.String() == h.lock {
			panic("logger broke")
		}
		return true
	})
	return nil
}

// A panic while LockAll takes its locks (here a logger's) leaves none of
// them held, in Redis or in the process.
func TestLockAll_panicLeavesNoneHeld(t *testing.T) {
	env := uncomplicatedtest.New(t)
	first := mustNew(t, env.Client, Order{0})
	name := mustNew(t, env.Client, Order{1}).Name()
	second := mustNew(t, env.Client, Order{1}, uncomplicated.WithLogger(slog.New(panicHandler{lock: name})))
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("LockAll() did not panic")
			}
		}()
		_ = uncomplicated.LockAll(context.Background(), second, first)
	}()
	if env.Redis.Exists(first.Name()) || first.Fence() != 0 {
		t.Errorf("%s held after LockAll panicked", first.Name())
	}
	if ok, err := first.TryLock(context.Background()); !ok || err != nil {
		t.Errorf("TryLock() after LockAll panicked = %v, %v; want true, nil", ok, err)
	}
}
