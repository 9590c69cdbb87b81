package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// hold runs one Do on m whose function is a fenced critical section, and
// reports it: an enter event when fn begins, a section event when Do
// returns, error events for failed calls and late events for calls that
// returned after their bound.
func (w *worker) hold(rng *rand.Rand, m *uncomplicated.Mutex) {
	key := m.Name()
	start := time.Now()
	deadline := start.Add(budget(w.cfg.Timeout))
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	work := time.Duration(1+rng.IntN(4)) * time.Millisecond

	var rec *section
	var enter event
	var fnEnd time.Time
	var lost <-chan struct{} // this hold's
	err := m.Do(ctx, func(ctx context.Context) error {
		lost = m.Lost()
		enter = event{Ev: evEnter, Seq: w.seq.Add(1), Key: key, Fence: m.Fence(), Enter: time.Now().UnixNano()}
		w.out.emit(enter)
		rec = w.critical(ctx, key, m.Fence(), work)
		fnEnd = time.Now()
		return nil
	})
	ret := time.Now()

	if rec == nil { // Lock failed; fn did not run
		w.out.emit(event{Ev: evError, Op: "lock", Kind: kind(err), Msg: err.Error()})
		w.late("lock", start, ret, deadline)
		return
	}
	w.late("lock", start, time.Unix(0, enter.Enter), deadline)
	w.late("unlock", fnEnd, ret, later(deadline, fnEnd).Add(unlockGrace))
	rec.Exit = ret.UnixNano()
	rec.Unlock = kind(err)
	rec.NotHeld = errors.Is(err, uncomplicated.ErrNotHeld)
	rec.ErrLost = errors.Is(err, uncomplicated.ErrLost)
	select {
	case <-lost:
		rec.LostSeen = true
	default:
	}
	if err != nil {
		w.out.emit(event{Ev: evError, Op: "unlock", Kind: rec.Unlock, Msg: err.Error()})
	}
	enter.Ev, enter.Rec = evSection, rec
	w.out.emit(enter)
}

// critical is the critical section: READ the key's counter from the fenced
// store, work for a moment, then WRITE it plus one, unless the READ was
// rejected or ctx (fn's) ended meanwhile.
func (w *worker) critical(ctx context.Context, key string, fence uint64, work time.Duration) *section {
	rec := &section{Write: skipped}
	ok, value, at, err := w.storeRead(key, fence)
	switch {
	case err != nil:
		rec.Read = failed
		return rec
	case !ok:
		rec.Read, rec.ReadAt = rejected, at
		return rec
	}
	rec.Read, rec.ReadAt, rec.Value = accepted, at, value
	time.Sleep(work)
	if ctx.Err() != nil { // auto-refresh found the lock lost
		rec.Write = lostCtx
		return rec
	}
	ok, at, err = w.storeWrite(key, fence, value+1)
	switch {
	case err != nil:
		rec.Write = failed
	case ok:
		rec.Write, rec.WriteAt = accepted, at
	default:
		rec.Write, rec.WriteAt = rejected, at
	}
	return rec
}

// storeRead is store.read under storeTimeout, reporting failures.
func (w *worker) storeRead(key string, fence uint64) (ok bool, value, at int64, err error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	ok, value, at, err = w.store.read(ctx, key, fence)
	w.storeDone("read", start, err)
	return ok, value, at, err
}

// storeWrite is store.write under storeTimeout, reporting failures.
func (w *worker) storeWrite(key string, fence uint64, value int64) (ok bool, at int64, err error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	ok, at, err = w.store.write(ctx, key, fence, value)
	w.storeDone("write", start, err)
	return ok, at, err
}

func (w *worker) storeDone(op string, start time.Time, err error) {
	if err != nil {
		w.out.emit(event{Ev: evError, Op: "store " + op, Kind: kind(err), Msg: err.Error()})
	}
	w.late("store "+op, start, time.Now(), start.Add(storeTimeout))
}

// late reports a call, made at start, that returned at ret, more than
// lateSlack after its bound.
func (w *worker) late(op string, start, ret, bound time.Time) {
	if over := ret.Sub(bound); over > lateSlack {
		w.out.emit(event{Ev: evLate, Op: op, Enter: start.UnixNano(), Ret: ret.UnixNano(), Over: int64(over)})
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
