package engine

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/gomodule/redigo/redis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A ctx whose deadline has passed on the Mutex's clock counts as ended
// even before its own timer fires, as a connection's i/o timeout may.
func TestMutex_ctxErr_deadlinePassed(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Now())
	m, err := New(NewClient(redigo.New(&redis.Pool{}), config.WithClock(mock)), wire.Named("x"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), mock.Now().Add(time.Hour))
	defer cancel()
	if err := m.ctxErr(ctx); err != nil {
		t.Errorf("ctxErr() before the deadline = %v; want nil", err)
	}
	mock.Add(time.Hour)
	if err := m.ctxErr(ctx); err != context.DeadlineExceeded {
		t.Errorf("ctxErr() at the deadline = %v; want DeadlineExceeded", err)
	}
}

// A release passes its Client's wake-up channel only while a waiter of
// the Client listens on it, for Redis to hand that waiter the lock in the
// reply; otherwise "", which Redis need not read.
func TestBase_handsHere(t *testing.T) {
	c := NewClient(redigo.New(&redis.Pool{}))
	defer c.Close()
	m, err := New(c, wire.Named("x"))
	if err != nil {
		t.Fatal(err)
	}
	channel := m.x.spec.channel
	if got := m.handsHere(channel); got != "" {
		t.Errorf("handsHere before the Client listens = %q; want \"\"", got)
	}
	l := c.wakeups(false).Listen(channel, "waiter", false)
	if got := m.handsHere(channel); got != channel {
		t.Errorf("handsHere while a waiter of the Client listens = %q; want its channel %q", got, channel)
	}
	if got := m.handsHere(channel + "-other"); got != "" {
		t.Errorf("handsHere of a channel nobody listens on = %q; want \"\"", got)
	}
	l.Close(nil)
	if got := m.handsHere(channel); got != "" {
		t.Errorf("handsHere once the waiter left = %q; want \"\"", got)
	}
}
