package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// Hostile input through the public API, on miniredis: every bad call
// returns an error matching the package's sentinels, never panics, and
// sends nothing to Redis; odd but valid IDs lock as well as any other.

// hostileRig is a miniredis and a Client on it, with real time.
type hostileRig struct {
	mr     *miniredis.Miniredis
	pool   *redis.Pool
	calls  *callCounter
	client *uncomplicated.Client
}

func newHostileRig(t *testing.T, opts ...uncomplicated.Option) *hostileRig {
	t.Helper()
	mr := miniredis.RunT(t)
	pool := &redis.Pool{MaxIdle: 4, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	calls := &callCounter{Driver: redigo.New(pool)}
	c := uncomplicated.NewClient(calls, opts...)
	t.Cleanup(func() { _ = c.Close() })
	return &hostileRig{mr: mr, pool: pool, calls: calls, client: c}
}

// snapshot is what Redis holds and how many calls the rig's Client has
// made of it, but for those of its own background work.
type snapshot struct {
	commands int
	keys     string
}

func (r *hostileRig) snapshot() snapshot {
	var b strings.Builder
	for _, k := range r.mr.Keys() {
		v, _ := r.mr.Get(k)
		fmt.Fprintf(&b, "%q=%q ttl=%v\n", k, v, r.mr.TTL(k))
	}
	return snapshot{commands: int(r.calls.n.Load()), keys: b.String()}
}

// noPanic runs fn and turns a panic into a test failure.
func noPanic(t *testing.T, what string, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s panicked: %v", what, p)
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn()
}

// cancelled returns a ctx that has already ended with context.Canceled.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// expired returns a ctx whose deadline has already passed.
func expired(t *testing.T) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	t.Cleanup(cancel)
	return ctx
}

// bigID is a 1 MiB ID.
var bigID = strings.Repeat("x", 1<<20)

// typedNilOrder is a nil *Order: its value-receiver ID method panics.
var typedNilOrder *Order

