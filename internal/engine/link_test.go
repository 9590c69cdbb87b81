package engine

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// The seam for other Redis clients, and what every driver shares: the
// events of a listening connection, error replies and command timeouts.

// recordingSub records what is sent on a listening connection.
type recordingSub struct{ sent []string }

func (s *recordingSub) Subscribe(c string)   { s.sent = append(s.sent, "sub "+c) }
func (s *recordingSub) Unsubscribe(c string) { s.sent = append(s.sent, "unsub "+c) }
func (s *recordingSub) Ping()                {}
func (s *recordingSub) Close()               {}
func (s *recordingSub) Receive(ctx context.Context) (driver.Event, error) {
	<-ctx.Done()
	return driver.Event{}, ctx.Err()
}

// A Cluster ends the subscriptions to the channels of a slot that moves;
// the Client subscribes again, which reaches the slot's new master, and
// its waiters count as unheard until Redis confirms.
func TestWakeups_followsMovedSlot(t *testing.T) {
	w := newWakeups(nil, clock.New(), 0, "lock")
	sub := &recordingSub{}
	w.conn = sub
	l := w.listen("c", "token", false)
	w.confirm(driver.Event{Kind: driver.EventSubscribed, Channel: "c"})
	if confirmed, _, _, _ := l.state(); !confirmed {
		t.Fatal("not confirmed after the subscription")
	}
	w.confirm(driver.Event{Kind: driver.EventUnsubscribed, Channel: "c"}) // the slot moved
	if confirmed, coming, _, _ := l.state(); confirmed || !coming {
		t.Errorf("state after Redis unsubscribed = %v, %v; want unconfirmed, coming", confirmed, coming)
	}
	if want := []string{"sub c", "sub c"}; !slices.Equal(sub.sent, want) {
		t.Errorf("sent %q; want %q", sub.sent, want)
	}
	w.confirm(driver.Event{Kind: driver.EventSubscribed, Channel: "c"})
	if confirmed, _, _, _ := l.state(); !confirmed {
		t.Error("not confirmed after the new subscription")
	}

	// An unsubscription the Client asked for is only counted.
	defer SetMaxIdleChannels(0)()
	l.close(nil) // no idle channels kept: UNSUBSCRIBE at once
	w.confirm(driver.Event{Kind: driver.EventUnsubscribed, Channel: "c"})
	if want := []string{"sub c", "sub c", "unsub c"}; !slices.Equal(sub.sent, want) {
		t.Errorf("sent %q; want %q", sub.sent, want)
	}
	if _, ok := w.chans["c"]; ok {
		t.Error("channel kept after its unsubscription was confirmed")
	}
}

// redisErr is an error reply as go-redis has them.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

func TestReplyError(t *testing.T) {
	if err := replyError(nil); err != nil {
		t.Errorf("replyError(nil) = %v", err)
	}
	var se *serverError
	if err := replyError(redisErr("LOADING Redis is loading")); !errors.As(err, &se) || !loading(err) {
		t.Errorf("replyError(LOADING) = %#v; want a *serverError that reads as LOADING", err)
	}
	cut := errors.New("connection reset")
	if err := replyError(cut); err != cut || !mayHaveRun(true, err) {
		t.Errorf("replyError(%v) = %v; want it as it is, a reply that may be lost", cut, err)
	}
}

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
	c := NewClient(silentDriver{}, WithCommandTimeout(20*time.Millisecond))
	defer c.Close()
	m, err := New(c, Named("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(context.Background()); !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("TryLock = %v; want os.ErrDeadlineExceeded, not the ctx's", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := m.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotObtained) {
		t.Errorf("Lock under a shorter ctx = %v; want the ctx's DeadlineExceeded and ErrNotObtained", err)
	}
	// Lock tries again on its ticks while Redis does not answer, and says
	// so when its ctx ends.
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := m.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotObtained) ||
		!errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "Redis failed") {
		t.Errorf("Lock under a longer ctx = %v; want the ctx's DeadlineExceeded, ErrNotObtained and what Redis last did", err)
	}
	if _, err := New(NewClient(nil), Named("x")); !errors.Is(err, ErrInvalidArgument) {
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
	m, err := New(c, Named("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(context.Background()); !errors.Is(err, ErrNotObtained) || !errors.Is(err, driver.ErrNotSent) {
		t.Errorf("TryLock = %v; want ErrNotObtained and the driver's not-sent error", err)
	}
	if n := d.calls.Load(); n != 1 {
		t.Errorf("%d calls to the driver; want 1: no second attempt, no release", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := m.Lock(ctx); !errors.Is(err, ErrNotObtained) || !errors.Is(err, driver.ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock = %v; want ErrNotObtained, the driver's not-sent error and the ctx's", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := d.calls.Load(); n < 3 {
		t.Errorf("%d calls to the driver; want Lock's attempts on its ticks", n)
	}
}
