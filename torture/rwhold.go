package main

import (
	"context"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// writer is the locker of rw's Do: a write section READs and WRITEs the
// store under rw's fence, as a Mutex holder does.
func (w *worker) writer(rw *uncomplicated.RWMutex) locker {
	return locker{
		role: roleWriter, key: rw.Name(), lockOp: "write lock", unlockOp: "write unlock",
		do: rw.Do, fence: rw.Fence, body: w.critical,
	}
}

// reader is the locker of rw's RDo. A read lock has no fence nor Lost
// channel: fn's ctx, cancelled with an ErrLost cause, is its Lost signal.
func (w *worker) reader(rw *uncomplicated.RWMutex) locker {
	return locker{
		role: roleReader, key: rw.Name(), lockOp: "read lock", unlockOp: "read unlock",
		do: rw.RDo, body: func(ctx context.Context, key string, _ uint64, work time.Duration) *section {
			return w.glance(key, work)
		},
	}
}

// glance is a read section: LOOK at the store, work for a moment, LOOK
// again. The second LOOK is rejected when the two differ: a writer READ or
// WRITE between them. It is made also when fn's ctx has ended, as it
// changes nothing and its time marks the section's end on the store's
// clock; that the reader knew of its loss is in the section's CtxLost.
func (w *worker) glance(key string, work time.Duration) *section {
	rec := &section{End: skipped}
	first, at, err := w.storeLook(key)
	if err != nil {
		rec.Begin = failed
		return rec
	}
	rec.Begin, rec.BeginAt = accepted, at
	time.Sleep(work)
	second, at, err := w.storeLook(key)
	switch {
	case err != nil:
		rec.End = failed
	case second == first:
		rec.End, rec.EndAt = accepted, at
	default:
		rec.End, rec.EndAt = rejected, at
	}
	return rec
}
