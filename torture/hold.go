package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// A locker is one way of holding a lock around a critical section: a
// Mutex's Do, an RWMutex's Do or RDo, a Semaphore's Do or its Acquire and
// Release.
type locker struct {
	role             string // one of the role* constants
	key              string // the lock's name
	lockOp, unlockOp string // name its calls in error and late events
	// do runs fn while holding the lock, as Mutex.Do does.
	do func(ctx context.Context, fn func(context.Context) error) error
	// fence and lost, when set, return the current hold's fence and Lost
	// channel; fn calls them.
	fence func() uint64
	lost  func() <-chan struct{}
	// body is what fn does with the store; fence is 0 when the hold has
	// none.
	body   func(ctx context.Context, key string, fence uint64, work time.Duration) *section
	manual bool // do is Acquire and Release (or Lock and Unlock), not a Do of the library
	// hurried: a hurried caller's (see hurried.go); its section never
	// parks (see linger), as its Do's ctx would end the park within ms.
	hurried bool
	// releaseWithin, when set, is how long from fn's start the release
	// after fn may run, under a ctx of its own; otherwise the release has
	// Do's bound: the lock's deadline, or fn's end, plus unlockGrace.
	releaseWithin time.Duration
}

// mutex is the locker of m's Do.
func (w *worker) mutex(m *uncomplicated.Mutex) locker {
	return locker{
		role: roleMutex, key: m.Name(), lockOp: "lock", unlockOp: "unlock",
		do: m.Do, fence: m.Fence, lost: m.Lost, body: w.critical,
	}
}

// hold runs one critical section under l, waiting for the lock up to
// patience, and reports it: a wait event when it calls Do, an enter event
// when fn begins, a section event when Do returns, error events for failed
// calls and late events for calls that returned after their bound. A
// section the coordinator parked holds on after its work (see linger).
func (w *worker) hold(rng *rand.Rand, l locker, patience time.Duration) {
	work := time.Duration(1+rng.IntN(4)) * time.Millisecond
	seq := w.seq.Add(1)
	w.out.emit(event{Ev: evWait, Seq: seq, Key: l.key, Role: l.role, Hurried: l.hurried, Enter: time.Now().UnixNano()})
	// The call begins once the event is out: an emit waits while the
	// coordinator is behind reading, which must not eat a hurried
	// caller's few ms.
	start := time.Now()
	deadline := start.Add(patience)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()

	var rec *section
	var enter event
	var fnEnd time.Time
	var lost <-chan struct{} // this hold's, when l shows it
	err := l.do(ctx, func(ctx context.Context) error {
		var fence uint64
		if l.fence != nil {
			fence = l.fence()
		}
		if l.lost != nil {
			lost = l.lost()
		}
		enter = event{Ev: evEnter, Seq: seq, Key: l.key, Role: l.role, Hurried: l.hurried, Fence: fence, Enter: time.Now().UnixNano()}
		w.out.emit(enter)
		rec = l.body(ctx, l.key, fence, work)
		if !l.hurried {
			w.linger(ctx, enter)
		}
		// Auto-refresh cancels fn's ctx with an ErrLost cause when it
		// finds the hold lost: the Lost signal of a hold that shows no
		// Lost channel.
		rec.CtxLost = errors.Is(context.Cause(ctx), uncomplicated.ErrLost)
		fnEnd = time.Now()
		return nil
	})
	ret := time.Now()

	if rec == nil { // the lock was not obtained; fn did not run
		w.out.emit(event{Ev: evError, Seq: seq, Op: l.lockOp, Kind: kind(err), Msg: err.Error(), Ret: ret.UnixNano()})
		w.late(l.lockOp, start, ret, deadline)
		return
	}
	w.late(l.lockOp, start, time.Unix(0, enter.Enter), deadline)
	releaseBy := deadline
	if l.releaseWithin > 0 {
		releaseBy = time.Unix(0, enter.Enter).Add(l.releaseWithin)
	}
	w.late(l.unlockOp, fnEnd, ret, later(releaseBy, fnEnd).Add(unlockGrace))
	rec.FnEnd = fnEnd.UnixNano()
	rec.Exit = ret.UnixNano()
	rec.Unlock = kind(err)
	rec.NotHeld = errors.Is(err, uncomplicated.ErrNotHeld)
	rec.ErrLost = errors.Is(err, uncomplicated.ErrLost)
	rec.Manual = l.manual
	if lost != nil {
		select {
		case <-lost:
			rec.LostSeen = true
		default:
		}
	} else {
		rec.LostSeen = rec.CtxLost
	}
	if err != nil {
		w.out.emit(event{Ev: evError, Op: l.unlockOp, Kind: rec.Unlock, Msg: err.Error()})
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

// storeLook is store.look under storeTimeout, reporting failures.
func (w *worker) storeLook(key string) (l look, at int64, err error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	l, at, err = w.store.look(ctx, key)
	w.storeDone("look", start, err)
	return l, at, err
}

// storeNow is store.now under storeTimeout, reporting failures.
func (w *worker) storeNow() (at int64, err error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	at, err = w.store.now(ctx)
	w.storeDone("time", start, err)
	return at, err
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
