package link

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/bound"
)

// redisErr is an error reply as go-redis has them.
type redisErr string

func (e redisErr) Error() string { return string(e) }

func (redisErr) RedisError() {}

func TestReplyError(t *testing.T) {
	if err := ReplyError(nil); err != nil {
		t.Errorf("replyError(nil) = %v", err)
	}
	var se *ServerError
	if err := ReplyError(redisErr("LOADING Redis is loading")); !errors.As(err, &se) || !Loading(err) {
		t.Errorf("replyError(LOADING) = %#v; want a *serverError that reads as LOADING", err)
	}
	cut := errors.New("connection reset")
	if err := ReplyError(cut); err != cut || !MayHaveRun(true, err) {
		t.Errorf("replyError(%v) = %v; want it as it is, a reply that may be lost", cut, err)
	}
}

// A call that its caller may leave runs under a ctx that ends only at the
// command timeout, which a driver can tell (bound.Deadline), so that it
// bounds the command by its connection's deadline rather than watch the
// ctx; while a wait for a connection still ends with the caller
// (driver.Waiting).
func TestCall_leftBehindCallIsBound(t *testing.T) {
	r := New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var isBound bool
	var waiting context.Context
	var stop func()
	r.Call(ctx, time.Second, nil, func(cctx context.Context) Reply {
		_, isBound = bound.Deadline(cctx)
		waiting, stop = driver.Waiting(cctx)
		return Reply{}
	})
	defer stop()
	if !isBound {
		t.Error("the call's ctx is not a bound.Context: a driver would watch it with a goroutine")
	}
	cancel()
	select {
	case <-waiting.Done():
	case <-time.After(time.Second):
		t.Error("the wait for a connection did not end with the caller's ctx")
	}
}
