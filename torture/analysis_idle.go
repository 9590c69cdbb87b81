package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Idle stretches measure liveness from the workers' events: a lock is idle
// while it has room (no holder; for a Semaphore, fewer holders than
// permits) and a live worker goroutine waits for it. A goroutine waits from
// its call to lock to fn's start or the call's failure, and holds from fn's
// start to Do's return; a goroutine whose process is stopped neither waits
// nor holds, as it cannot act on the lock, and a kill ends both. Each
// stretch is put down to the last fault injected at or before its start,
// or to none before the first.

// faultNone names the time before the first fault in the idle figures.
const faultNone = "none"

// A stretch is a time in which one lock was idle.
type stretch struct {
	key      string
	from, to int64 // Unix nanoseconds
}

func (s stretch) length() time.Duration { return time.Duration(s.to - s.from) }

// A change is what one event did to a lock's holders and waiters.
type change struct {
	at           int64
	holds, waits int // +1 or -1, or 0
}

// idle returns the record's idle stretches, sorted by start; a Semaphore
// has permits permits.
func (r *record) idle(permits int) []stretch {
	byKey := map[string][]change{}
	room := map[string]int{} // how many holders a lock has room for
	for _, h := range r.Sections {
		byKey[h.enter.Key] = append(byKey[h.enter.Key], change{h.enter.Enter, +1, 0}, change{r.heldUntil(h), -1, 0})
		room[h.enter.Key] = roomOf(h.role(), permits)
	}
	for _, w := range r.Waits {
		to := w.to
		if to == 0 {
			to = r.End.UnixNano() // still waiting at the end
		}
		for _, part := range r.awake(w.pid, w.from, to) {
			byKey[w.key] = append(byKey[w.key], change{part.from, 0, +1}, change{part.to, 0, -1})
		}
		room[w.key] = roomOf(w.role, permits)
	}
	var idle []stretch
	for key, cs := range byKey {
		idle = append(idle, sweep(key, cs, room[key])...)
	}
	slices.SortFunc(idle, func(a, b stretch) int { return cmp64(a.from, b.from) })
	return idle
}

// roomOf returns how many holders a lock of role has room for.
func roomOf(role string, permits int) int {
	if role == rolePermit {
		return permits
	}
	return 1
}

// sweep returns the stretches of lock key, with room for room holders, in
// which it had room while someone waited. The changes at one time count
// together.
func sweep(key string, cs []change, room int) []stretch {
	slices.SortFunc(cs, func(a, b change) int { return cmp64(a.at, b.at) })
	var idle []stretch
	holds, waits := 0, 0
	var from int64
	open := false
	for i := 0; i < len(cs); {
		at := cs[i].at
		for ; i < len(cs) && cs[i].at == at; i++ {
			holds, waits = holds+cs[i].holds, waits+cs[i].waits
		}
		switch free := holds < room && waits > 0; {
		case free && !open:
			from, open = at, true
		case !free && open:
			idle = append(idle, stretch{key, from, at})
			open = false
		}
	}
	return idle
}

// heldUntil returns when h's holder stopped holding the lock, as far as
// it could act on it: when Do returned, when its process was killed or
// first stopped during the hold, or at the run's end.
func (r *record) heldUntil(h *hold) int64 {
	end := r.End.UnixNano()
	if h.rec != nil {
		end = h.rec.Exit
	} else if t, ok := r.Kills[h.enter.Pid]; ok {
		end = t.UnixNano()
	}
	for _, st := range r.Stops {
		if from := st.from.UnixNano(); st.pid == h.enter.Pid && h.enter.Enter <= from && from < end {
			end = from
		}
	}
	return end
}

// A period is a time from one instant to a later one.
type period struct{ from, to int64 }

// awake returns the periods of [from, to) in which worker pid was not
// stopped, in order.
func (r *record) awake(pid int, from, to int64) []period {
	var stops []period
	for _, st := range r.Stops {
		if st.pid == pid {
			stops = append(stops, period{st.from.UnixNano(), st.to.UnixNano()})
		}
	}
	slices.SortFunc(stops, func(a, b period) int { return cmp64(a.from, b.from) })
	var parts []period
	for _, st := range stops {
		if st.to <= from || st.from >= to {
			continue
		}
		if st.from > from {
			parts = append(parts, period{from, st.from})
		}
		from = max(from, st.to)
	}
	if from < to {
		parts = append(parts, period{from, to})
	}
	return parts
}

// idleFigures are, for one fault kind, the longest idle stretch after each
// injection of it, until the next injection of any kind.
type idleFigures struct {
	Longest []stretch     // one per injection, longest first; a zero stretch when it had none
	Bound   time.Duration // the pass criterion: each must be shorter; 0: none
}

