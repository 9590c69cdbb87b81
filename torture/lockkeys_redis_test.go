package main

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// TestLockKey checks lockKey against the keys the library writes, which
// the expire fault expires.
func TestLockKey(t *testing.T) {
	requireRedis(t)
	srv := redistest.Start(t)
	pool := srv.Pool(t)
	c := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithTimeout(time.Second))
	defer c.Close()
	ctx := context.Background()
	exists := func(role, name string) {
		t.Helper()
		conn := pool.Get()
		defer conn.Close()
		if n, err := redis.Int(conn.Do("EXISTS", lockKey(role, name))); err != nil || n != 1 {
			t.Errorf("EXISTS %s (a %s) = %d, %v; want 1", lockKey(role, name), role, n, err)
		}
	}

	m, _ := uncomplicated.New(c, uncomplicated.Named("m"))
	if got, want := m.Name(), lockName("m"); got != want {
		t.Errorf("Named(%q).Name() = %q; want %q", "m", got, want)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	exists(roleMutex, m.Name())
	_ = m.Unlock(ctx)

	rw, _ := uncomplicated.NewRW(c, uncomplicated.Named("rw"))
	if err := rw.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	exists(roleWriter, rw.Name())
	_ = rw.Unlock(ctx)
	if err := rw.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	exists(roleReader, rw.Name())
	_ = rw.RUnlock(ctx)

	s, _ := uncomplicated.NewSemaphore(c, uncomplicated.Named("s"), 2)
	p, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exists(rolePermit, s.Name())
	_ = p.Release(ctx)
}
