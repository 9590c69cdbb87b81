package engine

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// The seam for other Redis clients, and what every driver shares: the
// events of a listening connection, error replies and command timeouts.

// silentDriver is a Driver of a server that never answers.
type silentDriver struct{}

func (silentDriver) Eval(ctx context.Context, _ *driver.Script, _ []string, _ []any) (any, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (silentDriver) EvalWait(ctx context.Context, _ *driver.Script, _ []string, _ []any, _ int, _ time.Duration) (any, int64, error) {
	<-ctx.Done()
	return nil, 0, ctx.Err()
}

func (silentDriver) Do(ctx context.Context, _ []string, _ string, _ ...any) (any, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (silentDriver) Listen(ctx context.Context, _ bool) (driver.Subscription, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A Driver's call is bounded by the command timeout, and says so as the
// redigo driver does; the caller's own deadline says its own.
func TestNewDriverClient_commandTimeout(t *testing.T) {
	c := NewClient(silentDriver{}, config.WithCommandTimeout(20*time.Millisecond))
	defer c.Close()
	m, err := New(c, wire.Named("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(context.Background()); !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("TryLock = %v; want os.ErrDeadlineExceeded, not the ctx's", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := m.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, sentinel.ErrNotObtained) {
		t.Errorf("Lock under a shorter ctx = %v; want the ctx's DeadlineExceeded and ErrNotObtained", err)
	}
	// Lock tries again on its ticks while Redis does not answer, and says
	// so when its ctx ends.
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := m.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, sentinel.ErrNotObtained) ||
		!errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "Redis failed") {
		t.Errorf("Lock under a longer ctx = %v; want the ctx's DeadlineExceeded, ErrNotObtained and what Redis last did", err)
	}
	if _, err := New(NewClient(nil), wire.Named("x")); !errors.Is(err, sentinel.ErrInvalidArgument) {
		t.Errorf("Named on a nil Driver = %v; want ErrInvalidArgument", err)
	}
}

// unsentDriver is a Driver whose calls never leave: it counts them.
type unsentDriver struct{ calls atomic.Int64 }

func (d *unsentDriver) Eval(context.Context, *driver.Script, []string, []any) (any, error) {
	d.calls.Add(1)
	return nil, driver.NotSent(errors.New("no connection"))
}

func (d *unsentDriver) EvalWait(context.Context, *driver.Script, []string, []any, int, time.Duration) (any, int64, error) {
	d.calls.Add(1)
	return nil, 0, driver.NotSent(errors.New("no connection"))
}

func (d *unsentDriver) Do(context.Context, []string, string, ...any) (any, error) {
	d.calls.Add(1)
	return nil, driver.NotSent(errors.New("no connection"))
}

func (d *unsentDriver) Listen(context.Context, bool) (driver.Subscription, error) {
	return nil, driver.ErrNoPubSub
}

// A TryLock whose script was never sent fails at once: nothing can hold
// the lock, so it neither asks again nor releases in the background, as it
// does when a sent script's reply is lost. A Lock tries again on its ticks
// until its ctx ends, and releases nothing either.
func TestNewDriverClient_notSent(t *testing.T) {
	d := &unsentDriver{}
	c := NewClient(d)
	m, err := New(c, wire.Named("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(context.Background()); !errors.Is(err, sentinel.ErrNotObtained) || !errors.Is(err, driver.ErrNotSent) {
		t.Errorf("TryLock = %v; want ErrNotObtained and the driver's not-sent error", err)
	}
	if n := d.calls.Load(); n != 1 {
		t.Errorf("%d calls to the driver; want 1: no second attempt, no release", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := m.Lock(ctx); !errors.Is(err, sentinel.ErrNotObtained) || !errors.Is(err, driver.ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock = %v; want ErrNotObtained, the driver's not-sent error and the ctx's", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := d.calls.Load(); n < 3 {
		t.Errorf("%d calls to the driver; want Lock's attempts on its ticks", n)
	}
}
