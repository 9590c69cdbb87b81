package uncomplicated

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// A lease lock can be lost while its holder still runs: the lease ends
// during a pause, a waiter takes over a holder that was only slow, or Redis
// forgets the key (an eviction, a restart without persistence). A hold
// learns it when Refresh, Held or Unlock finds another token or none, when
// auto-refresh cannot renew the lease before it ends, or when the Client
// sees Redis restart; its Lost channel is then closed.

// A signal is a channel closed once.
type signal struct {
	ch   chan struct{}
	once sync.Once
}

// fire closes the channel; it reports whether this call closed it.
func (s *signal) fire() (closedNow bool) {
	if s != nil {
		s.once.Do(func() { close(s.ch); closedNow = true })
	}
	return closedNow
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// closed is the channel Lost returns when nothing is held.
var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// signal returns the current hold's signal, making it; m.mu is held.
func (m *Mutex) signal() *signal {
	if m.lost == nil {
		m.lost = &signal{ch: make(chan struct{})}
	}
	return m.lost
}

// Lost returns a channel that is closed when the current hold is known to
// be lost: Refresh, Held or Unlock found another token or no key, Do's
// auto-refresh could not renew the lease before it ended, or the Client saw
// Redis restart and the key gone. Each hold has its own channel; an Unlock
// that releases the lock leaves it open. When nothing is held, Lost returns
// a closed channel.
func (m *Mutex) Lost() <-chan struct{} {
	if m == nil {
		return closed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		return closed
	}
	return m.signal().ch
}

// Held asks Redis whether the lock still holds this hold's token. It
// returns (false, nil) when nothing is held here, and when the lock has
// another token or none, which also closes Lost's channel. On a Redis
// error it returns false and the error, and changes nothing.
func (m *Mutex) Held(ctx context.Context) (bool, error) {
	if err := m.usable(ctx); err != nil {
		return false, err
	}
	return m.verify(ctx)
}

// verify is Held without the checks, for the Client's restart watch too.
func (m *Mutex) verify(ctx context.Context) (bool, error) {
	if err := m.takeOp(ctx); err != nil {
		return false, m.redisError(ctx, err)
	}
	defer m.dropOp()
	m.mu.Lock()
	tokens, gen := m.tokens, m.gen
	m.mu.Unlock()
	if tokens == nil {
		return false, nil
	}
	cur, err := m.get(ctx, m.name)
	if err != nil {
		return false, m.redisError(ctx, err)
	}
	if slices.Contains(tokens, cur) {
		return true, nil
	}
	m.mu.Lock()
	current := m.gen == gen
	found, fence := current && m.signal().fire(), m.fence.Load()
	m.mu.Unlock()
	if found {
		m.logLost(ctx, "lock", fence, "Redis no longer has it")
	}
	if current {
		m.c.unwatch(m) // nothing more to find out
	}
	return false, nil
}

// A renewer is a hold that auto-refresh keeps: a Mutex's, a Permit or a
// hold of an RWMutex.
type renewer interface {
	Refresh(ctx context.Context) error
	leaseLeft() time.Duration              // how long the current lease surely lasts
	lostSignal() *signal                   // the hold's Lost signal, made if needed
	describe() (what string, fence uint64) // for the record of its loss
}

// loseRenewed is lose for the hold r, whose signal is lost.
func (b *base) loseRenewed(ctx context.Context, r renewer, lost *signal, why string) {
	what, fence := r.describe()
	b.lose(ctx, lost, what, fence, why)
}

func (m *Mutex) describe() (string, uint64) { return "lock", m.Fence() }

// lostSignal returns the current hold's signal, making it.
func (m *Mutex) lostSignal() *signal {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.signal()
}

// refreshWhile starts auto-refresh for Do's hold r. It returns fn's ctx,
// cancelled with an ErrLost cause when the hold is lost, and stop, which
// ends the refreshing, waits for it, and returns what it panicked with, if
// it did (a Pool's panic), for Do to panic with once the lock is released.
func (b *base) refreshWhile(ctx context.Context, r renewer) (context.Context, func() any) {
	fctx, cancel := context.WithCancelCause(ctx)
	lost := r.lostSignal()
	// Refreshing goes on after ctx ends, as fn may still run, and a
	// Refresh under way ends when fn returns.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	done, stopped := make(chan struct{}), make(chan struct{})
	// Made here, so that they count from Lock.
	tick := b.cfg.clock.Ticker(b.cfg.every)
	expiry := b.cfg.clock.Timer(r.leaseLeft())
	var panicked any
	go func() {
		defer close(stopped)
		defer tick.Stop()
		defer expiry.Stop()
		defer func() {
			if p := recover(); p != nil {
				panicked = p
				cancel(fmt.Errorf("uncomplicated: %s: auto-refresh panicked: %v", b.name, p))
			}
		}()
		if err := b.refreshUntil(rctx, r, tick.C, expiry, lost, done); err != nil {
			cancel(err)
		}
	}()
	return fctx, func() any {
		close(done)
		rcancel()
		<-stopped
		// fn may return after the lease has ended with the expiry timer
		// unread (the process was paused): the hold is lost all the same.
		if r.leaseLeft() <= 0 {
			b.loseRenewed(rctx, r, lost, "fn returned after the lease ended")
		}
		cancel(nil)
		return panicked
	}
}

// refreshUntil calls Refresh at every tick until done is closed. It
// returns an error wrapping ErrLost when the hold is lost: a Refresh, or
// another call, found it gone, or the lease ended (expiry fires at its
// end, as far as the last Refresh that got through tells) before a Refresh
// got through. A failed Refresh is tried again on the next tick.
func (b *base) refreshUntil(ctx context.Context, r renewer, tick <-chan time.Time, expiry *clock.Timer, lost *signal, done <-chan struct{}) error {
	for {
		select {
		case <-done:
			return nil
		case <-lost.ch:
			return b.lostError("found lost while fn ran")
		case <-expiry.C:
			if left := r.leaseLeft(); left > 0 { // a Refresh got through meanwhile
				expiry.Reset(left)
				continue
			}
			b.loseRenewed(ctx, r, lost, "the lease ended before a Refresh got through")
			return b.lostError("the lease ended before a Refresh got through")
		case <-tick:
		}
		left := r.leaseLeft()
		if left <= 0 {
			b.loseRenewed(ctx, r, lost, "the lease ended before a Refresh got through")
			return b.lostError("the lease ended before a Refresh got through")
		}
		cctx, cancel := context.WithTimeout(ctx, left)
		err := r.Refresh(cctx)
		cancel()
		switch {
		case errors.Is(err, ErrLost):
			return err
		case errors.Is(err, ErrNotHeld): // fn called Unlock
			return nil
		}
	}
}

// leaseLeft is how long the current lease surely lasts.
func (m *Mutex) leaseLeft() time.Duration {
	m.mu.Lock()
	from := m.from
	m.mu.Unlock()
	return from.Add(m.cfg.lease).Sub(m.cfg.clock.Now())
}
