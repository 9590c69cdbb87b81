package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// Hurried callers are a worker's goroutines that lock as production request
// handlers do: each call picks a Mutex key at random, makes a new Mutex for
// it with uncomplicated.New, and waits for the lock under a ctx of a
// uniformly random 0 to 20 ms (hurriedMost), then gives up. They run beside
// the patient goroutines (see worker.loop), which share their Mutexes and
// wait up to a budget, and they do the same critical section: READ the
// fenced store, work 1 to 4 ms, WRITE with the fence. So every analysis of
// the Mutex sections (overlaps, lost updates, stops, what Do told the
// holder) covers their holds too; the report gives them a column of their
// own (colHurried).
//
// A handler that has the lock finishes its work: the short deadline is for
// the wait, not for the work, as a handler gives up on a busy lock but not
// on a write it has begun. Half the calls take each of the two shapes a
// handler writes (hurriedDoOneIn):
//
//   - Do under the short ctx, whose fn does the work under a ctx of its own
//     (see lostContext): not cancelled by the short deadline, cancelled when
//     the hold is found lost. Do's release has until the short deadline plus
//     50 ms; when fn outran that, the release goes on in the Client's
//     background clean-ups, which the library bounds per Client.
//   - Lock under the short ctx, then the work and Unlock under a ctx of
//     their own, of a patient call's budget from the acquisition
//     (releaseWithin): the release is made in the caller.
//
// Their many give-ups are not failures: the report counts their calls,
// acquisitions and give-ups, and the run fails when they made many calls
// while no fault of the locks was under way and acquired in none (the
// collapse the library was fixed for: a queue of handlers that left, each
// handed the lock in turn), see analysis_hurried.go.

// hurriedMost bounds the ctx of a hurried call's wait: a uniformly random
// duration in [0, hurriedMost).
const hurriedMost = 20 * time.Millisecond

// defaultHurried is -hurried's default, the hurried callers of a worker:
// with the default 4 workers, 16 callers on 3 Mutexes, about 5 per lock
// beside the 3 or so patient goroutines queued on each, so that a lock's
// queue always holds callers that have just left, which is what made it
// collapse. Twice as many (10 per lock, the library's own hurried load)
// made, on a 2-core machine, their 3,000 calls a second and the
// coordinator's reading of their events take the CPU from everything else:
// the patient goroutines' sections fell fivefold, and the run measured the
// machine rather than the locks.
const defaultHurried = 4

// hurriedDoOneIn: 1 in 2 hurried calls use Do, the others Lock and Unlock.
const hurriedDoOneIn = 2

// hurry locks random Mutex keys as a hurried caller until stop is closed;
// g numbers the worker's hurried goroutines.
func (w *worker) hurry(g int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, hurriedStream+uint64(g)))
	for {
		select {
		case <-stop:
			return
		default:
		}
		name := w.cfg.Keys[rng.IntN(len(w.cfg.Keys))]
		m, err := uncomplicated.New(w.client, uncomplicated.Named(name)) // a new Mutex per call, as a handler makes it
		if err != nil {
			panic(err) // the names and options are valid
		}
		l := w.hurriedLock(m)
		if rng.IntN(hurriedDoOneIn) == 0 {
			l = w.hurriedDo(m)
		}
		w.hold(rng, l, time.Duration(rng.Int64N(int64(hurriedMost))))
	}
}

// hurriedStream offsets the random streams of the hurried goroutines from
// those of the patient ones, which are numbered from 0.
const hurriedStream = 1 << 32

// hurriedDo is the locker of a hurried caller's Do: the short ctx bounds
// the wait and Do's release, and fn's work has a ctx of its own.
func (w *worker) hurriedDo(m *uncomplicated.Mutex) locker {
	return locker{
		role: roleMutex, key: m.Name(), lockOp: "hurried lock", unlockOp: "hurried unlock", hurried: true,
		do: func(ctx context.Context, fn func(context.Context) error) error {
			return m.Do(ctx, func(ctx context.Context) error {
				wctx, stop := lostContext(ctx, m.Lost())
				defer stop()
				return fn(wctx)
			})
		},
		fence: m.Fence, lost: m.Lost, body: w.critical,
	}
}

// hurriedLock is the locker of a hurried caller's Lock and Unlock: the
// short ctx bounds the wait; the work and Unlock have a ctx of their own,
// of a patient call's budget from the acquisition. Unlock has no lease
// clock to tell it the hold was lost, as a Permit's Release has none: the
// locker counts as manual (see roleFigures.ResumedUntold).
func (w *worker) hurriedLock(m *uncomplicated.Mutex) locker {
	within := budget(w.cfg.Timeout)
	return locker{
		role: roleMutex, key: m.Name(), lockOp: "hurried lock", unlockOp: "hurried unlock", hurried: true, manual: true,
		releaseWithin: within,
		do: func(ctx context.Context, fn func(context.Context) error) error {
			if err := m.Lock(ctx); err != nil {
				return err
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), within)
			defer cancel()
			wctx, stop := lostContext(rctx, m.Lost())
			_ = fn(wctx) // the body returns nil
			stop()
			return m.Unlock(rctx)
		},
		fence: m.Fence, lost: m.Lost, body: w.critical,
	}
}

// lostContext returns the ctx of a hurried caller's work: ctx's values
// (Do's fence) without its deadline or its cancellation, cancelled with a
// cause wrapping ErrLost once lost, the hold's Lost channel, is closed, as
// auto-refresh cancels Do's fn's ctx; critical then skips its WRITE. The
// store calls have their own deadlines (storeTimeout). stop ends the watch
// on lost and waits for it.
func lostContext(ctx context.Context, lost <-chan struct{}) (wctx context.Context, stop func()) {
	wctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	done := make(chan struct{})
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		select {
		case <-lost:
			cancel(fmt.Errorf("torture: the hold's Lost channel closed: %w", uncomplicated.ErrLost))
		case <-done:
		}
	}()
	return wctx, func() {
		close(done)
		watch.Wait()
		cancel(nil)
	}
}