func TestHostile_invalidInput(t *testing.T) {
	IA, ID := uncomplicated.ErrInvalidArgument, uncomplicated.ErrInvalidArgument
	bg := context.Background()
	noop := func(context.Context) error { return nil }
	var nilCtx context.Context
	var nilM *uncomplicated.Mutex
	zeroM := &uncomplicated.Mutex{}
	named := func(opts ...uncomplicated.Option) func(*uncomplicated.Client, *uncomplicated.Mutex) error {
		return func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(c, uncomplicated.Named("x"), opts...)
			return err
		}
	}
	tryLock := func(ctx context.Context, m *uncomplicated.Mutex) error {
		ok, err := m.TryLock(ctx)
		if ok {
			return errors.New("TryLock() = true")
		}
		return err
	}
	cases := []struct {
		name string
		// held makes call's Mutex hold its lock first, and unlocked then
		// unlock it; otherwise it is new.
		held, unlocked bool
		call           func(c *uncomplicated.Client, m *uncomplicated.Mutex) error
		want           []error
	}{
		// Objects and IDs.
		{name: "New empty ID", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(c, Code(""))
			return err
		}, want: []error{ID}},
		{name: "New nil object", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New[int64](c, nil)
			return err
		}, want: []error{ID}},
		{name: "New typed nil object", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(c, typedNilOrder)
			return err
		}, want: []error{ID}},
		{name: "New ID panics", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(c, panicky{})
			return err
		}, want: []error{ID}},
		{name: "New nil ID", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(c, nilID{})
			return err
		}, want: []error{ID}},
		{name: "New func ID", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(c, funcID{})
			return err
		}, want: []error{ID}},
		{name: "Named empty", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(c, uncomplicated.Named(""))
			return err
		}, want: []error{ID}},

		// Clients and pools.
		{name: "New nil Client", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(nil, Order{1})
			return err
		}, want: []error{IA}},
		{name: "Named nil Client", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error {
			_, err := uncomplicated.New((*uncomplicated.Client)(nil), uncomplicated.Named("x"))
			return err
		}, want: []error{IA}},
		{name: "Close nil Client", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return (*uncomplicated.Client)(nil).Close() }, want: []error{IA}},
		{name: "New zero Client", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(&uncomplicated.Client{}, Order{1})
			return err
		}, want: []error{IA}},
		{name: "Close zero Client", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return (&uncomplicated.Client{}).Close() }, want: []error{IA}},
		{name: "nil Pool", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(uncomplicated.NewClient(redigo.New(nil)), uncomplicated.Named("x"))
			return err
		}, want: []error{IA}},
		{name: "typed nil Pool", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(uncomplicated.NewClient(redigo.New((*redis.Pool)(nil))), uncomplicated.Named("x"))
			return err
		}, want: []error{IA}},

		// nil and zero Mutex, every method.
		{name: "nil Mutex Lock", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return nilM.Lock(bg) }, want: []error{IA}},
		{name: "nil Mutex TryLock", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return tryLock(bg, nilM) }, want: []error{IA}},
		{name: "nil Mutex Unlock", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return nilM.Unlock(bg) }, want: []error{IA}},
		{name: "nil Mutex Refresh", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return nilM.Refresh(bg) }, want: []error{IA}},
		{name: "nil Mutex Do", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return nilM.Do(bg, noop) }, want: []error{IA}},
		{name: "nil Mutex Do nil fn", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return nilM.Do(bg, nil) }, want: []error{IA}},
		{name: "zero Mutex Lock", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return zeroM.Lock(bg) }, want: []error{IA}},
		{name: "zero Mutex TryLock", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return tryLock(bg, zeroM) }, want: []error{IA}},
		{name: "zero Mutex Unlock", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return zeroM.Unlock(bg) }, want: []error{IA}},
		{name: "zero Mutex Refresh", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return zeroM.Refresh(bg) }, want: []error{IA}},
		{name: "zero Mutex Do", call: func(*uncomplicated.Client, *uncomplicated.Mutex) error { return zeroM.Do(bg, noop) }, want: []error{IA}},

		// nil ctx, nil function.
		{name: "Lock nil ctx", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Lock(nilCtx) }, want: []error{IA}},
		{name: "TryLock nil ctx", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return tryLock(nilCtx, m) }, want: []error{IA}},
		{name: "Unlock nil ctx", held: true, call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Unlock(nilCtx) }, want: []error{IA}},
		{name: "Refresh nil ctx", held: true, call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Refresh(nilCtx) }, want: []error{IA}},
		{name: "Do nil ctx", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Do(nilCtx, noop) }, want: []error{IA}},
		{name: "Do nil fn", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Do(bg, nil) }, want: []error{IA}},

		// Options out of range.
		{name: "WithTimeout(0)", call: named(uncomplicated.WithTimeout(0)), want: []error{IA}},
		{name: "WithTimeout(-1)", call: named(uncomplicated.WithTimeout(-1)), want: []error{IA}},
		{name: "WithTimeout(MinInt64)", call: named(uncomplicated.WithTimeout(math.MinInt64)), want: []error{IA}},
		{name: "WithLease(-1)", call: named(uncomplicated.WithLease(-1)), want: []error{IA}},
		{name: "WithLease(MinInt64)", call: named(uncomplicated.WithLease(math.MinInt64)), want: []error{IA}},
		{name: "WithTicks(0)", call: named(uncomplicated.WithTicks(0)), want: []error{IA}},
		{name: "WithTicks(-1)", call: named(uncomplicated.WithTicks(-1)), want: []error{IA}},
		{name: "WithTicks(MinInt)", call: named(uncomplicated.WithTicks(math.MinInt)), want: []error{IA}},
		{name: "WithPrefix empty", call: named(uncomplicated.WithPrefix("")), want: []error{IA}},
		{name: "WithPrefix {", call: named(uncomplicated.WithPrefix("{")), want: []error{IA}},
		{name: "WithPrefix }", call: named(uncomplicated.WithPrefix("a}")), want: []error{IA}},
		{name: "WithPrefix {tag}", call: named(uncomplicated.WithPrefix("app{tag}")), want: []error{IA}},
		{name: "Client option out of range", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(uncomplicated.NewClient(redigo.New(&redis.Pool{}), uncomplicated.WithTicks(0)), uncomplicated.Named("x"))
			return err
		}, want: []error{IA}},
		{name: "Mutex option out of range on New", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_, err := uncomplicated.New(c, Order{1}, uncomplicated.WithTimeout(-time.Hour))
			return err
		}, want: []error{IA}},

		// Unlock and Refresh without a hold.
		{name: "Unlock never locked", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Unlock(bg) }, want: []error{uncomplicated.ErrNotHeld}},
		{name: "Unlock from a goroutine that never locked", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error {
			done := make(chan error, 1)
			go func() { done <- m.Unlock(bg) }()
			return <-done
		}, want: []error{uncomplicated.ErrNotHeld}},
		{name: "Unlock twice", held: true, unlocked: true, call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Unlock(bg) },
			want: []error{uncomplicated.ErrNotHeld}},
		{name: "Refresh never locked", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Refresh(bg) }, want: []error{uncomplicated.ErrNotHeld}},

		// After Client.Close.
		{name: "New after Close", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_ = c.Close()
			_, err := uncomplicated.New(c, Order{2})
			return err
		}, want: []error{uncomplicated.ErrClosed}},
		{name: "Named after Close", call: func(c *uncomplicated.Client, _ *uncomplicated.Mutex) error {
			_ = c.Close()
			_, err := uncomplicated.New(c, uncomplicated.Named("x"))
			return err
		}, want: []error{uncomplicated.ErrClosed}},
		{name: "Lock after Close", call: func(c *uncomplicated.Client, m *uncomplicated.Mutex) error { _ = c.Close(); return m.Lock(bg) },
			want: []error{uncomplicated.ErrClosed, uncomplicated.ErrNotObtained}},
		{name: "TryLock after Close", call: func(c *uncomplicated.Client, m *uncomplicated.Mutex) error { _ = c.Close(); return tryLock(bg, m) },
			want: []error{uncomplicated.ErrClosed}},
		{name: "Do after Close", call: func(c *uncomplicated.Client, m *uncomplicated.Mutex) error {
			_ = c.Close()
			return m.Do(bg, func(context.Context) error { return errors.New("fn ran") })
		}, want: []error{uncomplicated.ErrClosed}},
		{name: "Refresh after Close", held: true, call: func(c *uncomplicated.Client, m *uncomplicated.Mutex) error { _ = c.Close(); return m.Refresh(bg) },
			want: []error{uncomplicated.ErrClosed}},
		{name: "Unlock not held after Close", call: func(c *uncomplicated.Client, m *uncomplicated.Mutex) error { _ = c.Close(); return m.Unlock(bg) },
			want: []error{uncomplicated.ErrClosed, uncomplicated.ErrNotHeld}},

		// A ctx that has already ended.
		{name: "Lock cancelled ctx", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Lock(cancelled()) },
			want: []error{uncomplicated.ErrNotObtained, context.Canceled}},
		{name: "Do cancelled ctx", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error {
			return m.Do(cancelled(), func(context.Context) error { return errors.New("fn ran") })
		}, want: []error{uncomplicated.ErrNotObtained, context.Canceled}},
		{name: "Lock expired ctx", call: func(_ *uncomplicated.Client, m *uncomplicated.Mutex) error { return m.Lock(expired(t)) },
			want: []error{uncomplicated.ErrNotObtained, context.DeadlineExceeded}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newHostileRig(t)
			m := mustNew(t, r.client, Order{1})
			if tc.held {
				mustLock(t, m)
			}
			if tc.unlocked {
				if err := m.Unlock(bg); err != nil {
					t.Fatalf("first Unlock() = %v", err)
				}
			}
			before := r.snapshot()
			err := noPanic(t, tc.name, func() error { return tc.call(r.client, m) })
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("%s = %v; want %v", tc.name, err, w)
				}
			}
			_ = r.client.Close() // waits for any clean-up the call started
			if after := r.snapshot(); after != before {
				t.Errorf("Redis saw %d commands, keys before:\n%safter:\n%s; want nothing sent for invalid input",
					after.commands-before.commands, before.keys, after.keys)
			}
		})
	}
}

