package main

import (
	"maps"
	"slices"
)

// A hurried caller gives up most of its calls: a give-up is no failure.
// The patient goroutines keep each Mutex's queue full, and a lock served
// in arrival order lets a hurried caller in only when the queue ahead of
// it is short, so that it acquires in a few calls in a hundred, or
// fewer. What must not happen is the collapse the library was fixed for:
// a lock that hands itself, one after the other, to the queued callers
// that have left, each for up to a claim, so that those that come find it
// never free in time and hurried callers acquire nothing at all (nor,
// soon, anyone else). A fault of a lock (of its server, its network or its
// keys) keeps it from everyone for a while, so the check counts the calls
// made while none was under way (see lockFaulted): over the run, if the
// hurried callers made at least hurriedCallsMin such calls, some must have
// acquired the lock. A fault of a worker (kill, stop, pausewaiter) hits a
// holder or a waiter, not the lock, and its time counts.

// hurriedCallsMin is the fewest calls while no fault of the locks was
// under way on which the hurried callers are judged.
const hurriedCallsMin = 100

// calls are some hurried calls, and how many of them acquired the lock.
type calls struct {
	Calls, Acquired int
}

// hurriedFigures are the hurried callers' calls made while no fault of the
// locks was under way, by Mutex name (as Name gives it).
type hurriedFigures struct {
	Unfaulted map[string]*calls
}

// total sums the calls of every Mutex.
func (f hurriedFigures) total() calls {
	var t calls
	for _, c := range f.Unfaulted {
		t.Calls += c.Calls
		t.Acquired += c.Acquired
	}
	return t
}

// collapsed reports whether the hurried callers made hurriedCallsMin calls
// or more while no fault of the locks was under way, and acquired none.
func (f hurriedFigures) collapsed() bool {
	t := f.total()
	return t.Calls >= hurriedCallsMin && t.Acquired == 0
}

// keys returns the Mutex names of f, sorted.
func (f hurriedFigures) keys() []string { return slices.Sorted(maps.Keys(f.Unfaulted)) }

// hurried counts, by Mutex, the hurried callers' calls that began and
// ended while no fault of the locks was under way, and those of them that
// obtained the lock. A call still waiting at the end is left out.
func (r *record) hurried() hurriedFigures {
	f := hurriedFigures{Unfaulted: map[string]*calls{}}
	faulted := r.lockFaulted()
	for id, w := range r.Waits {
		if !w.hurried || w.to == 0 || overlapsAny(faulted, w.from, w.to) {
			continue
		}
		c := f.Unfaulted[w.key]
		if c == nil {
			c = &calls{}
			f.Unfaulted[w.key] = c
		}
		c.Calls++
		if _, failed := r.Failed[id]; !failed {
			c.Acquired++
		}
	}
	return f
}

// lockFaulted returns the periods in which a fault of the locks was under
// way: from each injection of a kind that is not a worker's (see
// ofWorker) to the time its effects settled (injection.until, or the
// run's end when unknown).
func (r *record) lockFaulted() []period {
	var ps []period
	for _, inj := range r.Injected {
		if ofWorker(inj.kind) {
			continue
		}
		to := inj.until
		if to == 0 {
			to = r.End.UnixNano()
		}
		ps = append(ps, period{inj.at, to})
	}
	return ps
}

// overlapsAny reports whether [from, to] meets one of ps.
func overlapsAny(ps []period, from, to int64) bool {
	for _, p := range ps {
		if from <= p.to && to >= p.from {
			return true
		}
	}
	return false
}
