package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
)

// Auto-refresh (WithAutoRefresh): while Do's fn runs, its hold is
// refreshed every period, and fn's ctx is cancelled when the hold is
// lost.

// refreshWhile starts refreshing h every period: Do's auto-refresh, and
// LockAll's for the locks it holds while it waits for the next. It returns
// a ctx of ctx that is cancelled with an ErrLost cause when the hold is
// lost, and stop, which ends the refreshing, waits for it, and returns what
// it panicked with, if it did (a driver's panic), for Do to panic with once
// the lock is released.
func refreshWhile(ctx context.Context, h *hold, every time.Duration) (context.Context, func() any) {
	b := h.b
	fctx, cancel := context.WithCancelCause(ctx)
	lost := h.lostSignal()
	// Refreshing goes on after ctx ends, as fn may still run, and a
	// Refresh under way ends when fn returns.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	done, stopped := make(chan struct{}), make(chan struct{})
	// Made here, so that they count from Lock.
	tick := b.cfg.Clock.Ticker(every)
	expiry := b.cfg.Clock.Timer(h.leaseLeft())
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
		if err := refreshUntil(rctx, h, tick.C, expiry, lost, done); err != nil {
			cancel(err)
		}
	}()
	return fctx, func() any {
		close(done)
		rcancel()
		<-stopped
		// fn may return after the lease has ended with the expiry timer
		// unread (the process was paused): the hold is lost all the same.
		if h.leaseLeft() <= 0 {
			h.lose(rctx, lost, "fn returned after the lease ended")
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
func refreshUntil(ctx context.Context, h *hold, tick <-chan time.Time, expiry *clock.Timer, lost *signal, done <-chan struct{}) error {
	b := h.b
	for {
		select {
		case <-done:
			return nil
		case <-lost.ch:
			return b.lostError("found lost while it was refreshed")
		case <-expiry.C:
			if left := h.leaseLeft(); left > 0 { // a Refresh got through meanwhile
				expiry.Reset(left)
				continue
			}
			h.lose(ctx, lost, "the lease ended before a Refresh got through")
			return b.lostError("the lease ended before a Refresh got through")
		case <-tick:
		}
		left := h.leaseLeft()
		if left <= 0 {
			h.lose(ctx, lost, "the lease ended before a Refresh got through")
			return b.lostError("the lease ended before a Refresh got through")
		}
		cctx, cancel := context.WithTimeout(ctx, left)
		err := h.Refresh(cctx)
		cancel()
		switch {
		case errors.Is(err, sentinel.ErrLost):
			return err
		case errors.Is(err, sentinel.ErrNotHeld): // fn called Unlock
			return nil
		}
	}
}
