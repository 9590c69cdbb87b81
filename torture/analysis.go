package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A span is a critical section's use of the store on the time line: from
// its first call to the store (or fn's start, when it made none) to its
// last (or fn's return, or the kill of its process). For a mutex holder
// or a writer that is READ to WRITE; for a reader or a permit holder, its
// first LOOK or TIME to its second. Every call to the store is made while
// fn runs, so a span lies within the hold as far as its holder knows.
type span struct {
	h          *hold
	start, end int64 // Unix nanoseconds
	written    bool  // its WRITE was accepted
}

// spans returns the record's critical sections of the given roles by lock
// name, each sorted by start. A section whose worker ended without
// reporting its end (killed at the grace period) ends at the run's end.
func (r *record) spans(roles ...string) map[string][]span {
	byKey := map[string][]span{}
	for _, h := range r.Sections {
		if !slices.Contains(roles, h.role()) {
			continue
		}
		end := r.End.UnixNano()
		if t, ok := r.Kills[h.enter.Pid]; ok {
			end = t.UnixNano()
		}
		s := span{h: h, written: h.rec != nil && h.rec.Write == accepted}
		s.start, s.end = h.bounds(end)
		byKey[h.enter.Key] = append(byKey[h.enter.Key], s)
	}
	for _, ss := range byKey {
		slices.SortFunc(ss, func(a, b span) int { return cmp64(a.start, b.start) })
	}
	return byKey
}

// bounds returns h's span: see span. A section that never ended ends at
// cut.
func (h *hold) bounds(cut int64) (start, end int64) {
	rec := h.rec
	if rec == nil {
		return h.enter.Enter, cut
	}
	return first(rec.ReadAt, rec.BeginAt, h.enter.Enter), first(rec.WriteAt, rec.EndAt, rec.FnEnd, rec.Exit)
}

