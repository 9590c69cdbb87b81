package uncomplicated_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// The API's rules on miniredis, which needs no server. Rules that depend on
// real Redis are in the _redis_test.go files.

func TestNew_invalid(t *testing.T) {
	env := uncomplicatedtest.New(t)
	c := env.Client
	U := uncomplicated.ErrInvalidArgument
	cases := []struct {
		name string
		err  func() error
		want error
	}{
		{"nil object", func() error { _, err := uncomplicated.New[int64](c, nil); return err }, uncomplicated.ErrInvalidArgument},
		{"nil pointer", func() error { _, err := uncomplicated.New[int64](c, (*Order)(nil)); return err }, uncomplicated.ErrInvalidArgument},
		{"empty ID", func() error { _, err := uncomplicated.New(c, Code("")); return err }, uncomplicated.ErrInvalidArgument},
		{"nil ID", func() error { _, err := uncomplicated.New(c, nilID{}); return err }, uncomplicated.ErrInvalidArgument},
		{"ID panics", func() error { _, err := uncomplicated.New(c, panicky{}); return err }, uncomplicated.ErrInvalidArgument},
		{"ID is a func", func() error { _, err := uncomplicated.New(c, funcID{}); return err }, uncomplicated.ErrInvalidArgument},
		{"empty name", func() error { _, err := uncomplicated.New(c, uncomplicated.Named("")); return err }, uncomplicated.ErrInvalidArgument},
		{"zero timeout", func() error {
			_, err := uncomplicated.New(c, uncomplicated.Named("x"), uncomplicated.WithTimeout(0))
			return err
		}, U},
		{"negative timeout", func() error {
			_, err := uncomplicated.New(c, uncomplicated.Named("x"), uncomplicated.WithTimeout(-time.Second))
			return err
		}, U},
		{"zero ticks", func() error {
			_, err := uncomplicated.New(c, uncomplicated.Named("x"), uncomplicated.WithTicks(0))
			return err
		}, U},
		{"negative ticks", func() error {
			_, err := uncomplicated.New(c, uncomplicated.Named("x"), uncomplicated.WithTicks(-1))
			return err
		}, U},
		{"negative lease", func() error {
			_, err := uncomplicated.New(c, uncomplicated.Named("x"), uncomplicated.WithLease(-1))
			return err
		}, U},
		{"empty prefix", func() error {
			_, err := uncomplicated.New(c, uncomplicated.Named("x"), uncomplicated.WithPrefix(""))
			return err
		}, U},
		{"prefix with brace", func() error {
			_, err := uncomplicated.New(c, uncomplicated.Named("x"), uncomplicated.WithPrefix("a{b}"))
			return err
		}, U},
		{"client option", func() error {
			_, err := uncomplicated.New(env.NewClient(uncomplicated.WithTicks(0)), uncomplicated.Named("x"))
			return err
		}, U},
		{"nil client", func() error { _, err := uncomplicated.New(nil, Order{1}); return err }, U},
		{"nil client Named", func() error {
			_, err := uncomplicated.New((*uncomplicated.Client)(nil), uncomplicated.Named("x"))
			return err
		}, U},
		{"nil pool", func() error {
			_, err := uncomplicated.New(uncomplicated.NewClient(redigo.New(nil)), uncomplicated.Named("x"))
			return err
		}, U},
		{"typed nil pool", func() error {
			_, err := uncomplicated.New(uncomplicated.NewClient(redigo.New((*redis.Pool)(nil))), uncomplicated.Named("x"))
			return err
		}, U},
		{"nil client Close", func() error { return (*uncomplicated.Client)(nil).Close() }, U},
	}
	for _, tc := range cases {
		if err := tc.err(); !errors.Is(err, tc.want) {
			t.Errorf("%s: error = %v; want %v", tc.name, err, tc.want)
		}
	}
	if n := env.Redis.CommandCount(); n != 0 {
		t.Errorf("Redis saw %d commands; want none for invalid input", n)
	}
}

