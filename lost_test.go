package uncomplicated_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/benbjohnson/clock"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/mockclock"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Lost gives a closed channel when nothing is held, a fresh open one per
// hold, and leaves a released hold's channel open.
func TestMutex_Lost_perHold(t *testing.T) {
	env := uncomplicatedtest.New(t)
	m := mustNew(t, env.Client, Order{1})
	if !uncomplicated.IsClosed(m.Lost()) {
		t.Error("Lost() before Lock is open; want closed")
	}
	var nilMutex *uncomplicated.Mutex
	if !uncomplicated.IsClosed(nilMutex.Lost()) {
		t.Error("Lost() of a nil *Mutex is open; want closed")
	}
	mustLock(t, m)
	first := m.Lost()
	if uncomplicated.IsClosed(first) {
		t.Fatal("Lost() while held is closed; want open")
	}
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if uncomplicated.IsClosed(first) {
		t.Error("a released hold's Lost channel is closed; want open")
	}
	if !uncomplicated.IsClosed(m.Lost()) {
		t.Error("Lost() after Unlock is open; want closed")
	}
	mustLock(t, m)
	if second := m.Lost(); second == first || uncomplicated.IsClosed(second) {
		t.Error("the second hold's Lost channel is the first's or closed; want a fresh open one")
	}
}

// Refresh, Held and Unlock that find another token or no key report the
// hold lost and close its channel.
func TestMutex_lostFound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steal func(env *uncomplicatedtest.Env, m *uncomplicated.Mutex)
		find  func(m *uncomplicated.Mutex) error
	}{
		{"Refresh after expiry", expire, func(m *uncomplicated.Mutex) error { return m.Refresh(context.Background()) }},
		{"Unlock after overwrite", overwrite, func(m *uncomplicated.Mutex) error { return m.Unlock(context.Background()) }},
		{"Held after expiry", expire, held},
		{"Held after overwrite", overwrite, held},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(time.Second))
			m := mustNew(t, env.Client, Order{1})
			mustLock(t, m)
			lost := m.Lost()
			tc.steal(env, m)
			err := tc.find(m)
			if !errors.Is(err, uncomplicated.ErrLost) {
				t.Errorf("found lost: %v; want ErrLost", err)
			}
			if !errors.Is(err, uncomplicated.ErrNotHeld) {
				t.Errorf("found lost: %v; want ErrNotHeld as well", err)
			}
			if !uncomplicated.IsClosed(lost) {
				t.Error("Lost channel open after the loss was found; want closed")
			}
		})
	}
}

func expire(env *uncomplicatedtest.Env, m *uncomplicated.Mutex) { env.Redis.Del(m.Name()) }

func overwrite(env *uncomplicatedtest.Env, m *uncomplicated.Mutex) {
	_ = env.Redis.Set(m.Name(), "another holder's token")
}

// held turns Held's (false, nil) into an ErrLost for the table above.
func held(m *uncomplicated.Mutex) error {
	ok, err := m.Held(context.Background())
	switch {
	case err != nil:
		return err
	case ok:
		return nil
	}
	return errors.Join(uncomplicated.ErrLost, uncomplicated.ErrNotHeld)
}

// Held is true while our token is there, also after a Refresh, and false
// without a Redis call when nothing is held. A Redis error changes nothing.
func TestMutex_Held(t *testing.T) {
	fp, mr := newFaultPool(t)
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1})
	before := mr.CommandCount()
	if ok, err := m.Held(context.Background()); ok || err != nil {
		t.Errorf("Held() before Lock = %v, %v; want false, nil", ok, err)
	}
	if n := mr.CommandCount() - before; n != 0 {
		t.Errorf("Held() without a hold sent %d commands; want 0", n)
	}
	mustLock(t, m)
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.Held(context.Background()); !ok || err != nil {
		t.Errorf("Held() = %v, %v; want true, nil", ok, err)
	}
	fp.dropNextRequest()
	if ok, err := m.Held(context.Background()); ok || !errors.Is(err, errLostReply) {
		t.Errorf("Held() with Redis failing = %v, %v; want false and the error", ok, err)
	}
	if uncomplicated.IsClosed(m.Lost()) {
		t.Error("a failed Held closed the Lost channel; want it open")
	}
	if ok, err := m.Held(context.Background()); !ok || err != nil {
		t.Errorf("Held() after the failure = %v, %v; want true, nil", ok, err)
	}
}