// Name and Fence of a nil or zero Mutex are "" and 0, not a panic.
func TestHostile_nilMutexNameFence(t *testing.T) {
	for name, m := range map[string]*uncomplicated.Mutex{"nil": nil, "zero": {}} {
		var gotName string
		var gotFence uint64
		_ = noPanic(t, name+" Name/Fence", func() error { gotName, gotFence = m.Name(), m.Fence(); return nil })
		if gotName != "" || gotFence != 0 {
			t.Errorf("%s Mutex: Name(), Fence() = %q, %d; want \"\", 0", name, gotName, gotFence)
		}
	}
}

// Unlock from a goroutine other than the one that locked releases, as with
// sync.Mutex: a hold belongs to the Mutex, not to a goroutine.
func TestHostile_Unlock_otherGoroutine(t *testing.T) {
	r := newHostileRig(t)
	m := mustNew(t, r.client, Order{1})
	mustLock(t, m)
	done := make(chan error, 1)
	go func() { done <- m.Unlock(context.Background()) }()
	if err := recv(t, done); err != nil {
		t.Errorf("Unlock() from another goroutine = %v; want nil", err)
	}
	if r.mr.Exists(m.Name()) {
		t.Errorf("key %s left behind", m.Name())
	}
}

// A 1 ns timeout on both sides: a waiter finds the holder stale on its
// first look, and fails at once under Fail or takes over under TakeOver,
// without spinning.
func TestHostile_tinyTimeout_contended(t *testing.T) {
	for _, policy := range []bool{false, true} {
		t.Run(fmt.Sprintf("takeover=%v", policy), func(t *testing.T) {
			r := newHostileRig(t)
			holder := mustNew(t, r.client, Order{1}, uncomplicated.WithLease(0), uncomplicated.WithTimeout(1))
			mustLock(t, holder)
			other := uncomplicated.NewClient(r.calls) // another process, its calls counted too
			t.Cleanup(func() { _ = other.Close() })
			waiter := mustNew(t, other, Order{1},
				uncomplicated.WithTimeout(1), uncomplicated.WithTakeOver(policy))
			before := r.snapshot()
			err := callWithin(t, "Lock", 2*time.Second, waiter.Lock)
			if !policy && !errors.Is(err, uncomplicated.ErrStale) {
				t.Errorf("Lock() = %v; want ErrStale", err)
			}
			if policy && (err != nil || !rising(holder.Fence(), waiter.Fence())) {
				t.Errorf("Lock() = %v, fence %d; want nil, above the holder's %d", err, waiter.Fence(), holder.Fence())
			}
			if n := r.snapshot().commands - before.commands; n > 16 { // a few scripts
				t.Errorf("Lock() sent %d commands; want a few", n)
			}
		})
	}
}