func TestMutex_invalidCalls(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ok := mustNew(t, env.Client, Order{1})
	var nilCtx context.Context
	ctx := context.Background()
	noop := func(context.Context) error { return nil }
	for name, m := range map[string]*uncomplicated.Mutex{"nil": nil, "zero": {}} {
		_, tryErr := m.TryLock(ctx)
		for call, err := range map[string]error{
			"Lock": m.Lock(ctx), "TryLock": tryErr, "Unlock": m.Unlock(ctx), "Refresh": m.Refresh(ctx), "Do": m.Do(ctx, noop),
		} {
			if !errors.Is(err, uncomplicated.ErrInvalidArgument) {
				t.Errorf("%s Mutex: %s() = %v; want ErrInvalidArgument", name, call, err)
			}
		}
		if m.Name() != "" || m.Fence() != 0 {
			t.Errorf("%s Mutex: Name(), Fence() = %q, %d; want \"\", 0", name, m.Name(), m.Fence())
		}
	}
	_, tryErr := ok.TryLock(nilCtx)
	for call, err := range map[string]error{
		"Lock": ok.Lock(nilCtx), "TryLock": tryErr, "Unlock": ok.Unlock(nilCtx), "Refresh": ok.Refresh(nilCtx),
		"Do(nil ctx)": ok.Do(nilCtx, noop), "Do(nil fn)": ok.Do(ctx, nil),
	} {
		if !errors.Is(err, uncomplicated.ErrInvalidArgument) {
			t.Errorf("%s = %v; want ErrInvalidArgument", call, err)
		}
	}
	if n := env.Redis.CommandCount(); n != 0 {
		t.Errorf("Redis saw %d commands; want none for invalid calls", n)
	}
}

func TestMutex_TryLock(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(patience), uncomplicated.WithTakeOver(true))
	ctx := context.Background()
	a := mustNew(t, env.Client, Order{1}, uncomplicated.WithLease(0))
	b := mustNew(t, env.NewClient(), Order{1})
	steps := []struct {
		m    *uncomplicated.Mutex
		want bool
	}{{a, true}, {a, false}, {b, false}}
	for i, s := range steps {
		if got, err := s.m.TryLock(ctx); got != s.want || err != nil {
			t.Fatalf("step %d: TryLock() = %v, %v; want %v, nil", i, got, err, s.want)
		}
	}
	env.Advance(2 * patience)
	if got, err := b.TryLock(ctx); got || err != nil {
		t.Errorf("TryLock() on a stale holder = %v, %v; want false, nil: it never takes over", got, err)
	}
	first := a.Fence()
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if got, err := b.TryLock(ctx); !got || err != nil || !rising(first, b.Fence()) {
		t.Errorf("TryLock() on a free lock = %v, %v, fence %d; want true, nil, above %d", got, err, b.Fence(), first)
	}
}

func TestMutex_Unlock_notHeld(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	steps := []struct {
		name  string
		setup func(m *uncomplicated.Mutex)
		value string // the lock key's value after Unlock
	}{
		{"never locked", func(*uncomplicated.Mutex) {}, ""},
		{"overwritten", func(m *uncomplicated.Mutex) { mustLock(t, m); env.Redis.Set(m.Name(), "someone else") }, "someone else"},
		{"expired", func(m *uncomplicated.Mutex) { mustLock(t, m); env.Advance(time.Second) }, ""},
	}
	for i, s := range steps {
		m := mustNew(t, env.Client, Order{int64(i)}, uncomplicated.WithLease(time.Second))
		s.setup(m)
		if err := m.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
			t.Errorf("%s: Unlock() = %v; want ErrNotHeld", s.name, err)
		}
		if err := m.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
			t.Errorf("%s: second Unlock() = %v; want ErrNotHeld", s.name, err)
		}
		if v, _ := env.Redis.Get(m.Name()); v != s.value {
			t.Errorf("%s: value after Unlock = %q; want %q, left alone", s.name, v, s.value)
		}
	}
}