// first returns the first of ts that is set (not 0).
func first(ts ...int64) int64 {
	for _, t := range ts {
		if t != 0 {
			return t
		}
	}
	return 0
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pairs calls f for each pair of spans of one key that overlap, the one
// that starts first as a. Spans that only touch do not overlap.
func pairs(byKey map[string][]span, f func(a, b span)) {
	for _, ss := range byKey {
		for i, a := range ss {
			for _, b := range ss[i+1:] {
				if b.start >= a.end {
					break
				}
				f(a, b)
			}
		}
	}
}

// overlaps counts the pairs of critical sections of one Mutex whose spans
// overlap: fenced when the fence stopped at least one of the two from
// writing (or its process died first), unfenced when both writes were
// accepted. both counts those whose holds Do both confirmed (see status):
// it must be 0 whatever the fence did.
func (r *record) overlaps() (fenced, unfenced, both int) {
	pairs(r.spans(roleMutex), func(a, b span) {
		if a.written && b.written {
			unfenced++
		} else {
			fenced++
		}
		if a.h.status() == confirmed && b.h.status() == confirmed {
			both++
			r.example(exMutexBoth, a.h, b.h)
		}
	})
	return fenced, unfenced, both
}

// stopFigures are what became of the critical sections open when their
// process was stopped.
type stopFigures struct {
	Before       int // sections open at a SIGSTOP that had written already, or whose fn had returned: they only await Do's return
	Holders      int // the others: holders caught before their WRITE
	TakenOver    int // ... of which another section of the lock, with a higher fence, began during the stop once the lease could have ended
	LateRejected int // ... whose READ or WRITE after the SIGCONT the fence rejected
	LateAccepted int // ... taken over, whose WRITE after the SIGCONT was accepted: must be 0
	LostCtx      int // ... that skipped the WRITE because fn's ctx ended (ErrLost)
	NotHeld      int // ... whose Do returned an error matching ErrNotHeld or ErrLost
	Unnoticed    int // ... taken over, whose Do returned no such error: must be 0
}

// A stopped is a hold open at a stop of its process.
type stopped struct {
	h  *hold
	st stop
}

// stopped analyses the stop faults for Mutex holders, and returns the
// Unnoticed ones for the report. A holder's lease, refreshed every
// timeout/3, cannot end within timeout/2 of the stop: a section that began
// then followed a release that got through before the stop took effect.
func (r *record) stopped(timeout time.Duration) (f stopFigures, unnoticed []stopped) {
	spans := r.spans(roleMutex)
	for _, st := range r.Stops {
		from, to := st.from.UnixNano(), st.to.UnixNano()
		for _, h := range r.Sections {
			rec := h.rec
			if h.role() != roleMutex || h.enter.Pid != st.pid || h.enter.Enter > from || rec == nil || rec.Exit < from {
				continue
			}
			// A section stopped in Unlock, its fn over, may have released
			// the lock before the stop, or find its deadline passed after:
			// Do owes an ErrLost only for a loss while fn ran. A stopped
			// process records nothing, so a WRITE or fn's end timed before
			// the SIGCONT came before the SIGSTOP took effect.
			if rec.WriteAt > 0 && rec.WriteAt < to || rec.FnEnd > 0 && rec.FnEnd < to {
				f.Before++
				continue
			}
			f.Holders++
			other := false
			for _, s := range spans[h.enter.Key] {
				e := s.h.enter
				if e.Pid != st.pid && e.Fence > h.enter.Fence && e.Enter >= from+int64(timeout/2) && e.Enter <= to {
					other = true
					break
				}
			}
			if other {
				f.TakenOver++
			}
			switch {
			case rec.Read == rejected && rec.ReadAt >= to, rec.Write == rejected && rec.WriteAt >= to:
				f.LateRejected++
			case rec.Write == accepted && rec.WriteAt >= to && other:
				f.LateAccepted++
			case rec.Write == lostCtx:
				f.LostCtx++
			}
			if rec.NotHeld || rec.ErrLost {
				f.NotHeld++
			} else if other {
				f.Unnoticed++
				unnoticed = append(unnoticed, stopped{h, st})
			}
		}
	}
	return f, unnoticed
}

// lateCalls splits the late calls into those a stop or a stall of their
// own process explains (its clock ran on while it could not) and the
// others.
func (r *record) lateCalls() (late, excused []event) {
	for _, e := range r.Late {
		if r.stoppedDuring(e.Pid, e.Enter, e.Ret) || r.stalledDuring(e.Pid, e.Enter, e.Ret) {
			excused = append(excused, e)
		} else {
			late = append(late, e)
		}
	}
	return late, excused
}

// stoppedDuring reports whether pid was stopped at some time in [from, to].
func (r *record) stoppedDuring(pid int, from, to int64) bool {
	for _, st := range r.Stops {
		if st.pid == pid && st.from.UnixNano() <= to && st.to.Add(lateSlack).UnixNano() >= from {
			return true
		}
	}
	return false
}

// counts sums the Mutex sections' outcomes.
type counts struct {
	Started, Completed, Killed            int
	ReadRejected, WriteRejected, Accepted int
	LostBeforeWrite, StoreFailed          int
	LostSeen                              int
}

func (r *record) counts() counts {
	var n counts
	for _, h := range r.Sections {
		if h.role() != roleMutex {
			continue
		}
		n.Started++
		rec := h.rec
		if rec == nil {
			n.Killed++
			continue
		}
		n.Completed++
		switch {
		case rec.Read == rejected:
			n.ReadRejected++
		case rec.Read == failed, rec.Write == failed:
			n.StoreFailed++
		case rec.Write == rejected:
			n.WriteRejected++
		case rec.Write == accepted:
			n.Accepted++
		case rec.Write == lostCtx:
			n.LostBeforeWrite++
		}
		if rec.LostSeen {
			n.LostSeen++
		}
	}
	return n
}

// longestGap is the longest time, on any one lock of the role, between
// two accepted writes (or the run's start or end and the nearest one): how
// long the lock let nobody work.
func (r *record) longestGap(role string) (key string, gap int64) {
	for k, ss := range r.spans(role) {
		prev := r.Start.UnixNano()
		var writes []int64
		for _, s := range ss {
			if s.written {
				writes = append(writes, s.end)
			}
		}
		slices.Sort(writes)
		for _, w := range append(writes, r.End.UnixNano()) {
			if w-prev > gap {
				key, gap = k, w-prev
			}
			prev = w
		}
	}
	return key, gap
}

// String describes a stopped hold for the report: its times in ms from
// the SIGSTOP, how its section went and what Do returned.
func (s stopped) String() string {
	from := s.st.from.UnixNano()
	ms := func(t int64) string {
		if t == 0 {
			return "-"
		}
		return fmt.Sprintf("%+.1f", float64(t-from)/1e6)
	}
	e, rec := s.h.enter, s.h.rec
	return fmt.Sprintf("worker %d %s fence %d: stopped for %.0fms; ms from the stop: fn began %s, READ %s %s, WRITE %s %s, fn returned %s, Do returned %s: %s",
		e.Pid, e.Key, e.Fence, s.st.to.Sub(s.st.from).Seconds()*1000, ms(e.Enter), rec.Read, ms(rec.ReadAt),
		rec.Write, ms(rec.WriteAt), ms(rec.FnEnd), ms(rec.Exit), rec.Unlock)
}

// Criteria with examples in the report.
const (
	exMutexBoth = "mutex overlap, both confirmed"
	exRWBoth    = "rw overlap, both confirmed"
	exSemOver   = "semaphore over its permits, all confirmed"
	exLostNil   = "Lost signalled, Do returned nil"
	exUntold    = "stopped mid-section, Do did not report the loss"
	exFenced    = "fenced out, Do confirmed"
	exDupFence  = "fence shown twice"
	exIdle      = "lock free past its bound"
)

// maxExamples bounds the examples of one criterion.
const maxExamples = 3

// example notes hs, the holds that failed the criterion what, for the
// report.
func (r *record) example(what string, hs ...*hold) {
	if len(r.Examples[what]) >= maxExamples {
		return
	}
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.describe(h))
	}
	r.Examples[what] = append(r.Examples[what], b.String())
}

// describe tells one hold for the report, its times in seconds from the
// run's start.
func (r *record) describe(h *hold) string {
	at := func(t int64) string {
		if t == 0 {
			return "-"
		}
		return fmt.Sprintf("%.4f", float64(t-r.Start.UnixNano())/1e9)
	}
	e := h.enter
	s := fmt.Sprintf("worker %d %s %s fence %d: fn began %s", e.Pid, h.role(), e.Key, e.Fence, at(e.Enter))
	if rec := h.rec; rec != nil {
		start, end := h.bounds(0)
		s += fmt.Sprintf(", store %s to %s, fn returned %s, Do returned %s: %s", at(start), at(end), at(rec.FnEnd), at(rec.Exit), rec.Unlock)
	} else {
		s += ", killed"
	}
	return s
}
