package uncomplicated_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// droppingDriver is a driver that keeps its connections when a call's ctx
// ends (as rueidis does): it returns ctx's error at once, while a script
// it had sent still runs in Redis, late (after delay), as one queued on
// another of its connections would.
type droppingDriver struct {
	driver.Driver
	delay time.Duration
}

func (droppingDriver) KeepsConnectionsOnCancel() {}

func (d droppingDriver) Eval(ctx context.Context, s *driver.Script, keys []string, args []any) (any, error) {
	if ctx.Err() == nil {
		if deadline, ok := ctx.Deadline(); !ok || time.Until(deadline) > d.delay {
			return d.Driver.Eval(ctx, s, keys, args)
		}
	}
	go func() {
		time.Sleep(d.delay)
		_, _ = d.Driver.Eval(context.Background(), s, keys, args)
	}()
	<-ctx.Done()
	return nil, ctx.Err()
}

// An attempt that its driver dropped when the caller gave up, but that
// Redis runs after the Client gave back its token, gets the lock with its
// whole lease: the Client gives it back once more a second later, so that
// another Client gets the lock within two seconds, not after the lease.
func TestRedis_droppedAttemptGivenBackAgain(t *testing.T) {
	srv := redistest.Start(t)
	inner := redigo.New(srv.Pool(t))
	c := uncomplicated.NewClient(droppingDriver{Driver: inner, delay: 200 * time.Millisecond}, uncomplicated.WithLease(time.Minute))
	t.Cleanup(func() { _ = c.Close() })
	m := mustNew(t, c, Order{1})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err := m.Lock(ctx)
	cancel()
	if !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Fatalf("Lock() with the attempt dropped = %v; want ErrNotObtained", err)
	}
	time.Sleep(300 * time.Millisecond) // the dropped attempt has run, after the first give-back
	other := uncomplicated.NewClient(inner)
	t.Cleanup(func() { _ = other.Close() })
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	if err := mustNew(t, other, Order{1}).Lock(ctx); err != nil {
		t.Fatalf("another Client's Lock() = %v; want the lock within 2s, not the minute of the dropped attempt's lease", err)
	}
	t.Logf("another Client got the lock after %v", time.Since(start).Round(time.Millisecond))
}

// lateDriver runs each acquisition attempt at once but hands its reply
// back only after delay, as a busy connection would read it.
type lateDriver struct {
	driver.Driver
	delay time.Duration
}

func (d lateDriver) Eval(ctx context.Context, s *driver.Script, keys []string, args []any) (any, error) {
	reply, err := d.Driver.Eval(ctx, s, keys, args)
	if s == lua.Acquire {
		time.Sleep(d.delay)
	}
	return reply, err
}

// An attempt that got the lock after its caller gave up is given back
// when its reply comes; Close waits for that reply, so that the client
// library can be closed right after it with no lock left held for its
// lease. Before, Close returned at once, and the give-back found the pool
// closed.
func TestClose_waitsForALateAttempt(t *testing.T) {
	mr := miniredis.RunT(t)
	pool := poolOf(t, mr.Addr())
	c := uncomplicated.NewClient(lateDriver{Driver: redigo.New(pool), delay: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err := mustNew(t, c, Order{5}).Lock(ctx)
	cancel()
	if !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Fatalf("Lock() whose reply comes after its ctx ended = %v; want ErrNotObtained", err)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
	_ = pool.Close() // as a program closes its client library after the lock client

	oc := uncomplicated.NewClient(redigo.New(poolOf(t, mr.Addr())))
	t.Cleanup(func() { _ = oc.Close() })
	if ok, err := mustNew(t, oc, Order{5}).TryLock(context.Background()); !ok || err != nil {
		t.Errorf("another Client's TryLock() after Close = %v, %v; want the lock, given back", ok, err)
	}
}
