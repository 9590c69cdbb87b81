package uncomplicated_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Every acquiring call that ends without the lock returns an error that
// matches ErrNotObtained and its cause, whatever the cause: ctx, Close, a
// stale holder, a Redis error or reply, a command timeout.

// An acquiring is one acquiring call of one primitive, on the lock "job"
// of a Client: lock makes the lock, and returns the call; waits tells a
// call that waits (Lock, Do) from one that makes one attempt (TryLock,
// TryDo).
type acquiring struct {
	name  string
	waits bool
	lock  func(t *testing.T, c *uncomplicated.Client) func(context.Context) error
}

// call makes the lock on c and calls it.
func (a acquiring) call(t *testing.T, ctx context.Context, c *uncomplicated.Client) error {
	return a.lock(t, c)(ctx)
}

// acquirings are the acquiring calls of the three primitives, and of an
// RWMutex's readers.
func acquirings() []acquiring {
	noop := func(context.Context) error { return nil }
	second := func(_ bool, err error) error { return err }
	mutex := func(t *testing.T, c *uncomplicated.Client) *uncomplicated.Mutex { return mustNamed(t, c, "job") }
	rw := func(t *testing.T, c *uncomplicated.Client) *uncomplicated.RWMutex { return mustNamedRW(t, c, "job") }
	sem := func(t *testing.T, c *uncomplicated.Client) *uncomplicated.Semaphore {
		return mustSemaphoreNamed(t, c, "job")
	}
	return []acquiring{
		{"Mutex.Lock", true, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error { return mutex(t, c).Lock }},
		{"Mutex.Do", true, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			m := mutex(t, c)
			return func(ctx context.Context) error { return m.Do(ctx, noop) }
		}},
		{"Mutex.TryLock", false, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			m := mutex(t, c)
			return func(ctx context.Context) error { return second(m.TryLock(ctx)) }
		}},
		{"Mutex.TryDo", false, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			m := mutex(t, c)
			return func(ctx context.Context) error { return second(m.TryDo(ctx, noop)) }
		}},
		{"RWMutex.Lock", true, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error { return rw(t, c).Lock }},
		{"RWMutex.Do", true, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			l := rw(t, c)
			return func(ctx context.Context) error { return l.Do(ctx, noop) }
		}},
		{"RWMutex.TryLock", false, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			l := rw(t, c)
			return func(ctx context.Context) error { return second(l.TryLock(ctx)) }
		}},
		{"RWMutex.TryDo", false, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			l := rw(t, c)
			return func(ctx context.Context) error { return second(l.TryDo(ctx, noop)) }
		}},
		{"RWMutex.RLock", true, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error { return rw(t, c).RLock }},
		{"RWMutex.RDo", true, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			l := rw(t, c)
			return func(ctx context.Context) error { return l.RDo(ctx, noop) }
		}},
		{"RWMutex.TryRLock", false, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			l := rw(t, c)
			return func(ctx context.Context) error { return second(l.TryRLock(ctx)) }
		}},
		{"RWMutex.TryRDo", false, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			l := rw(t, c)
			return func(ctx context.Context) error { return second(l.TryRDo(ctx, noop)) }
		}},
		{"Semaphore.Acquire", true, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			s := sem(t, c)
			return func(ctx context.Context) error { _, err := s.Acquire(ctx); return err }
		}},
		{"Semaphore.Do", true, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			s := sem(t, c)
			return func(ctx context.Context) error { return s.Do(ctx, noop) }
		}},
		{"Semaphore.TryAcquire", false, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			s := sem(t, c)
			return func(ctx context.Context) error { _, _, err := s.TryAcquire(ctx); return err }
		}},
		{"Semaphore.TryDo", false, func(t *testing.T, c *uncomplicated.Client) func(context.Context) error {
			s := sem(t, c)
			return func(ctx context.Context) error { return second(s.TryDo(ctx, noop)) }
		}},
	}
}

