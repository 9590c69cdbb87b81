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