// A ctx that ended before the call: TryLock, Refresh and Unlock should
// return its error and send nothing to Redis, as Lock does. Each runs
// repeatedly on a pool with idle connections, because redigo races the
// write of a command against closing its connection when the ctx has
// already been cancelled.
func TestHostile_endedCtx(t *testing.T) {
	const tries = 30
	cases := []struct {
		name string
		held bool // the call's Mutex holds its lock before the call
		call func(context.Context, *uncomplicated.Mutex) error
	}{
		{name: "TryLock", call: func(ctx context.Context, m *uncomplicated.Mutex) error {
			if ok, err := m.TryLock(ctx); ok {
				return errors.New("TryLock() = true")
			} else {
				return err
			}
		}},
		{name: "Refresh", held: true, call: func(ctx context.Context, m *uncomplicated.Mutex) error { return m.Refresh(ctx) }},
		{name: "Unlock", held: true, call: func(ctx context.Context, m *uncomplicated.Mutex) error { return m.Unlock(ctx) }},
	}
	ends := []struct {
		name string
		ctx  func() context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"expired", func() context.Context { return expired(t) }, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		for _, end := range ends {
			t.Run(tc.name+"/"+end.name, func(t *testing.T) {
				r := newHostileRig(t)
				sent := 0
				for i := range tries {
					d := &callCounter{Driver: redigo.New(r.pool)} // the Client's own listening and watching is not the call's
					c := uncomplicated.NewClient(d)               // closed below, which waits for its clean-ups
					m := mustNew(t, c, Order{int64(i)})
					warm := mustNew(t, c, Order{-1})
					mustLock(t, warm) // leaves an idle connection in the pool
					if err := warm.Unlock(context.Background()); err != nil {
						t.Fatal(err)
					}
					if tc.held {
						mustLock(t, m)
					}
					before := d.n.Load()
					err := noPanic(t, tc.name, func() error { return tc.call(end.ctx(), m) })
					if !errors.Is(err, end.want) {
						t.Fatalf("%s(%s ctx) = %v; want %v", tc.name, end.name, err, end.want)
					}
					_ = c.Close()
					if d.n.Load() != before {
						sent++
					}
				}
				if sent > 0 {
					t.Errorf("%d of %d %s calls with a %s ctx sent commands to Redis; want 0", sent, tries, tc.name, end.name)
				}
			})
		}
	}
}