// Do reports a lock lost while fn ran, also when fn returned nil.
func TestMutex_Do_lost(t *testing.T) {
	env := uncomplicatedtest.New(t)
	m := mustNew(t, env.Client, Order{1})
	err := m.Do(context.Background(), func(context.Context) error {
		expire(env, m)
		return nil
	})
	if !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("Do() = %v; want ErrLost", err)
	}
}

// WithAutoRefresh is checked against the lease.
func TestWithAutoRefresh_invalid(t *testing.T) {
	env := uncomplicatedtest.New(t)
	for _, tc := range []struct {
		name string
		opts []uncomplicated.Option
	}{
		{"negative", []uncomplicated.Option{uncomplicated.WithAutoRefresh(-time.Second)}},
		{"below a millisecond", []uncomplicated.Option{uncomplicated.WithAutoRefresh(time.Microsecond)}},
		{"equal to the lease", []uncomplicated.Option{uncomplicated.WithLease(time.Second), uncomplicated.WithAutoRefresh(time.Second)}},
		{"within the margin", []uncomplicated.Option{uncomplicated.WithLease(time.Second), uncomplicated.WithAutoRefresh(950 * time.Millisecond)}},
		{"above the timeout", []uncomplicated.Option{uncomplicated.WithTimeout(time.Second), uncomplicated.WithAutoRefresh(2 * time.Second)}},
		{"without a lease", []uncomplicated.Option{uncomplicated.WithLease(0), uncomplicated.WithAutoRefresh(time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := uncomplicated.New(env.Client, Order{1}, tc.opts...); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
				t.Errorf("New() = %v; want ErrInvalidArgument", err)
			}
		})
	}
	if _, err := uncomplicated.New(env.Client, Order{1}, uncomplicated.WithAutoRefresh(0)); err != nil {
		t.Errorf("New(WithAutoRefresh(0)) = %v; want nil: 0 is off", err)
	}
	// The margin of a 1s lease is 50ms: 1% and 40ms.
	if _, err := uncomplicated.New(env.Client, Order{1}, uncomplicated.WithLease(time.Second), uncomplicated.WithAutoRefresh(949*time.Millisecond)); err != nil {
		t.Errorf("New(WithAutoRefresh(949ms)) under a 1s lease = %v; want nil: below the lease less its margin", err)
	}
}

// Auto-refresh keeps a lock through an fn that runs for many leases, with
// a new token each time, so waiters see it busy.
func TestMutex_Do_autoRefresh(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(time.Second), uncomplicated.WithAutoRefresh(300*time.Millisecond))
	m := mustNew(t, env.Client, Order{1})
	tokens := map[string]bool{}
	err := m.Do(context.Background(), func(ctx context.Context) error {
		for i := range 10 {
			token, _ := env.Redis.Get(m.Name())
			tokens[token] = true
			env.Advance(300 * time.Millisecond)
			eventually(t, "refreshed", func() bool {
				now, err := env.Redis.Get(m.Name())
				return err == nil && !tokens[now]
			})
			if ctx.Err() != nil {
				t.Fatalf("fn's ctx ended after %d refreshes: %v", i, context.Cause(ctx))
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("Do() = %v; want nil after 3s under a 1s lease", err)
	}
	if len(tokens) != 10 {
		t.Errorf("%d tokens seen; want 10", len(tokens))
	}
}

// A refresh that finds the lock gone cancels fn's ctx with an ErrLost
// cause, and Do returns ErrLost.
func TestMutex_Do_autoRefreshFindsLoss(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(time.Second), uncomplicated.WithAutoRefresh(300*time.Millisecond))
	m := mustNew(t, env.Client, Order{1})
	err := m.Do(context.Background(), func(ctx context.Context) error {
		overwrite(env, m)
		env.Advance(300 * time.Millisecond)
		eventually(t, "cancelled", func() bool { return ctx.Err() != nil })
		if cause := context.Cause(ctx); !errors.Is(cause, uncomplicated.ErrLost) {
			t.Errorf("context.Cause(fn's ctx) = %v; want ErrLost", cause)
		}
		return ctx.Err()
	})
	if !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("Do() = %v; want ErrLost", err)
	}
	if v, _ := env.Redis.Get(m.Name()); v != "another holder's token" {
		t.Errorf("key = %q; want the other holder's token left alone", v)
	}
}