func TestMutex_Refresh(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	m := mustNew(t, env.Client, Order{1}, uncomplicated.WithLease(10*time.Second))
	if err := m.Refresh(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Refresh() before Lock = %v; want ErrNotHeld", err)
	}
	mustLock(t, m)
	fence := m.Fence()
	before, _ := env.Redis.Get(m.Name())
	env.Advance(8 * time.Second)
	if err := m.Refresh(ctx); err != nil {
		t.Fatalf("Refresh() = %v", err)
	}
	after, _ := env.Redis.Get(m.Name())
	secret, public, _ := strings.Cut(after, ".")
	if _, was, _ := strings.Cut(before, "."); len(secret) != 33 || public != was || before[:22] == secret[:22] || before[22:33] != secret[22:] {
		t.Errorf("token after Refresh = %q (was %q); want a new 22-character secret, the same Client ID and the same public part", after, before)
	}
	if ttl := env.Redis.TTL(m.Name()); ttl != 10*time.Second {
		t.Errorf("TTL after Refresh = %v; want the whole lease, 10s", ttl)
	}
	if f := m.Fence(); f != fence || !strings.HasSuffix(after, " "+strconv.FormatUint(fence, 10)) {
		t.Errorf("Fence() after Refresh = %d, lock %q; want %d, kept", f, after, fence)
	}
	env.Advance(10 * time.Second)
	if err := m.Refresh(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Refresh() after the lease = %v; want ErrNotHeld", err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Unlock() after the lease = %v; want ErrNotHeld", err)
	}
}

func TestMutex_Refresh_noLease(t *testing.T) {
	env := uncomplicatedtest.New(t)
	m := mustNew(t, env.Client, Order{1}, uncomplicated.WithLease(0))
	mustLock(t, m)
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh() = %v", err)
	}
	if ttl := env.Redis.TTL(m.Name()); ttl != 0 {
		t.Errorf("TTL with WithLease(0) = %v; want none", ttl)
	}
}

func TestMutex_Do(t *testing.T) {
	env := uncomplicatedtest.New(t)
	errFn := errors.New("fn failed")
	cases := []struct {
		name string
		fn   func(ctx context.Context, m *uncomplicated.Mutex) error
		want error // nil: Do returns nil
	}{
		{"ok", func(context.Context, *uncomplicated.Mutex) error { return nil }, nil},
		{"fn error", func(context.Context, *uncomplicated.Mutex) error { return errFn }, errFn},
		{"lost while held", func(_ context.Context, m *uncomplicated.Mutex) error {
			env.Redis.Set(m.Name(), "someone else")
			return nil
		}, uncomplicated.ErrNotHeld},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, env.Client, Order{int64(i)})
			ran := false
			err := m.Do(context.Background(), func(ctx context.Context) error {
				ran = true
				if !env.Redis.Exists(m.Name()) || m.Fence() == 0 {
					t.Errorf("inside Do: key exists %v, fence %d; want held", env.Redis.Exists(m.Name()), m.Fence())
				}
				return tc.fn(ctx, m)
			})
			if !ran || (tc.want == nil) != (err == nil) || !errors.Is(err, tc.want) {
				t.Errorf("Do() = %v, ran %v; want %v, ran", err, ran, tc.want)
			}
			if tc.want != uncomplicated.ErrNotHeld && env.Redis.Exists(m.Name()) {
				t.Errorf("key %s still exists after Do", m.Name())
			}
			if m.Fence() != 0 {
				t.Errorf("Fence() after Do = %d; want 0", m.Fence())
			}
		})
	}
}