// A callCounter counts the calls a Client makes through its driver, but
// for those of its own background work: the probe of sharded pub/sub, the
// restart watch's INFO and CLUSTER SLOTS, and the check of its listening
// connection (PUBSUB), which a call's ctx has no say in.
type callCounter struct {
	driver.Driver
	n atomic.Int64
}

func (d *callCounter) Eval(ctx context.Context, s *driver.Script, keys []string, args []any) (any, error) {
	d.n.Add(1)
	return d.Driver.Eval(ctx, s, keys, args)
}

func (d *callCounter) EvalWait(ctx context.Context, s *driver.Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	d.n.Add(1)
	return d.Driver.EvalWait(ctx, s, keys, args, replicas, timeout)
}

func (d *callCounter) Do(ctx context.Context, keys []string, cmd string, args ...any) (any, error) {
	switch cmd {
	case "SPUBLISH", "INFO", "CLUSTER", "PUBSUB":
	default:
		d.n.Add(1)
	}
	return d.Driver.Do(ctx, keys, cmd, args...)
}

// IDs holding glob and brace characters, NUL bytes, or a mebibyte are
// valid: each locks its own key, whose other keys share its cluster slot,
// and no two of them share a lock. A held lock is one key.
func TestHostile_oddIDs(t *testing.T) {
	r := newHostileRig(t)
	ctx := context.Background()
	ids := []string{"*", "?", "[", "]", "[a-z]", "a*", "*a*", "{", "}", "{}", "{a}", "a{b}c", "}{", "{*}",
		"a\x00b", "\x00", "\x00\x00", "a b", "%2A", "lock:x", bigID, bigID + "y"}
	names := map[string]string{} // lock name -> the ID that has it
	for _, id := range ids {
		m := mustNewCode(t, r.client, Code(id))
		name := m.Name()
		if other, ok := names[name]; ok {
			t.Errorf("IDs %.20q and %.20q share the lock %.60q", id, other, name)
		}
		names[name] = id
		if strings.ContainsAny(name, "{}*?[]\x00") {
			t.Errorf("lock name of %.20q = %.60q; want no braces, glob characters or NUL", id, name)
		}
		if ok, err := m.TryLock(ctx); !ok || err != nil {
			t.Fatalf("TryLock(%.20q) = %v, %v; want true, nil: every ID has a lock of its own", id, ok, err)
		}
		queue := "lock:queue:{" + name + "}"
		if !r.mr.Exists(name) {
			t.Errorf("ID %.20q: key %.60q missing; have %d keys", id, name, len(r.mr.Keys()))
		}
		if a, b := uncomplicated.KeySlot(name), uncomplicated.KeySlot(queue); a != b {
			t.Errorf("ID %.20q: slots of the lock and its queue = %d, %d; want one slot", id, a, b)
		}
	}
	if n := len(r.mr.Keys()); n != len(ids) {
		t.Errorf("%d keys for %d held locks; want a lock key each", n, len(ids))
	}
	for name := range names {
		m, err := uncomplicated.New(r.client, Code(names[name]))
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := m.TryLock(ctx); ok || err != nil {
			t.Errorf("second TryLock(%.20q) = %v, %v; want false, nil: it is held", names[name], ok, err)
		}
	}
}

