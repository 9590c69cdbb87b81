package engine

import (
	"context"
	"errors"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// Claims. A release that hands the lock to a queued waiter gives it a
// claim, not its lease: the lock is the waiter's for a short time only
// (see config.claim), so that a waiter that was paused while it waited (a
// stopped process, a long GC pause) holds the lock up for that long and
// no longer; the next waiter then gets it by its own attempt. A waiter
// that hears the hand-off while at least half the claim surely remains
// returns from Lock at once (see waiter.handedOver); one that hears it
// later tries again at once, and that attempt restarts the lease if the
// lock is still its own.
//
// The holder takes the lock, turning the claim into its lease, with its
// first Refresh (auto-refresh makes them) or, at the latest, half-way
// through the claim, when the Client refreshes the hold itself, with half
// a claim to spare. So a hold released before then, as most are, costs
// Redis nothing more than one that was not handed over; until it is taken,
// its lease is the claim.

// A claimTake is the pending take of a hold's claim.
type claimTake struct {
	timer *clock.Timer
	done  func() // tells the clock the take is over (see settle.Observer)
}

// takeAt makes the Client take h's claim at at, unless a Refresh takes it
// first. The caller holds h.mu.
func (h *hold) takeAt(at time.Time) {
	clk := h.b.cfg.clock
	done := func() {}
	if obs, ok := clk.(settle.Observer); ok {
		done = obs.Due(at)
	}
	t := &claimTake{done: done}
	t.timer = clk.AfterFunc(max(clk.Until(at), 0), func() {
		defer done()
		h.takeClaim(t)
	})
	h.pendingTake = t
}

// stopTake ends the pending take, if any: the claim was taken or the hold
// released. The caller holds h.mu.
func (h *hold) stopTake() {
	if h.pendingTake != nil && h.pendingTake.timer.Stop() {
		h.pendingTake.done()
	}
	h.pendingTake = nil
}

// takeClaim takes h's claim for the pending take t: it refreshes the hold,
// which gives it its lease. When Redis fails it tries again half-way
// through what surely remains of the claim; once the claim has surely
// ended, the hold is lost. Close waits for it.
func (h *hold) takeClaim(t *claimTake) {
	h.mu.Lock()
	pending := h.pendingTake == t && h.tokens != nil
	if h.pendingTake == t {
		h.pendingTake = nil
	}
	h.mu.Unlock()
	if !pending || !h.b.c.backgroundStarts() {
		return
	}
	defer h.b.c.cleanups.Done()
	defer func() { _ = recover() }() // a driver's panic ends the take, not the process
	ctx, cancel := context.WithTimeout(h.b.c.ctx, link.DetachedTimeout)
	defer cancel()
	_, err := h.refresh(ctx, false)
	if err == nil || errors.Is(err, ErrNotHeld) { // taken, or found lost or released
		return
	}
	left := h.leaseLeft()
	if left <= 0 {
		h.lose(ctx, h.lostSignal(), "its claim ended before it was taken")
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.claimed && h.tokens != nil && h.pendingTake == nil {
		h.takeAt(h.b.cfg.clock.Now().Add(left / 2))
	}
}
