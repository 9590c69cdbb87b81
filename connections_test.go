package uncomplicated_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"

	"github.com/alicebob/miniredis/v2"
)

// pooledDriver is a driver over a pool of conns connections, which it
// tells the Client (see package driver): each call holds one of them.
// While stall is set, the acquisition attempts (lua.Acquire) hold theirs
// until stalled is closed, as under a Redis too busy to answer them yet.
type pooledDriver struct {
	driver.Driver
	conns    chan struct{}
	stall    atomic.Bool
	stalled  chan struct{}
	attempts atomic.Int64 // acquisition attempts holding a connection
	most     atomic.Int64 // the most of attempts at once
	sent     atomic.Int64 // acquisition attempts that had a connection
}

func newPooledDriver(d driver.Driver, conns int) *pooledDriver {
	return &pooledDriver{Driver: d, conns: make(chan struct{}, conns), stalled: make(chan struct{})}
}

func (d *pooledDriver) Connections() int { return cap(d.conns) }

func (d *pooledDriver) Eval(ctx context.Context, s *driver.Script, keys []string, args []any) (any, error) {
	select {
	case d.conns <- struct{}{}:
	case <-ctx.Done():
		return nil, driver.NotSent(ctx.Err())
	}
	defer func() { <-d.conns }()
	if s == lua.Acquire {
		d.sent.Add(1)
		n := d.attempts.Add(1)
		defer d.attempts.Add(-1)
		for old := d.most.Load(); n > old && !d.most.CompareAndSwap(old, n); old = d.most.Load() {
		}
		if d.stall.Load() {
			<-d.stalled
		}
	}
	return d.Driver.Eval(ctx, s, keys, args)
}

// Callers that wait for a lock take their turn for a bounded pool's
// connections apart from the holder: with every caller's attempt stuck in
// Redis, half the pool stays free, and the holder's Unlock goes
// through at once rather than waiting for a connection behind them. A
// caller whose ctx ends while it waits for its turn sends nothing. Without
// the turns, the attempts take the whole pool and Unlock waits out its
// ctx.
func TestConnections_releaseNeverWaitsBehindAttempts(t *testing.T) {
	mr := miniredis.RunT(t)
	pool := poolOf(t, mr.Addr())
	const conns, turns = 8, 4 // half of 8 kept free
	d := newPooledDriver(redigo.New(pool), conns)
	c := uncomplicated.NewClient(d)
	t.Cleanup(func() { _ = c.Close() })
	holder := mustNew(t, c, Order{3})
	mustLock(t, holder)

	d.stall.Store(true)
	const callers = 3 * conns
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := mustNew(t, c, Order{3}) // a Mutex per call, as a request handler makes it
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := m.Lock(ctx); err != nil {
				errs <- err
				return
			}
			errs <- m.Unlock(ctx)
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); d.attempts.Load() < turns && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for any attempt beyond its turn to show
	if most := d.most.Load(); most != turns {
		t.Errorf("%d attempts held a connection at once; want %d, half of %d", most, turns, conns)
	}

	sent := d.sent.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	err := mustNew(t, c, Order{3}).Lock(ctx)
	cancel()
	if !errors.Is(err, uncomplicated.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock() of a caller that waited for its turn past its deadline = %v; want ErrNotObtained and context.DeadlineExceeded", err)
	}
	if n := d.sent.Load() - sent; n != 0 {
		t.Errorf("that caller sent %d attempts; want none", n)
	}

	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	err = holder.Unlock(ctx)
	cancel()
	if err != nil {
		t.Errorf("the holder's Unlock() with every caller's attempt stuck = %v; want it through at once", err)
	}

	close(d.stalled)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a caller's Lock or Unlock = %v", err)
		}
	}
}