func mustNewCode(t *testing.T, c *uncomplicated.Client, id Code) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(c, id)
	if err != nil {
		t.Fatalf("New(%.20q) = %v; want a valid ID", string(id), err)
	}
	return m
}

// What a call on a server that answers garbage must return.
const (
	okReply    = iota // the reply is valid for this call
	unexpected        // an error wrapping driver.ErrUnexpectedReply
	serverErr         // the server's error, a redis.Error
	notHeld           // an error wrapping ErrNotHeld: a valid "not ours"
	anyErr            // some error: the connection or the protocol failed
)

// A server answering every command with a wrong reply: Lock, TryLock,
// Unlock and Refresh return an error of the right kind within their 2 s
// ctx, and never panic.
func TestHostile_garbageServer(t *testing.T) {
	U, S, N, A := unexpected, serverErr, notHeld, anyErr
	cases := []struct {
		name   string
		reply  string // raw RESP
		hangUp bool   // the server closes the connection after reply
		// want for Lock, TryLock, Unlock, Refresh
		lock, tryLock, unlock, refresh int
	}{
		{"status OK", "+OK\r\n", false, U, U, U, U},
		// A fence from Redis's clock is the acquire script's reply when it
		// set the lock: a valid grant. A positive integer that no clock
		// gives (a server that answers :12345 to everything) is not.
		{"integer fence", ":1796185736000001\r\n", false, okReply, okReply, U, U},
		{"integer 7", ":7\r\n", false, U, U, U, U},
		{"integer 1", ":1\r\n", false, U, U, okReply, okReply},
		{"integer 0", ":0\r\n", false, U, U, N, N},
		{"integer -1", ":-1\r\n", false, U, U, U, U},
		// redigo parses integers without an overflow check: 10^20 reads as
		// a positive integer, and 2^64+1 as 1, which the library cannot tell
		// from a real 1.
		{"huge integer", ":99999999999999999999\r\n", false, U, U, U, U},
		{"integer 2^64+1", ":18446744073709551617\r\n", false, U, U, okReply, okReply},
		{"nil bulk", "$-1\r\n", false, U, U, U, U},
		{"nil array", "*-1\r\n", false, U, U, U, U},
		{"empty array", "*0\r\n", false, U, U, U, U},
		{"array of one", "*1\r\n:1\r\n", false, U, U, U, U},
		{"array of three", "*3\r\n:1\r\n:1\r\n:1\r\n", false, U, U, U, U},
		{"array [1, \"x\"]", "*2\r\n:1\r\n$1\r\nx\r\n", false, U, U, U, U},
		{"array [0, nil]", "*2\r\n:0\r\n$-1\r\n", false, U, U, U, U},
		{"array [0, 7]", "*2\r\n:0\r\n:7\r\n", false, U, U, U, U},
		{"array [2, 1]", "*2\r\n:2\r\n:1\r\n", false, U, U, U, U},
		{"array [\"1\", 1]", "*2\r\n$1\r\n1\r\n:1\r\n", false, U, U, U, U},
		{"nested array", "*2\r\n*1\r\n:1\r\n:1\r\n", false, U, U, U, U},
		{"negative fence", "*2\r\n:1\r\n:-5\r\n", false, U, U, U, U},
		{"zero fence", "*2\r\n:1\r\n:0\r\n", false, U, U, U, U},
		{"fence as status", "*2\r\n:1\r\n+1\r\n", false, U, U, U, U},
		{"error ERR boom", "-ERR boom\r\n", false, S, S, S, S},
		{"error NOSCRIPT", "-NOSCRIPT gone\r\n", false, S, S, S, S},
		{"bulk string", "$3\r\nabc\r\n", false, U, U, okReply, U},
		{"empty bulk string", "$0\r\n\r\n", false, U, U, U, U},
		{"not RESP", "hello\r\n", false, A, A, A, A},
		{"bad bulk length", "$x\r\n", false, A, A, A, A},
		{"short bulk", "$10\r\nabc\r\n", true, A, A, A, A},
		{"closed mid-reply", "*2\r\n:1\r\n", true, A, A, A, A},
		{"closed before reply", "", true, A, A, A, A},
	}
	valid := "*2\r\n:1\r\n:1796185736000001\r\n" // the acquire script's {1, fence}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeRedis(t, tc.reply)
			f.hangUp.Store(tc.hangUp)
			client := uncomplicated.NewClient(redigo.New(f.pool(t)))
			t.Cleanup(func() { _ = client.Close() })
			calls := []struct {
				name string
				held bool // TryLock first, on a valid reply
				call func(context.Context, *uncomplicated.Mutex) error
				want int
			}{
				{"Lock", false, func(ctx context.Context, m *uncomplicated.Mutex) error { return m.Lock(ctx) }, tc.lock},
				{"TryLock", false, func(ctx context.Context, m *uncomplicated.Mutex) error {
					ok, err := m.TryLock(ctx)
					if err == nil && !ok {
						return errors.New("TryLock() = false, nil")
					}
					return err
				}, tc.tryLock},
				{"Unlock", true, func(ctx context.Context, m *uncomplicated.Mutex) error { return m.Unlock(ctx) }, tc.unlock},
				{"Refresh", true, func(ctx context.Context, m *uncomplicated.Mutex) error { return m.Refresh(ctx) }, tc.refresh},
			}
			for i, c := range calls {
				m, err := uncomplicated.New(client, uncomplicated.Named(fmt.Sprintf("garbage%d", i)))
				if err != nil {
					t.Fatal(err)
				}
				if c.held {
					f.answer(valid)
					f.hangUp.Store(false)
					if ok, err := m.TryLock(context.Background()); !ok || err != nil {
						t.Fatalf("TryLock() on a valid reply = %v, %v", ok, err)
					}
					f.answer(tc.reply)
					f.hangUp.Store(tc.hangUp)
				}
				err = callWithin(t, c.name, 2*time.Second, func(ctx context.Context) error { return c.call(ctx, m) })
				checkKind(t, c.name, err, c.want)
			}
		})
	}
}

