package uncomplicated_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// The Redis calls: bounded by the command timeout, and the pool's limits.

// silentServer accepts connections and reads them, but never answers, as a
// paused server or a half-open connection does. It stops at cleanup.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				_, _ = io.Copy(io.Discard, c) // until the client closes it
			}()
		}
	}()
	return ln.Addr().String()
}

// switchPool dials miniredis until silence is called, and then the silent
// server; it keeps no idle connections, so each call dials anew.
type switchPool struct {
	*redis.Pool
	silent atomic.Bool
}

func newSwitchPool(t *testing.T) *switchPool {
	t.Helper()
	mr := miniredis.RunT(t)
	quiet := silentServer(t)
	p := &switchPool{}
	p.Pool = &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		addr := mr.Addr()
		if p.silent.Load() {
			addr = quiet
		}
		return redis.DialContext(ctx, "tcp", addr)
	}}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// libraryGoroutines counts the goroutines running code of this package or
// of redigo.
func libraryGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("github.com/uncomplicated-mutex/uncomplicated.")) || bytes.Contains(g, []byte("gomodule/redigo")) {
			n++
		}
	}
	return n
}

// With a ctx that never ends, and with one that could but does not, each
// call to a server that stopped answering returns by the command timeout,
// with an error that says so, and leaves no goroutine behind once the
// Client is closed. An acquisition whose reply did not come is not asked
// again, which would take twice the timeout.
func TestCommandTimeout_serverStopsAnswering(t *testing.T) {
	const d = 300 * time.Millisecond
	ctxs := map[string]context.Context{"Background": context.Background(), "cancellable": t.Context()}
	for _, p := range primitives {
		for _, ctxName := range []string{"Background", "cancellable"} {
			t.Run(p.name+"/"+ctxName, func(t *testing.T) {
				serverStopsAnswering(ctxs[ctxName], t, p, d)
			})
		}
	}
}

func serverStopsAnswering(ctx context.Context, t *testing.T, p primitive, d time.Duration) {
	t.Helper()
	before := libraryGoroutines()
	pool := newSwitchPool(t)
	c := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithCommandTimeout(d))
	h := p.take(t, c, "held")
	pool.silent.Store(true)
	calls := []struct {
		name string
		call func() error
	}{
		{"TryLock", func() error { _, err := p.try(ctx, c, "other"); return err }},
		{"Refresh", func() error { return h.refresh(ctx) }},
		{"Held", func() error { _, err := h.check(ctx); return err }},
		{"Unlock", func() error { return h.release(ctx) }},
	}
	for _, tc := range calls {
		start := time.Now()
		err := tc.call()
		took := time.Since(start)
		if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "WithCommandTimeout") {
			t.Errorf("%s() = %v; want an error naming WithCommandTimeout and matching os.ErrDeadlineExceeded", tc.name, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s() = %v; want it not to match context.DeadlineExceeded, which is ctx's", tc.name, err)
		}
		if took < d || took >= 3*d/2 {
			t.Errorf("%s() returned after %v; want about %v", tc.name, took, d)
		}
	}
	// Lock tries again on its ticks until its ctx ends, and says what the
	// last attempt found.
	lctx, cancel := context.WithTimeout(ctx, 2*d)
	defer cancel()
	start := time.Now()
	_, err := p.wait(lctx, c, "other")
	if took := time.Since(start); took < 2*d || took >= 5*d/2 {
		t.Errorf("Lock() returned after %v; want about its ctx's %v", took, 2*d)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "WithCommandTimeout") ||
		!errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Errorf("Lock() = %v; want ErrNotObtained, its ctx's DeadlineExceeded, and the last attempt's timeout", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_ = pool.Close()
	eventually(t, "no goroutine of the library left", func() bool { return libraryGoroutines() <= before })
}

