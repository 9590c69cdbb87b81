package uncomplicated

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// The command timeout (WithCommandTimeout) bounds every call to Redis,
// whatever the caller's ctx says. Command timeouts are real time, as
// connections' deadlines are: this file and redigo.go alone read the wall
// clock, to set them.

// A limit is the bound of one call: the caller's ctx and the command
// timeout d.
type limit struct {
	caller   context.Context // the caller's ctx
	d        time.Duration   // the command timeout; 0: none
	deadline time.Time       // d after the call began; zero without d
	bound    *bound          // the call's ctx, when the caller's can never end
	cancel   context.CancelFunc
}

// newLimit bounds ctx by d. A caller's ctx that can never end
// (context.Background) gets a bound, which starts no timer unless
// something waits on it; the redigo driver then bounds the command by its
// connection's read deadline.
func newLimit(ctx context.Context, d time.Duration) (limit, context.Context) {
	l := limit{caller: ctx, d: d}
	if d <= 0 {
		return l, ctx
	}
	l.deadline = time.Now().Add(d)
	if ctx.Done() == nil {
		l.bound = &bound{Context: ctx, deadline: l.deadline}
		return l, l.bound
	}
	ctx, l.cancel = context.WithDeadline(ctx, l.deadline)
	return l, ctx
}

// stop ends the call's ctx.
func (l limit) stop() {
	switch {
	case l.bound != nil:
		l.bound.stop()
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

// bound is a ctx that can only end at its deadline, made for a caller's
// ctx that can never end. Unlike context.WithTimeout it starts no timer
// until something waits on Done, which getting an idle connection from a
// redigo pool does not.
type bound struct {
	context.Context // the caller's, which never ends
	deadline        time.Time

	mu    sync.Mutex    // guards done, timer and ended
	done  chan struct{} // closed at the deadline; made by Done
	timer *time.Timer
	ended bool // stop was called
}

func (b *bound) Deadline() (time.Time, bool) { return b.deadline, true }

func (b *bound) Done() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = make(chan struct{})
		done := b.done
		switch left := time.Until(b.deadline); {
		case left <= 0:
			close(done)
		case !b.ended: // nobody waits on a call that has ended
			b.timer = time.AfterFunc(left, func() { close(done) })
		}
	}
	return b.done
}

func (b *bound) Err() error {
	select {
	case <-b.Done():
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// stop ends the bound: its timer, if it has one, is stopped.
func (b *bound) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	if b.timer != nil {
		b.timer.Stop()
	}
}