// mustSemaphoreNamed returns the Semaphore of one permit named name.
func mustSemaphoreNamed(t *testing.T, c *uncomplicated.Client, name string) *uncomplicated.Semaphore {
	t.Helper()
	s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(name), 1)
	if err != nil {
		t.Fatalf("NamedSemaphore(%q) = %v", name, err)
	}
	return s
}

// holdJob holds "job" so that a blocks: the same primitive's hold (an
// RWMutex's writer, for its readers too).
func holdJob(t *testing.T, c *uncomplicated.Client, a acquiring) {
	t.Helper()
	for _, p := range primitives {
		if strings.HasPrefix(a.name, p.name+".") {
			p.take(t, c, "job")
			return
		}
	}
	t.Fatalf("no primitive for %s", a.name)
}

func TestAcquiring_failuresMatchErrNotObtained(t *testing.T) {
	type failure struct {
		name  string
		waits bool // only calls that wait can fail so
		// run makes call fail, and returns its error
		run func(t *testing.T, a acquiring) error
		// cause is what the error matches besides ErrNotObtained
		cause func(err error) bool
		// says is in the error's message
		says string
	}
	failures := []failure{
		{"ctx ended while busy", true, func(t *testing.T, a acquiring) error {
			env := uncomplicatedtest.New(t, uncomplicated.WithHolderLabel("web-1:4121"))
			holdJob(t, env.Client, a)
			ctx, cancel := env.Clock.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			done := make(chan error, 1)
			call := a.lock(t, env.NewClient())
			go func() { done <- call(ctx) }()
			env.AwaitWaiters(1)
			env.Advance(3 * time.Second)
			return recv(t, done)
		}, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, "busy: lock:job held by web-1:4121 for 3s"},
		{"Close while waiting", true, func(t *testing.T, a acquiring) error {
			env := uncomplicatedtest.New(t)
			holdJob(t, env.Client, a)
			c := env.NewClient()
			call := a.lock(t, c)
			done := make(chan error, 1)
			go func() { done <- call(context.Background()) }()
			env.AwaitWaiters(1)
			_ = c.Close()
			return recv(t, done)
		}, func(err error) bool { return errors.Is(err, uncomplicated.ErrClosed) }, "client closed"},
		{"a stale holder under Fail", true, func(t *testing.T, a acquiring) error {
			opts := []uncomplicated.Option{uncomplicated.WithTimeout(10 * time.Second), uncomplicated.WithTicks(10)}
			env := uncomplicatedtest.New(t, opts...)
			holdJob(t, env.Client, a)
			done := make(chan error, 1)
			call := a.lock(t, env.NewClient(opts...))
			go func() { done <- call(context.Background()) }()
			env.AwaitWaiters(1)
			env.Advance(10 * time.Second)
			return recv(t, done)
		}, func(err error) bool { return errors.Is(err, uncomplicated.ErrStale) }, "stale"},
		{"Close before the call", false, func(t *testing.T, a acquiring) error {
			c := newHostileRig(t).client
			call := a.lock(t, c)
			_ = c.Close()
			return call(context.Background())
		}, func(err error) bool { return errors.Is(err, uncomplicated.ErrClosed) }, "client closed"},
		{"a failed connection", false, func(t *testing.T, a acquiring) error {
			fp, _ := newFaultPool(t)
			c := uncomplicated.NewClient(redigo.New(fp))
			t.Cleanup(func() { _ = c.Close() })
			fp.down.Store(true)
			return a.call(t, briefly(t), c) // a waiting call tries again until its ctx ends
		}, func(err error) bool { return errors.Is(err, errLostReply) }, errLostReply.Error()},
		{"the command timeout", false, func(t *testing.T, a acquiring) error {
			fp, _ := newFaultPool(t)
			c := uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithCommandTimeout(50*time.Millisecond))
			t.Cleanup(func() { _ = c.Close() })
			defer fp.hangNext()()
			return a.call(t, briefly(t), c)
		}, func(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }, "WithCommandTimeout"},
		{"an error reply", false, func(t *testing.T, a acquiring) error {
			r := newHostileRig(t)
			for _, k := range []string{"lock:job", "lock:writer:{lock:job}", "lock:permits:{lock:job}"} {
				_, _ = r.mr.SAdd(k, "not a lock")
			}
			return a.call(t, context.Background(), r.client)
		}, func(err error) bool { var re redis.Error; return errors.As(err, &re) }, "WRONGTYPE"},
	}
	for _, f := range failures {
		for _, a := range acquirings() {
			if f.waits && !a.waits {
				continue
			}
			t.Run(f.name+"/"+a.name, func(t *testing.T) {
				err := f.run(t, a)
				if !errors.Is(err, uncomplicated.ErrNotObtained) || !f.cause(err) || !strings.Contains(err.Error(), f.says) {
					t.Errorf("%s = %v; want ErrNotObtained, its cause, and %q", a.name, err, f.says)
				}
				_, op, _ := strings.Cut(a.name, ".")
				if e, ok := asError(err); !ok || e.Op != op || e.Name != "lock:job" {
					t.Errorf("%s = %#v; want an *Error of %s on lock:job", a.name, e, op)
				}
			})
		}
	}
}