// When no refresh gets through, fn's ctx is cancelled a margin before the
// lease can end in Redis (1% of it plus 40ms: 50ms of 1s), not before and
// not at the next tick.
func TestMutex_Do_autoRefreshUnreachable(t *testing.T) {
	fp, _, mock := newMockFaultPool(t)
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithClock(mock), uncomplicated.WithLease(time.Second),
		uncomplicated.WithAutoRefresh(300*time.Millisecond)), Order{1})
	err := m.Do(context.Background(), func(ctx context.Context) error {
		fp.down.Store(true)
		defer fp.down.Store(false)
		for range 3 {
			mock.Add(300 * time.Millisecond)
			eventually(t, "refresh tried", func() bool { return fp.failed.Load() > 0 })
			fp.failed.Store(0)
		}
		mock.Add(49 * time.Millisecond)
		time.Sleep(10 * time.Millisecond) // time for a wrong cancellation to show
		if ctx.Err() != nil {
			t.Fatalf("fn's ctx ended at 949ms of a 1s lease: %v", context.Cause(ctx))
		}
		mock.Add(time.Millisecond) // the margin begins, between two ticks
		eventually(t, "cancelled", func() bool { return ctx.Err() != nil })
		if cause := context.Cause(ctx); !errors.Is(cause, uncomplicated.ErrLost) {
			t.Errorf("context.Cause(fn's ctx) = %v; want ErrLost", cause)
		}
		return nil
	})
	if !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("Do() = %v; want ErrLost", err)
	}
}

// Once a hold is known lost, Do waits 0.5s at most for a release that
// hangs (the release goes on in the background), and returns ErrLost, not
// the release's deadline: the caller's ctx has none.
func TestMutex_Do_lostReleaseHangs(t *testing.T) {
	fp, _, mock := newMockFaultPool(t)
	fp.hungScripts.Store(true)
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithClock(mock), uncomplicated.WithLease(time.Second),
		uncomplicated.WithAutoRefresh(300*time.Millisecond)), Order{1})
	var returned time.Time
	err := m.Do(context.Background(), func(ctx context.Context) error {
		fp.down.Store(true)
		for range 3 {
			mock.Add(300 * time.Millisecond)
			eventually(t, "refresh tried", func() bool { return fp.failed.Load() > 0 })
			fp.failed.Store(0)
		}
		mock.Add(100 * time.Millisecond) // past the margin: lost
		eventually(t, "cancelled", func() bool { return ctx.Err() != nil })
		fp.down.Store(false)
		t.Cleanup(fp.hangNext()) // the release hangs
		returned = time.Now()
		return nil
	})
	took := time.Since(returned)
	if !errors.Is(err, uncomplicated.ErrLost) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do() = %v; want ErrLost, and no deadline", err)
	}
	if took < 400*time.Millisecond || took > time.Second {
		t.Errorf("Do returned %v after fn; want about 0.5s, the wait for a release of a lost hold", took)
	}
}

// A finding about an earlier hold leaves the next hold's Lost channel
// alone: here Held and Refresh of the first hold hang until the Mutex
// holds the lock again.
func TestMutex_lostFound_earlierHold(t *testing.T) {
	for _, call := range []string{"Held", "Refresh"} {
		t.Run(call, func(t *testing.T) {
			fp, mr := newFaultPool(t)
			m := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1})
			mustLock(t, m)
			release := fp.hangNext()
			done := make(chan error, 1)
			go func() {
				if call == "Held" {
					_, err := m.Held(context.Background())
					done <- err
				} else {
					done <- m.Refresh(context.Background())
				}
			}()
			<-fp.hung
			fp.hang.Store(nil) // only the call above hangs
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := m.Unlock(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Unlock() = %v; want DeadlineExceeded while %s hangs", err, call)
			}
			mr.Del(m.Name())
			mustLock(t, m)
			second := m.Lost()
			release()
			_ = recv(t, done)
			if uncomplicated.IsClosed(second) {
				t.Errorf("the second hold's Lost channel closed by the first hold's %s", call)
			}
		})
	}
}