// By default each call gets 10 seconds, also under a ctx that never ends;
// 0 leaves the bound to ctx.
func TestCommandTimeout_default(t *testing.T) {
	cases := []struct {
		name string
		opts []uncomplicated.Option
		want time.Duration // 0: no deadline
	}{
		{"default", nil, limits.CommandTimeout},
		{"set", []uncomplicated.Option{uncomplicated.WithCommandTimeout(time.Second)}, time.Second},
		{"off", []uncomplicated.Option{uncomplicated.WithCommandTimeout(0)}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := &deadlinePool{}
			m := mustNew(t, uncomplicated.NewClient(redigo.New(pool), tc.opts...), Order{1})
			start := time.Now()
			_, _ = m.TryLock(context.Background())
			dl, ok := pool.deadline()
			if tc.want == 0 {
				if ok {
					t.Errorf("the pool was asked with a deadline %v away; want none", dl.Sub(start))
				}
				return
			}
			if left := dl.Sub(start); !ok || left > tc.want+time.Second/2 || left < tc.want {
				t.Errorf("the pool was asked with a deadline %v away (%v); want %v", left, ok, tc.want)
			}
		})
	}
	if _, err := uncomplicated.New(uncomplicated.NewClient(redigo.New(&deadlinePool{})), Order{1}, uncomplicated.WithCommandTimeout(-1)); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("New(WithCommandTimeout(-1)) = %v; want ErrInvalidArgument", err)
	}
}

// deadlinePool remembers the deadline of the ctx it was asked with, and
// has no connection to give.
type deadlinePool struct {
	mu sync.Mutex
	dl time.Time
	ok bool
}

func (p *deadlinePool) GetContext(ctx context.Context) (redis.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dl, p.ok = ctx.Deadline()
	return nil, errors.New("no connection")
}

func (p *deadlinePool) deadline() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dl, p.ok
}

// A *redis.Pool of one connection works: the Client does not take it to
// listen on, and its waiter gets the lock on a tick once it is free.
func TestPool_oneConnection(t *testing.T) {
	mr := miniredis.RunT(t)
	pool := &redis.Pool{MaxActive: 1, Wait: true, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	c := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithTimeout(time.Second), uncomplicated.WithCommandTimeout(time.Second))
	t.Cleanup(func() { _ = c.Close() })
	holder, waiter := mustNew(t, c, Order{1}), mustNew(t, c, Order{1})
	mustLock(t, holder)
	done := lockAsync(context.Background(), waiter)
	time.Sleep(100 * time.Millisecond) // the waiter tries a few times
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatalf("holder's Unlock() = %v; want nil", err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("waiter's Lock() = %v; want the lock", err)
	}
	if err := waiter.Unlock(context.Background()); err != nil {
		t.Errorf("waiter's Unlock() = %v", err)
	}
}

// onePool lends one connection at a time and fails when it is out; it is
// not a *redis.Pool, so its Client listens, and the waiter's next call
// finds no connection: its error says why.
type onePool struct{ *redis.Pool }

func TestPool_noConnectionLeft(t *testing.T) {
	mr := miniredis.RunT(t)
	dial := func(ctx context.Context) (redis.Conn, error) { return redis.DialContext(ctx, "tcp", mr.Addr()) }
	one := onePool{&redis.Pool{MaxActive: 1, DialContext: dial}}
	other := &redis.Pool{DialContext: dial}
	t.Cleanup(func() { _ = one.Close(); _ = other.Close() })
	mustLock(t, mustNew(t, uncomplicated.NewClient(redigo.New(other)), Order{1}))
	c := uncomplicated.NewClient(redigo.New(one), uncomplicated.WithTimeout(time.Minute))
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := mustNew(t, c, Order{1}).Lock(ctx)
	if !errors.Is(err, redis.ErrPoolExhausted) || !strings.Contains(err.Error(), "one more per Client than the calls it makes at once") {
		t.Errorf("Lock() = %v; want ErrPoolExhausted, saying the Pool needs one more connection per Client", err)
	}
}

// Waiting for a connection of a pool that has none free is bounded too.
func TestCommandTimeout_waitingForAConnection(t *testing.T) {
	const d = 200 * time.Millisecond
	mr := miniredis.RunT(t)
	pool := &redis.Pool{MaxActive: 1, Wait: true, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	busy := pool.Get() // the pool's only connection, taken
	defer busy.Close()
	c := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithCommandTimeout(d))
	t.Cleanup(func() { _ = c.Close() }) // before the pool closes: its clean-ups may still wait for a connection
	m := mustNew(t, c, Order{1})
	for _, ctx := range []context.Context{context.Background(), t.Context()} {
		start := time.Now()
		ok, err := m.TryLock(ctx)
		took := time.Since(start)
		if ok || !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "not sent to Redis within 200ms (WithCommandTimeout): no connection from the Pool") {
			t.Errorf("TryLock() = %v, %v; want the pool's wait cut by the command timeout", ok, err)
		}
		if took < d || took > d+500*time.Millisecond {
			t.Errorf("TryLock() returned after %v; want about %v", took, d)
		}
	}
}