// briefly is a ctx that ends soon, for a waiting call that would try again
// for ever.
func briefly(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// go doc shows what users match with errors.As: Error's fields and what
// each means.
func TestError_goDoc(t *testing.T) {
	wantDocFields(t, "Error", "Op", "Name", "Err")
}

// The calls about a hold say in their *Error which call failed on which
// lock; Do returns fn's own error as it is.
func TestError_opAndName(t *testing.T) {
	ctx := context.Background()
	env := uncomplicatedtest.New(t)
	m := mustNamed(t, env.Client, "job")
	rw := mustNamedRW(t, env.Client, "job-rw")
	for _, c := range []struct {
		op  string
		err error
	}{
		{"Unlock", m.Unlock(ctx)},
		{"Refresh", m.Refresh(ctx)},
		{"RUnlock", rw.RUnlock(ctx)},
	} {
		e, ok := asError(c.err)
		if !ok || e.Op != c.op || !strings.HasPrefix(e.Name, "lock:job") || !errors.Is(c.err, uncomplicated.ErrNotHeld) {
			t.Errorf("%s without a hold = %v; want an *Error of %s matching ErrNotHeld", c.op, c.err, c.op)
		}
	}

	mustLock(t, m)
	env.Advance(10*time.Minute + time.Second) // the lease ends
	if _, err := m.Held(ctx); err != nil {
		t.Fatal(err)
	}
	err := m.Unlock(ctx)
	if e, ok := asError(err); !ok || e.Op != "Unlock" || e.Name != "lock:job" || !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("Unlock of a lost hold = %#v; want an *Error of Unlock on lock:job matching ErrLost", err)
	}

	mine := errors.New("fn failed")
	if err := m.Do(ctx, func(context.Context) error { return mine }); err != mine {
		t.Errorf("Do = %v; want fn's error as it is", err)
	}
}

// asError finds the *Error in err.
func asError(err error) (*uncomplicated.Error, bool) {
	var e *uncomplicated.Error
	ok := errors.As(err, &e)
	return e, ok
}

// Inspect and ForceRelease that Redis fails name themselves in their
// *Error too.
func TestError_inspection(t *testing.T) {
	fp, _ := newFaultPool(t)
	c := uncomplicated.NewClient(redigo.New(fp))
	t.Cleanup(func() { _ = c.Close() })
	fp.down.Store(true)
	_, err := inspect.Lock(context.Background(), c, "lock:job")
	if e, ok := asError(err); !ok || e.Op != "inspect.Lock" || e.Name != "lock:job" {
		t.Errorf("Inspect of a broken lock = %#v; want an *Error of inspect.Lock on lock:job", err)
	}
	_, err = inspect.ForceRelease(context.Background(), c, "lock:job")
	if e, ok := asError(err); !ok || e.Op != "inspect.ForceRelease" || e.Name != "lock:job" {
		t.Errorf("ForceRelease of a broken lock = %#v; want an *Error of inspect.ForceRelease on lock:job", err)
	}
}
