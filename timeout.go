package uncomplicated

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/bound"
)

// The command timeout (WithCommandTimeout) bounds every call to Redis,
// whatever the caller's ctx says. Command timeouts are real time, as
// connections' deadlines are: this file, package bound and the redigo
// driver alone read the wall clock, to set them.

// A limit is the bound of one call: the caller's ctx and the command
// timeout d.
type limit struct {
	caller   context.Context // the caller's ctx
	d        time.Duration   // the command timeout; 0: none
	deadline time.Time       // d after the call began; zero without d
	bound    *bound.Context  // the call's ctx, when the caller's can never end
	cancel   context.CancelFunc
}

// newLimit bounds ctx by d. A caller's ctx that can never end
// (context.Background) gets a bound.Context, which starts no timer unless
// something waits on it; the redigo driver then bounds the command by its
// connection's read deadline.
func newLimit(ctx context.Context, d time.Duration) (limit, context.Context) {
	l := limit{caller: ctx, d: d}
	if d <= 0 {
		return l, ctx
	}
	l.deadline = time.Now().Add(d)
	if ctx.Done() == nil {
		l.bound = bound.New(ctx, l.deadline)
		return l, l.bound
	}
	ctx, l.cancel = context.WithDeadline(ctx, l.deadline)
	return l, ctx
}

// stop ends the call's ctx.
func (l limit) stop() {
	switch {
	case l.bound != nil:
		l.bound.Stop()
	case l.cancel != nil:
		l.cancel()
	}
}

// timedOut turns the error of a call (what did not come) that ran out of
// the command timeout into one that says so and matches
// os.ErrDeadlineExceeded, as a connection's own deadline does, and not
// context.DeadlineExceeded, which is the caller's ctx's. A call ran out of
// it when the call's deadline has passed, before any deadline of the
// caller's ctx, which has not ended: whether the call's ctx or the socket's
// deadline, set from it, noticed first.
func (l limit) timedOut(err error) error {
	if err == nil || l.d == 0 || l.caller.Err() != nil || time.Now().Before(l.deadline) {
		return err
	}
	if dl, ok := l.caller.Deadline(); ok && !dl.After(l.deadline) {
		return err // the caller's deadline came first
	}
	msg := fmt.Sprintf("no reply from Redis within %v (WithCommandTimeout)", l.d)
	notSent, ctxErr := errors.Is(err, driver.ErrNotSent), errors.Is(err, context.DeadlineExceeded)
	if notSent {
		msg = fmt.Sprintf("not sent to Redis within %v (WithCommandTimeout)", l.d)
	}
	if notSent || !ctxErr { // what kept it from leaving, or what came instead of the reply
		msg += ": " + err.Error()
	}
	var cause error // os.ErrDeadlineExceeded's, and what came instead of the reply
	if !ctxErr {
		cause = err
	}
	return newError("", msg, cause, os.ErrDeadlineExceeded)
}
