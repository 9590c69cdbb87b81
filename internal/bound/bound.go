// Package bound gives a call to Redis a ctx that ends only at its deadline,
// for a caller's ctx that can never end (context.Background). Unlike
// context.WithDeadline it starts no timer of its own: until something waits
// on Done, which getting an idle connection from a redigo pool does not, it
// reads the clock; a driver that sees one (Deadline) can bound the command
// by its connection's read deadline instead. A driver that waits on Done
// for every call (valkey-go, rueidis) shares an alarm with the calls whose
// deadlines fall in the same grain (see alarms.go).
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

	mu    sync.Mutex      // guards done, alarm and ended
	done  <-chan struct{} // closed at the deadline, or within a grain after; made by Done
	alarm *pending        // what closes done, if an alarm does
	ended bool            // Stop was called
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
		switch left := time.Until(b.deadline); {
		case left <= 0:
			b.done = closedChan
		case b.ended: // nobody waits on a call that has ended
			b.done = make(chan struct{})
		default:
			if b.alarm = alarm(b.deadline, left); b.alarm != nil {
				b.done = b.alarm.done
			} else {
				b.done = never
			}
		}
	}
	return b.done
}

// AfterFunc calls f, in a goroutine of its own, once Done has closed,
// unless stop is called first; stop reports whether it stopped f. Package
// context uses it, rather than a goroutine that waits on Done, for a ctx
// made from a Context (context.WithCancel, context.AfterFunc).
func (b *Context) AfterFunc(f func()) (stop func() bool) {
	done := b.Done()
	b.mu.Lock()
	p := b.alarm
	b.mu.Unlock()
	if p != nil {
		return p.afterFunc(f)
	}
	select {
	case <-done: // the deadline had passed
		go f()
		return func() bool { return false }
	default: // it never closes
		return func() bool { return true }
	}
}

// Err reports context.DeadlineExceeded from the deadline on, as Done says
// once something has asked for it. Until then it reads the clock rather
// than ask for an alarm: a client library that checks Err before each
// command (rueidis does) would otherwise ask for one for every call.
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

// Stop tells the Context that its call has ended: a Done asked after it
// never closes, and Err agrees with it. The alarm it may share goes off
// all the same, for the calls of its grain.
func (b *Context) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
}
