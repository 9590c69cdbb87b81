package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
)

// Several Mutexes at once. LockAll takes them in one global order, that of
// their names, so that two callers locking overlapping sets never wait on
// each other in a cycle; what it holds while it waits for the next is kept
// alive by the auto-refresh of Do (see refreshWhile, keepAlive).

// LockAll: see uncomplicated.LockAll.
func LockAll(ctx context.Context, ms ...*Mutex) error {
	sorted, err := ordered(ctx, ms)
	if err != nil {
		return err
	}
	_, err = lockAll(ctx, "LockAll", sorted)
	return err
}

// UnlockAll: see uncomplicated.UnlockAll.
func UnlockAll(ctx context.Context, ms ...*Mutex) error {
	sorted, err := ordered(ctx, ms)
	if err != nil {
		return err
	}
	return unlockAll(ctx, "UnlockAll", sorted, nil)
}

// DoAll: see uncomplicated.DoAll.
func DoAll(ctx context.Context, ms []*Mutex, fn func(ctx context.Context) error) error {
	sorted, err := ordered(ctx, ms, fn)
	if err != nil {
		return err
	}
	holds, err := lockAll(ctx, "DoAll", sorted)
	if err != nil {
		return err
	}
	return runHolds(ctx, holds, fn, func(ctx context.Context) error {
		return unlockAll(ctx, "DoAll", sorted, holds)
	})
}

// ordered checks ctx, ms and fn, if given, and returns ms in LockAll's
// order: by name, then by Client, so that every call orders them alike.
func ordered(ctx context.Context, ms []*Mutex, fn ...func(context.Context) error) ([]*Mutex, error) {
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: no Mutex", sentinel.ErrInvalidArgument)
	}
	for _, m := range ms {
		if err := m.check(ctx, fn...); err != nil {
			return nil, err
		}
	}
	sorted := slices.Clone(ms)
	slices.SortFunc(sorted, func(a, b *Mutex) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.c.id, b.c.id))
	})
	for i := 1; i < len(sorted); i++ {
		if a, b := sorted[i-1], sorted[i]; a.name == b.name && a.c == b.c {
			return nil, fmt.Errorf("%w: %s listed twice", sentinel.ErrInvalidArgument, a.name)
		}
	}
	return sorted, nil
}

// lockAll locks ms, which ordered checked and ordered, one after the
// other, keeping those it holds alive while it waits for the next; op
// names the call in errors. It returns their holds, or the error of the
// first that failed once it has unlocked the others.
func lockAll(ctx context.Context, op string, ms []*Mutex) (holds []*hold, err error) {
	wctx, stops := ctx, make([]func() any, 0, len(ms))
	done := false // also false when a driver, logger or observer panics
	defer func() {
		for _, stop := range slices.Backward(stops) {
			if p := stop(); p != nil && err == nil {
				err = fmt.Errorf("uncomplicated: %s: refreshing the locks taken: %v", op, p)
			}
		}
		if (err != nil || !done) && len(holds) > 0 {
			rctx, cancel := releaseContext(ctx)
			defer cancel()
			_ = unlockAll(rctx, op, ms[:len(holds)], holds)
			holds = nil
		}
	}()
	// lost is the error of m's acquisition when a lock taken before it was
	// lost meanwhile (its refreshing ended wctx), and nil otherwise.
	lost := func(m *Mutex) error {
		cause := context.Cause(wctx)
		if ctx.Err() != nil || cause == nil {
			return nil
		}
		return m.c.opError(op, m.name, m.notObtained("a lock taken before it was lost: "+cause.Error(), cause))
	}
	for _, m := range ms {
		if _, err := m.acquiring(wctx, op, inspection.KindMutex, &m.x, false, nil); err != nil {
			if lerr := lost(m); lerr != nil {
				return holds, lerr
			}
			return holds, err
		}
		h := m.x.current() // this goroutine's: it holds m's turn in the process
		holds = append(holds, h)
		if len(holds) < len(ms) {
			var stop func() any
			wctx, stop = refreshWhile(wctx, h, m.cfg.KeepAlive())
			stops = append(stops, stop)
		}
	}
	if err := lost(ms[len(ms)-1]); err != nil { // lost as the last was locked
		return holds, err
	}
	done = true
	return holds, nil
}

// unlockAll releases the holds of ms, or, for nil holds, their current
// holds, in the reverse of LockAll's order, and joins the errors; op names
// the call in them.
func unlockAll(ctx context.Context, op string, ms []*Mutex, holds []*hold) error {
	var errs []error
	for i, m := range slices.Backward(ms) {
		var want *hold
		if holds != nil {
			want = holds[i]
		}
		errs = append(errs, m.c.opError(op, m.name, m.x.unlock(ctx, want)))
	}
	return errors.Join(errs...)
}