// callWithin runs fn with a ctx ending after d, and fails the test when fn
// panics or has not returned a second after that.
func callWithin(t *testing.T, name string, d time.Duration, fn func(context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		done <- fn(ctx)
	}()
	select {
	case err := <-done:
		if err != nil && strings.HasPrefix(err.Error(), "panic: ") {
			t.Errorf("%s() panicked: %v", name, err)
		}
		return err
	case <-time.After(d + time.Second):
		t.Fatalf("%s() has not returned %v after its ctx ended", name, time.Second)
		return nil
	}
}

func checkKind(t *testing.T, call string, err error, want int) {
	t.Helper()
	var rerr redis.Error
	switch want {
	case okReply:
		if err != nil {
			t.Errorf("%s() = %v; want nil for a valid reply", call, err)
		}
	case unexpected:
		if !errors.Is(err, driver.ErrUnexpectedReply) {
			t.Errorf("%s() = %v; want driver.ErrUnexpectedReply", call, err)
		}
	case serverErr:
		if !errors.As(err, &rerr) || errors.Is(err, driver.ErrUnexpectedReply) {
			t.Errorf("%s() = %v; want the server's redis.Error", call, err)
		}
	case notHeld:
		if !errors.Is(err, uncomplicated.ErrNotHeld) {
			t.Errorf("%s() = %v; want ErrNotHeld", call, err)
		}
	case anyErr:
		if err == nil || errors.Is(err, driver.ErrUnexpectedReply) {
			t.Errorf("%s() = %v; want the connection's or the protocol's error", call, err)
		}
	}
}

