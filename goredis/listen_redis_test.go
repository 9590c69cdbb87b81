package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// heldThenStopped returns a Mutex named name, held through a go-redis
// client of srv with opts, once srv has stopped answering (SIGSTOP);
// resume continues srv, and the test's end does too.
func heldThenStopped(t *testing.T, srv *redistest.Server, name string, opts *redis.Options, copts ...uncomplicated.Option) (m *uncomplicated.Mutex, resume func()) {
	t.Helper()
	opts.Addr = srv.Addr
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	c := goredis.NewClient(rdb, copts...)
	t.Cleanup(func() { _ = c.Close() })
	m, err := uncomplicated.New(c, uncomplicated.Named(name))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(context.Background()); err != nil { // a connection in the pool
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resume = func() { _ = srv.Resume() }
	t.Cleanup(resume)
	return m, resume
}

// With go-redis's defaults (ContextTimeoutEnabled off), a call to a
// server that stopped answering still ends with its ctx.
func TestRedis_stoppedServerEndsWithCtx(t *testing.T) {
	m, _ := heldThenStopped(t, redistest.Start(t), "stopped", &redis.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := m.Unlock(ctx)
	if d := time.Since(start); d > 2*time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Unlock on a stopped server = %v after %v; want the ctx's DeadlineExceeded by its deadline", err, d)
	}
}

// A call cancelled before its deadline, on a server that stopped
// answering, ends at the cancel, with go-redis's defaults and with
// ContextTimeoutEnabled, which bounds calls by their deadline alone: the
// caller leaves the call to the command timeout (see the package doc).
func TestRedis_stoppedServerCancelled(t *testing.T) {
	srv := redistest.Start(t)
	for _, enabled := range []bool{false, true} {
		m, resume := heldThenStopped(t, srv, fmt.Sprintf("cancelled-%v", enabled),
			&redis.Options{ContextTimeoutEnabled: enabled}, uncomplicated.WithCommandTimeout(time.Second))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		err := m.Unlock(ctx)
		took := time.Since(start)
		resume()
		switch {
		case err == nil:
			t.Errorf("ContextTimeoutEnabled %v: Unlock on a stopped server = nil", enabled)
		case took > 600*time.Millisecond:
			t.Errorf("ContextTimeoutEnabled %v: Unlock took %v after a cancel at 100ms; want it to end with the cancel", enabled, took)
		}
	}
}