// Do returns at its deadline while fn overran it, and its release goes on
// in the background: the lock does not wait for its lease.
func TestMutex_Do_overrunReleased(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithLease(0))
	m := mustNew(t, env.Client, Order{1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := m.Do(ctx, func(context.Context) error {
		time.Sleep(100 * time.Millisecond) // ignores its ctx
		return nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do() = %v; want DeadlineExceeded", err)
	}
	eventually(t, "the lock released", func() bool { return !env.Redis.Exists(m.Name()) })
}

// Do returns as soon as fn does, ending a Refresh under way.
func TestMutex_Do_stopsRefreshUnderWay(t *testing.T) {
	fp, mr, mock := newMockFaultPool(t)
	fp.hungScripts.Store(true) // the restart watch ticks on mock too
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithClock(mock), uncomplicated.WithTimeout(time.Minute),
		uncomplicated.WithAutoRefresh(time.Second)), Order{1})
	var release func()
	start := time.Now()
	err := m.Do(context.Background(), func(ctx context.Context) error {
		release = fp.hangNext()
		mock.Add(time.Second)
		<-fp.hung
		fp.hang.Store(nil) // only the Refresh hangs
		return nil
	})
	took := time.Since(start)
	release()
	if err != nil {
		t.Errorf("Do() = %v; want nil", err)
	}
	if took > 5*time.Second {
		t.Errorf("Do() returned after %v; want at once when fn returns", took)
	}
	if mr.Exists(m.Name()) {
		t.Errorf("key %s left behind", m.Name())
	}
}

// A Pool that panics during auto-refresh: fn's ctx is cancelled, the lock
// is released, and Do then panics with the Pool's panic.
func TestMutex_Do_autoRefreshPanics(t *testing.T) {
	env := uncomplicatedtest.New(t)
	var panics atomic.Bool
	client := uncomplicated.NewClient(redigo.New(panicPool{&panics, env}), uncomplicated.WithClock(env.Clock),
		uncomplicated.WithTimeout(time.Minute), uncomplicated.WithAutoRefresh(time.Second))
	t.Cleanup(func() { _ = client.Close() })
	m := mustNew(t, client, Order{1})
	var cause error
	recovered := func() (r any) {
		defer func() { r = recover() }()
		_ = m.Do(context.Background(), func(ctx context.Context) error {
			panics.Store(true)
			env.Clock.Add(time.Second)
			eventually(t, "cancelled", func() bool { return ctx.Err() != nil })
			cause = context.Cause(ctx)
			panics.Store(false)
			return nil
		})
		return nil
	}()
	if recovered != "pool panics" {
		t.Errorf("Do() panicked with %v; want the Pool's panic", recovered)
	}
	if cause == nil || !strings.Contains(cause.Error(), "panicked") {
		t.Errorf("context.Cause(fn's ctx) = %v; want the panic", cause)
	}
	if env.Redis.Exists(m.Name()) {
		t.Errorf("key %s left behind", m.Name())
	}
}

// newMockFaultPool is newFaultPool with a mock clock that its miniredis
// follows.
func newMockFaultPool(t *testing.T) (*faultPool, *miniredis.Miniredis, *clock.Mock) {
	t.Helper()
	fp, mr := newFaultPool(t)
	mock := clock.NewMock()
	mock.Set(time.Now())
	mr.SetTime(mock.Now())
	return fp, mr, mock
}

// fn returns after the lease ended while auto-refresh, stuck in a Refresh,
// could not read its expiry timer, as when the process was paused: Do
// reports ErrLost every time, not only when the refreshing goroutine
// happens to see the timer before fn's end.
//
// The Client's restart watch ticks on the same clock and sends commands of
// its own: fn waits for the Refresh, a script, to hang, not for any
// command, or a late Refresh would get through once fn stopped the hang.
// Its timers are made on a mockclock.Mock: the expiry timer is unread when
// the lease ends.
func TestMutex_Do_returnsAfterLeaseEnded(t *testing.T) {
	for i := range 20 {
		fp, _, mmock := newMockFaultPool(t)
		fp.hungScripts.Store(true)
		mock := mockclock.Wrap(mmock)
		m := mustNew(t, uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithClock(mock), uncomplicated.WithLease(time.Minute),
			uncomplicated.WithAutoRefresh(time.Second)), Order{int64(i)})
		var release func()
		err := m.Do(context.Background(), func(ctx context.Context) error {
			release = fp.hangNext()
			mock.Add(time.Second) // a tick: the Refresh hangs
			<-fp.hung
			fp.hang.Store(nil)
			mock.Add(time.Minute) // the lease ends, its timer unread
			return nil
		})
		release()
		if !errors.Is(err, uncomplicated.ErrLost) {
			t.Fatalf("trial %d: Do() = %v; want ErrLost: fn returned after the lease ended", i, err)
		}
	}
}