// median returns the median length of f.Longest; 0 when empty.
func (f *idleFigures) median() time.Duration {
	n := len(f.Longest)
	if n == 0 {
		return 0
	}
	return (f.Longest[(n-1)/2].length() + f.Longest[n/2].length()) / 2
}

// idleByFault returns by fault kind (faultNone: the time before the
// first fault) the longest idle stretch after each injection, with the
// kind's bound for timeout. A stretch is put down to the last fault
// injected at or before its start; one that runs into a later injection
// is cut there, and the rest is put down to that one.
func (r *record) idleByFault(permits int, timeout time.Duration) map[string]*idleFigures {
	longest := make([]stretch, len(r.Injected)+1) // [i]: after the i-th injection; [0]: before the first
	for _, s := range r.idle(permits) {
		i := sort.Search(len(r.Injected), func(i int) bool { return r.Injected[i].at > s.from })
		for ; ; i++ {
			piece := s
			if i < len(r.Injected) && r.Injected[i].at < s.to {
				piece.to = r.Injected[i].at
			}
			if piece.length() > longest[i].length() {
				longest[i] = piece
			}
			if piece.to == s.to {
				break
			}
			s.from = piece.to
		}
	}
	figs := map[string]*idleFigures{}
	for i, s := range longest {
		kind := faultNone
		if i > 0 {
			kind = r.Injected[i-1].kind
		}
		if figs[kind] == nil {
			figs[kind] = &idleFigures{Bound: idleBound(kind, timeout)}
		}
		figs[kind].Longest = append(figs[kind].Longest, s)
	}
	for _, f := range figs {
		slices.SortStableFunc(f.Longest, func(a, b stretch) int { return cmp64(int64(b.length()), int64(a.length())) })
	}
	return figs
}

// idleBound returns how long a lock may stay idle after a fault of kind:
// for a fault of a worker, 2 timeouts beyond the fault's own duration (the
// lease of the holder it hit, then a claim or a few ticks); 0, no bound,
// for the faults of the lock server, of its network and of its keys. The
// next fault waits for it (see injectUntil), so that a stretch the bound
// judges is cut by no other fault.
func idleBound(kind string, timeout time.Duration) time.Duration {
	switch kind {
	case faultKill:
		return 2 * timeout
	case faultStop, faultPauseWait:
		return 2*timeout + stopFor(timeout)
	}
	return 0
}

// explain describes an idle stretch for the report: the hold of its lock
// that ended last before it, the first that began at or after its end, a
// few of the goroutines that waited through it, and the kills and stops of
// their workers; times in seconds from its start.
func (r *record) explain(s stretch) string {
	rel := func(t int64) string { return fmt.Sprintf("%+.3fs", float64(t-s.from)/1e9) }
	var before, after *hold
	for _, h := range r.Sections {
		switch {
		case h.enter.Key != s.key:
		case r.heldUntil(h) <= s.from && (before == nil || r.heldUntil(h) > r.heldUntil(before)):
			before = h
		case h.enter.Enter >= s.to && (after == nil || h.enter.Enter < after.enter.Enter):
			after = h
		}
	}
	parts := []string{fmt.Sprintf("%s idle %.3fs (%s)", s.key, s.length().Seconds(), r.at(s))}
	for _, h := range []*hold{before, after} {
		if h != nil {
			parts = append(parts, fmt.Sprintf("worker %d %s fence %d held it %s to %s (%s)",
				h.enter.Pid, h.role(), h.enter.Fence, rel(h.enter.Enter), rel(r.heldUntil(h)), h.status()))
		}
	}
	pids := map[int]bool{}
	for _, w := range r.Waits {
		if w.key == s.key && w.from <= s.from && (w.to == 0 || w.to >= s.to) && !pids[w.pid] && len(pids) < maxExplained {
			pids[w.pid] = true
			parts = append(parts, fmt.Sprintf("worker %d waited as a %s from %s", w.pid, w.role, rel(w.from)))
		}
	}
	for _, st := range r.Stops {
		if st.to.UnixNano() > s.from-int64(time.Second) && st.from.UnixNano() < s.to {
			parts = append(parts, fmt.Sprintf("worker %d stopped %s to %s", st.pid, rel(st.from.UnixNano()), rel(st.to.UnixNano())))
		}
	}
	for pid, t := range r.Kills {
		if t.UnixNano() > s.from-int64(time.Second) && t.UnixNano() < s.to {
			parts = append(parts, fmt.Sprintf("worker %d killed %s", pid, rel(t.UnixNano())))
		}
	}
	return strings.Join(parts, "; ")
}

// maxExplained bounds the waiting workers explain names.
const maxExplained = 3