// Do unlocks when fn panics, and the panic goes on; and when fn returns
// because ctx ended.
func TestMutex_Do_unlocks(t *testing.T) {
	env := uncomplicatedtest.New(t)
	m := mustNew(t, env.Client, Order{1})
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recover() = %v; want the panic of fn", r)
			}
		}()
		_ = m.Do(context.Background(), func(context.Context) error { panic("boom") })
	}()
	if env.Redis.Exists(m.Name()) {
		t.Errorf("key exists after fn panicked")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := m.Do(ctx, func(ctx context.Context) error {
		cancel()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || env.Redis.Exists(m.Name()) {
		t.Errorf("Do() = %v, key exists %v; want context.Canceled and the lock released", err, env.Redis.Exists(m.Name()))
	}
	if err := m.Do(ctx, func(context.Context) error { t.Error("fn ran"); return nil }); !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Errorf("Do() on an ended ctx = %v; want ErrNotObtained", err)
	}
}

// Goroutines sharing one Mutex take turns, as with sync.Mutex; one blocked
// behind another in the same process gives up when its ctx ends.
func TestMutex_sharedByGoroutines(t *testing.T) {
	env := uncomplicatedtest.New(t)
	m := mustNew(t, env.Client, Order{1})
	mustLock(t, m)

	ctx, cancel := context.WithCancel(context.Background())
	blocked := lockAsync(ctx, m)
	env.AwaitWaiters(1)
	cancel()
	if err := recv(t, blocked); !errors.Is(err, context.Canceled) || !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Errorf("Lock() behind another goroutine, ctx cancelled = %v; want ErrNotObtained and context.Canceled", err)
	}

	first := m.Fence()
	before := env.Redis.CommandCount()
	done := lockAsync(context.Background(), m)
	env.AwaitWaiters(1)
	if n := env.Redis.CommandCount(); n != before {
		t.Errorf("a goroutine waiting behind another of its process sent %d commands to Redis; want none", n-before)
	}
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if err := recv(t, done); err != nil || !rising(first, m.Fence()) {
		t.Errorf("second goroutine's Lock() = %v, fence %d; want nil, above %d", err, m.Fence(), first)
	}
}

// A Mutex whose hold ended badly is usable again: after an Unlock that
// found the lock lost, and after a TryLock that Redis failed.
func TestMutex_usableAfterFailures(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	m := mustNew(t, env.Client, Order{1})
	mustLock(t, m)
	env.Redis.Del(m.Name())
	if err := m.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Fatalf("Unlock() of a lost lock = %v; want ErrNotHeld", err)
	}
	if ok, err := m.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock() after a lost hold = %v, %v; want true, nil", ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	env.Redis.SetError("ERR broken")
	if ok, err := m.TryLock(ctx); ok || err == nil {
		t.Fatalf("TryLock() with Redis failing = %v, %v; want false and an error", ok, err)
	}
	env.Redis.SetError("")
	if ok, err := m.TryLock(ctx); !ok || err != nil {
		t.Errorf("TryLock() after a Redis error = %v, %v; want true, nil", ok, err)
	}
}

func TestMutex_Fence(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(patience), uncomplicated.WithTakeOver(true))
	ctx := context.Background()
	a := mustNew(t, env.Client, Order{1}, uncomplicated.WithLease(0))
	var fences []uint64
	for range 3 {
		mustLock(t, a)
		fences = append(fences, a.Fence())
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := a.TryLock(ctx); ok {
		fences = append(fences, a.Fence())
	}
	b := mustNew(t, env.Client, Order{1})
	done := lockAsync(ctx, b)
	env.AwaitWaiters(1)
	env.Advance(patience)
	if err := recv(t, done); err != nil {
		t.Fatalf("take-over Lock() = %v", err)
	}
	fences = append(fences, b.Fence())
	other := mustNew(t, env.Client, Order{2})
	mustLock(t, other)
	fences = append(fences, other.Fence())
	if !rising(fences[:5]...) || fences[5] == 0 {
		t.Errorf("fences = %v; want the first five rising (one lock name, take-over included), and a sixth", fences)
	}
}

// A fence counter that an earlier version left changes nothing: fences go
// on above it, and it stays as it was, for the user to delete; one that is
// not a number is no different.
func TestMutex_earlierFenceCounter(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	for i, counter := range []string{"588", "not a number"} {
		m := mustNew(t, env.Client, Order{int64(i)})
		fenceKey := fenceKeyOf("lock", m)
		env.Redis.Set(fenceKey, counter)
		mustLock(t, m)
		if f := m.Fence(); f <= 588 {
			t.Errorf("counter %q: Fence() = %d; want above 588", counter, f)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if v, err := env.Redis.Get(fenceKey); err != nil || v != counter {
			t.Errorf("counter %q after the release = %q, %v; want it as it was", counter, v, err)
		}
	}
}
