// Package bound gives a call to Redis a ctx that ends only at its deadline,
// for a caller's ctx that can never end (context.Background). Unlike
// context.WithDeadline it starts no timer until something waits on Done,
// which getting an idle connection from a redigo pool does not; a driver
// that sees one (Deadline) can bound the command by its connection's read
// deadline instead.
package bound

import (
	"context"
	"sync"
	"time"
)

// A Context ends only at its deadline.
type Context struct {
	context.Context // the caller's, which never ends
	deadline        time.Time

	mu    sync.Mutex    // guards done, timer and ended
	done  chan struct{} // closed at the deadline; made by Done
	timer *time.Timer
	ended bool // Stop was called
}

// New returns the Context of parent, which never ends, that ends at
// deadline.
func New(parent context.Context, deadline time.Time) *Context {
	return &Context{Context: parent, deadline: deadline}
}

// Deadline reports the Context that ctx is, if it is one, and its deadline.
func Deadline(ctx context.Context) (time.Time, bool) {
	if b, ok := ctx.(*Context); ok {
		return b.deadline, true
	}
	return time.Time{}, false
}

func (b *Context) Deadline() (time.Time, bool) { return b.deadline, true }

func (b *Context) Done() <-chan struct{} {
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

// Err reports context.DeadlineExceeded from the deadline on. Until
// something waits on Done, it reads the clock rather than start a timer:
// a client library that checks Err before each command (rueidis does)
// would otherwise start one for every call.
func (b *Context) Err() error {
	b.mu.Lock()
	done := b.done
	if done == nil {
		if time.Until(b.deadline) > 0 {
			b.mu.Unlock()
			return nil
		}
		b.done = closedChan // the deadline has passed: Done is closed from now on
		b.mu.Unlock()
		return context.DeadlineExceeded
	}
	b.mu.Unlock()
	select {
	case <-done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// closedChan is the Done of a Context whose deadline had passed when it was
// first asked.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Stop ends the Context's timer, if it has one.
func (b *Context) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	if b.timer != nil {
		b.timer.Stop()
	}
}
