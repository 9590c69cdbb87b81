package uncomplicated_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A server that answers :12345 to every command grants nothing: every
// acquisition fails at once with driver.ErrUnexpectedReply, as 12345 is no
// fence Redis's clock could give, and so does every call about a hold.
// Before, Lock, TryLock, RWMutex.Lock and Semaphore.Acquire reported
// success.
func TestRedis_integerServer(t *testing.T) {
	f := redistest.StartFake(t, redistest.FakeInteger)
	client := nonsenseClient(t, f.Addr())
	m, rw, s := nonsensePrimitives(t, client)
	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"Lock", m.Lock},
		{"TryLock", func(ctx context.Context) error { return tried(m.TryLock(ctx)) }},
		{"Do", func(ctx context.Context) error { return m.Do(ctx, func(context.Context) error { return nil }) }},
		{"RWMutex.Lock", rw.Lock},
		{"RWMutex.TryLock", func(ctx context.Context) error { return tried(rw.TryLock(ctx)) }},
		{"RWMutex.RLock", rw.RLock},
		{"Semaphore.Acquire", func(ctx context.Context) error { _, err := s.Acquire(ctx); return err }},
		{"Semaphore.TryAcquire", func(ctx context.Context) error { _, ok, err := s.TryAcquire(ctx); return tried(ok, err) }},
		{"LockAll", func(ctx context.Context) error { return uncomplicated.LockAll(ctx, m) }},
	}
	for _, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		began := time.Now()
		err := c.call(ctx)
		cancel()
		if !errors.Is(err, driver.ErrUnexpectedReply) || !errors.Is(err, uncomplicated.ErrNotObtained) {
			t.Errorf("%s() = %v; want ErrNotObtained and driver.ErrUnexpectedReply", c.name, err)
		}
		if d := time.Since(began); d > time.Second {
			t.Errorf("%s() took %v; want an error at once", c.name, d)
		}
	}
	closeWithin(t, client, 3*time.Second)
}

// A server that answers random bytes: every call fails, and Close returns
// within 3s whatever the listening connection and the calls left behind
// are doing. Before, Close took 11 to 15s.
func TestRedis_garbageServer(t *testing.T) {
	f := redistest.StartFake(t, redistest.FakeGarbage)
	for range 3 {
		client := nonsenseClient(t, f.Addr())
		m, rw, s := nonsensePrimitives(t, client)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		for _, call := range []func(context.Context) error{
			m.Lock, rw.Lock, rw.RLock,
			func(ctx context.Context) error { _, err := s.Acquire(ctx); return err },
			func(ctx context.Context) error { return tried(m.TryLock(ctx)) },
		} {
			if err := call(ctx); err == nil {
				t.Errorf("a call to a server that answers garbage = nil; want an error")
			}
		}
		cancel()
		closeWithin(t, client, 3*time.Second)
	}
}

// nonsenseClient is a Client on addr through a redigo pool, as the README
// builds one.
func nonsenseClient(t *testing.T, addr string) *uncomplicated.Client {
	t.Helper()
	pool := &redis.Pool{MaxIdle: 16, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr, redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
	}}
	t.Cleanup(func() { _ = pool.Close() })
	return uncomplicated.NewClient(redigo.New(pool))
}

func nonsensePrimitives(t *testing.T, c *uncomplicated.Client) (*uncomplicated.Mutex, *uncomplicated.RWMutex, *uncomplicated.Semaphore) {
	t.Helper()
	m, err := uncomplicated.New(c, uncomplicated.Named("nonsense"))
	if err != nil {
		t.Fatal(err)
	}
	rw, err := uncomplicated.NewRW(c, uncomplicated.Named("nonsense-rw"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named("nonsense-sem"), 2)
	if err != nil {
		t.Fatal(err)
	}
	return m, rw, s
}

// tried is the error of a Try call that reported ok: nil means it got
// what a server answering nonsense cannot give.
func tried(ok bool, err error) error {
	if ok && err == nil {
		return errors.New("got it")
	}
	return err
}

// closeWithin closes c and fails t unless Close returns within d.
func closeWithin(t *testing.T, c *uncomplicated.Client, d time.Duration) {
	t.Helper()
	began := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if took := time.Since(began); took > d {
		t.Errorf("Close() took %v; want at most %v", took, d)
	}
}
