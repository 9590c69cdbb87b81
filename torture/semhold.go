package main

import (
	"context"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// semDo is the locker of s's Do. Do shows fn neither the Permit's fence
// nor its Lost channel: fn's ctx, cancelled with an ErrLost cause, is its
// Lost signal.
func (w *worker) semDo(s *uncomplicated.Semaphore) locker {
	return locker{
		role: rolePermit, key: s.Name(), lockOp: "acquire", unlockOp: "release",
		do: s.Do, body: w.occupy,
	}
}

// permit is the locker of s's Acquire and Release, which show the
// Permit's fence and Lost channel. It has no auto-refresh: the section
// lasts milliseconds against a lease of a timeout, so only a stop or a
// fault of Redis outlasts it, and then Release finds the permit lost.
func (w *worker) permit(s *uncomplicated.Semaphore) locker {
	var p *uncomplicated.Permit // the current one; fn runs while it is set
	return locker{
		role: rolePermit, key: s.Name(), lockOp: "acquire", unlockOp: "release", manual: true,
		do: func(ctx context.Context, fn func(context.Context) error) error {
			var err error
			if p, err = s.Acquire(ctx); err != nil {
				return err
			}
			_ = fn(ctx) // the body returns nil
			// Release as Do does: past ctx's end, but not past its
			// deadline and the grace.
			dl, _ := ctx.Deadline()
			rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl.Add(unlockGrace))
			defer cancel()
			return p.Release(rctx)
		},
		fence: func() uint64 { return p.Fence() },
		lost:  func() <-chan struct{} { return p.Lost() },
		body:  w.occupy,
	}
}

// occupy is a permit holder's section: it reads the store's clock, works
// for a moment and reads it again. The two times bound the section on the
// store's clock, for the count of holders at each instant.
func (w *worker) occupy(_ context.Context, _ string, _ uint64, work time.Duration) *section {
	rec := &section{End: skipped}
	at, err := w.storeNow()
	if err != nil {
		rec.Begin = failed
		return rec
	}
	rec.Begin, rec.BeginAt = accepted, at
	time.Sleep(work)
	if at, err = w.storeNow(); err != nil {
		rec.End = failed
	} else {
		rec.End, rec.EndAt = accepted, at
	}
	return rec
}