// A server whose acquire script keeps reporting the same holder, also
// from the take-over script, which real Redis never does: Lock under
// TakeOver must still sleep between attempts rather than spin on Redis
// until its ctx ends.
func TestHostile_garbageHolderNoSpin(t *testing.T) {
	f := newFakeRedis(t, heldByX)
	client := uncomplicated.NewClient(redigo.New(f.pool(t)), uncomplicated.WithTimeout(50*time.Millisecond),
		uncomplicated.WithTicks(1), uncomplicated.WithTakeOver(true))
	t.Cleanup(func() {
		f.close() // first: see TestHostile_Close_garbageListener
		_ = client.Close()
	})
	m, err := uncomplicated.New(client, uncomplicated.Named("spin"))
	if err != nil {
		t.Fatal(err)
	}
	const d = 300 * time.Millisecond
	err = callWithin(t, "Lock", d, m.Lock)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock() = %v; want DeadlineExceeded", err)
	}
	// Ticks of up to 50 ms over 300 ms: a few dozen commands at most.
	if n := f.commands.Load(); n > 100 {
		t.Errorf("Lock() sent %d commands in %v; want it to sleep between attempts", n, d)
	}
}

// heldByX is an acquiring script's reply {0, "x", {}}: held by x.
const heldByX = "*3\r\n:0\r\n$1\r\nx\r\n*0\r\n"

// Client.Close returns within a few seconds even when the server answered
// the listening connection's SUBSCRIBE with garbage.
func TestHostile_Close_garbageListener(t *testing.T) {
	f := newFakeRedis(t, heldByX)
	client := uncomplicated.NewClient(redigo.New(f.pool(t)))
	m, err := uncomplicated.New(client, uncomplicated.Named("listen"))
	if err != nil {
		t.Fatal(err)
	}
	err = callWithin(t, "Lock", 200*time.Millisecond, m.Lock)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock() = %v; want DeadlineExceeded", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- client.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close() = %v", err)
		}
	case <-time.After(6 * time.Second):
		t.Errorf("Close() has not returned after 6s")
		f.close() // ends the read that Close waits for
		<-closed
	}
}

// An array header of absurd length makes redigo allocate it before
// reading: a server (or a man in the middle) can make Lock panic.
func TestHostile_hugeArrayHeader(t *testing.T) {
	f := newFakeRedis(t, "*9223372036854775807\r\n")
	client := uncomplicated.NewClient(redigo.New(f.pool(t)))
	t.Cleanup(func() { _ = client.Close() })
	m, err := uncomplicated.New(client, uncomplicated.Named("huge"))
	if err != nil {
		t.Fatal(err)
	}
	// context.Background: redigo then reads in this goroutine, so the
	// panic can be recovered here; with a cancellable ctx it happens in
	// redigo's own goroutine and ends the process.
	err = noPanic(t, "Lock", func() error { return m.Lock(context.Background()) })
	if !errors.Is(err, driver.ErrUnexpectedReply) {
		t.Errorf("Lock() = %v; want driver.ErrUnexpectedReply", err)
	}
}
