package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
)

// run is Do for a hold acquired for it: fn, with auto-refresh if
// configured, then release, also when fn panics (the panic then goes on).
// fn's ctx carries the hold's fence for FenceOf. See runHolds.
func (h *hold) run(ctx context.Context, fn func(context.Context) error, release func(context.Context) error) error {
	return runHolds(withFence(ctx, h.fence), []*hold{h}, fn, release)
}

// runHolds runs fn under holds hs, with the auto-refresh of each that has
// one, then release, also when fn panics (the panic then goes on). fn's
// ctx is cancelled when a hold is found lost, by whatever finds it (its
// auto-refresh, the restart watch, a Refresh or Held of fn's own). The
// release ignores ctx's cancellation but not its deadline (see
// releaseContext). It returns fn's error joined with release's, and with
// ErrLost when a hold was lost while fn ran.
func runHolds(ctx context.Context, hs []*hold, fn func(context.Context) error, release func(context.Context) error) (err error) {
	fctx, stops := ctx, make([]func() any, 0, len(hs))
	for _, h := range hs {
		if every := h.b.cfg.Every; every > 0 {
			var stop func() any
			fctx, stop = refreshWhile(fctx, h, every)
			stops = append(stops, stop)
		}
	}
	if len(stops) < len(hs) { // holds without auto-refresh, whose loss ends fctx as auto-refresh does
		var cancel context.CancelCauseFunc
		fctx, cancel = context.WithCancelCause(fctx)
		defer cancel(nil)
		for _, h := range hs {
			if h.b.cfg.Every == 0 {
				stop := h.lostSignal().whenFired(func() { cancel(h.b.lostError(h.kind.what + " found lost")) })
				defer stop()
			}
		}
	}
	defer func() {
		var panicked any
		for _, stop := range slices.Backward(stops) {
			if p := stop(); p != nil && panicked == nil {
				panicked = p
			}
		}
		if panicked != nil {
			defer panic(panicked) // the driver's, once the holds are released
		}
		lost := make([]bool, len(hs))
		for i, h := range hs {
			h.mu.Lock()
			lost[i] = h.lost != nil && isClosed(h.lost.ch) // made by whatever found the hold lost
			h.mu.Unlock()
		}
		if rerr := releaseAfter(ctx, slices.Contains(lost, true), release); rerr != nil {
			err = errors.Join(err, rerr)
		}
		for i, h := range hs {
			if lost[i] && !errors.Is(err, sentinel.ErrLost) {
				err = errors.Join(err, h.b.lostError(h.kind.what+" lost while fn ran"))
			}
		}
	}()
	return fn(fctx)
}

// lostRelease bounds the wait for the release that ends Do, or Lead, once
// a hold is known lost: Redis may be out of reach, and the caller has
// heard what matters.
const lostRelease = 500 * time.Millisecond

// releaseAfter makes release, the release that ends Do or Lead, under
// releaseContext; with lost (a hold is known lost), for lostRelease at
// most. A release cut short goes on in the background, as far as
// Client.Close. Unless the caller's ctx ended, the caller hears of no
// deadline but its own: a release cut short of a hold known lost reports
// nothing (the loss says it all), and one cut short by link.DetachedTimeout
// reports that, matching os.ErrDeadlineExceeded as the command timeout
// does.
func releaseAfter(ctx context.Context, lost bool, release func(context.Context) error) error {
	rctx, cancel := releaseContext(ctx)
	defer cancel()
	if lost {
		var lcancel context.CancelFunc
		rctx, lcancel = context.WithTimeout(rctx, lostRelease)
		defer lcancel()
	}
	err := release(rctx)
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if lost {
		return nil
	}
	return fmt.Errorf("uncomplicated: no answer to the release within %v; it goes on in the background: %w", link.DetachedTimeout, os.ErrDeadlineExceeded)
}

// releaseGrace is how long the release that ends Do may run past the
// deadline of Do's ctx.
const releaseGrace = 50 * time.Millisecond

// releaseContext is the ctx of the release that ends Do: it ignores the
// cancellation of ctx, so that a lock is released also when fn returned
// because ctx ended, but not its deadline, so that Do returns in time.
func releaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), link.DetachedTimeout)
	dl, ok := ctx.Deadline()
	if !ok {
		return uctx, cancel
	}
	dctx, dcancel := context.WithDeadline(uctx, dl.Add(releaseGrace))
	return dctx, func() { dcancel(); cancel() }
}

// fenceCtxKey is the key of the fence that the ctx of Do's fn carries.
type fenceCtxKey struct{}

// withFence returns ctx carrying fence for FenceOf; a read hold's 0 hides
// the fence of a Do that runs around it.
func withFence(ctx context.Context, fence uint64) context.Context {
	return context.WithValue(ctx, fenceCtxKey{}, fence)
}

// FenceOf: see uncomplicated.FenceOf.
func FenceOf(ctx context.Context) (uint64, bool) {
	if ctx == nil {
		return 0, false
	}
	fence, _ := ctx.Value(fenceCtxKey{}).(uint64)
	return fence, fence > 0
}
