package main

import (
	"fmt"
	"slices"
	"time"
)

// A recovery is how soon, after one lose fault, the store took the write
// of a new holder on every lock it hit that writes to the store.
type recovery struct {
	l     loss
	key   string        // the lock whose first such write came last
	after time.Duration // from l.back to that write
	cut   bool          // key had none by the run's end: after runs to the end
}

// recoveries returns one recovery per lose fault that hit a lock that
// writes to the store (a Mutex or an RWMutex), in order. On each lock it
// finds the first WRITE the store accepted at or after the server
// answered again (l.back) from a new holder: one whose fn began after the
// data went (l.from) and whose Do confirmed the hold. A holder granted
// before the data went may still write with its old fence, which the
// store takes while no newer fence has read, and its fn may begin after
// l.from; but its release comes after the loss and finds the hold gone,
// unless it came before, and its WRITE with it, before l.back. A new
// holder that wrote before l.back, or whose Do did not confirm its hold,
// is passed over for the next, so that a recovery is never shorter than
// it was.
func (r *record) recoveries() []recovery {
	var rs []recovery
	for _, l := range r.Losses {
		if len(l.locks) == 0 {
			continue
		}
		rc := recovery{l: l}
		for _, key := range l.locks {
			first, ok := r.firstWrite(key, l.from, l.back)
			if !ok {
				first = r.End.UnixNano()
			}
			if after := time.Duration(first - l.back); rc.key == "" || after > rc.after {
				rc.key, rc.after, rc.cut = key, after, !ok
			}
		}
		rs = append(rs, rc)
	}
	return rs
}

// firstWrite returns the time of the first WRITE the store accepted on
// lock key at or after back from a hold whose fn began after from and
// whose Do confirmed it.
func (r *record) firstWrite(key string, from, back int64) (at int64, ok bool) {
	for _, h := range r.Sections {
		rec := h.rec
		if h.enter.Key != key || h.enter.Enter <= from || h.status() != confirmed || rec.Write != accepted || rec.WriteAt < back {
			continue
		}
		if !ok || rec.WriteAt < at {
			at, ok = rec.WriteAt, true
		}
	}
	return at, ok
}

// loseFigures are the figures of the lose fault.
type loseFigures struct {
	Restarts, Rollbacks int
	Recoveries          []recovery    // longest first
	Unmeasured          int           // rollbacks of a Semaphore, which does not write to the store
	Bound               time.Duration // each recovery must be shorter
}

// lose sums the lose faults.
func (r *record) lose() loseFigures {
	f := loseFigures{Recoveries: r.recoveries(), Bound: loseBound}
	for _, l := range r.Losses {
		switch {
		case !l.rollback:
			f.Restarts++
		case len(l.locks) == 0:
			f.Rollbacks++
			f.Unmeasured++
		default:
			f.Rollbacks++
		}
	}
	slices.SortStableFunc(f.Recoveries, func(a, b recovery) int { return cmp64(int64(b.after), int64(a.after)) })
	return f
}

// median returns the median of the recoveries; 0 when there are none.
func (f loseFigures) median() time.Duration {
	n := len(f.Recoveries)
	if n == 0 {
		return 0
	}
	return (f.Recoveries[(n-1)/2].after + f.Recoveries[n/2].after) / 2
}

// late returns the recoveries that took the bound or longer, for the pass
// criterion: one cut by the run's end only once the bound has passed.
func (f loseFigures) late() []recovery {
	var late []recovery
	for _, rc := range f.Recoveries {
		if rc.after >= f.Bound {
			late = append(late, rc)
		}
	}
	return late
}

// describeRecovery tells a recovery for the report, its times in seconds from the
// run's start.
func (r *record) describeRecovery(rc recovery) string {
	what := "the restart without persistence"
	if rc.l.rollback {
		what = "the rollback"
	}
	s := fmt.Sprintf("%s after %s at %.1fs", rc.key, what, float64(rc.l.from-r.Start.UnixNano())/1e9)
	if rc.cut {
		s += ", none by the run's end"
	}
	return s
}
