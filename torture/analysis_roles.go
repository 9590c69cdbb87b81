package main

// roleFigures sum the calls and the sections of one column of the report
// (a role, or the hurried callers' Mutex holds: see columns), and check
// what the library told their holders against what happened to them.
type roleFigures struct {
	// Calls to lock; of them, those that did not obtain the lock because
	// their ctx ended (a hurried caller's give-up), and for another reason.
	Calls, GaveUp, NotObtained int
	Completed, Killed          int
	Manual                     int // permits of Acquire and Release rather than Do
	// What Do (or Release) told the holders of the completed sections.
	Confirmed, Found, Unsure int
	ErrLost                  int // Do's error matched ErrLost
	LostSeen                 int // the hold's Lost() closed, or fn's ctx ended for the loss
	// LostButConfirmed counts holds whose Lost signal fired while Do
	// returned nil (must be 0): Do must report a loss it signalled.
	LostButConfirmed int
	// Resumed counts sections a stop froze mid-way: begun before the
	// SIGSTOP, their last call to the store (or fn's return) after the
	// SIGCONT. Their lease, refreshed at the latest as the stop began,
	// ended during the stop of 1.5 leases, while fn ran. ResumedUntold
	// counts those whose Do did not report it (must be 0): not a nil, as
	// the release came after the SIGCONT and must have found the hold
	// gone, nor another error, as Do's auto-refresh knows by its own clock
	// that the lease ended, even when the release cannot reach Redis or
	// ctx's deadline has passed. A Permit's Release has no such clock: a
	// Release of Acquire's permit that failed is excused.
	Resumed, ResumedUntold int
	// FencedConfirmed counts the mutex or writer holds whose READ or WRITE
	// the store rejected while Do confirmed them (must be 0): a higher
	// fence read inside a hold that Redis kept from grant to release,
	// which only a fence granted twice, or a second holder, can do.
	FencedConfirmed int
	// Fenced counts the holds that showed a fence, DupFences the fences
	// shown by more than one hold of a lock (must be 0).
	Fenced, DupFences int
	// TakenOver counts the "... taken over" records of the library, by
	// role: the log does not tell a hurried caller's Mutex from another,
	// so the mutex column has them all.
	TakenOver int
}

// colHurried is the report's column of the hurried callers' Mutex holds
// (see hurried.go); their role is roleMutex.
const colHurried = "hurried"

// columns are the columns of the report's table by role: the roles, the
// Mutex holds of hurried callers apart.
var columns = []string{roleMutex, colHurried, roleWriter, roleReader, rolePermit}

// column returns h's column of the report: its role, or colHurried.
func (h *hold) column() string {
	if h.enter.Hurried {
		return colHurried
	}
	return h.role()
}

// column returns w's column of the report: its role, or colHurried.
func (w *wait) column() string {
	switch {
	case w.hurried:
		return colHurried
	case w.role == "":
		return roleMutex
	}
	return w.role
}

// roles sums the calls and the sections by column (see columns).
func (r *record) roles() map[string]*roleFigures {
	fs := map[string]*roleFigures{}
	for _, col := range columns {
		fs[col] = &roleFigures{TakenOver: r.TakenOver[col]}
	}
	for id, w := range r.Waits {
		f := fs[w.column()]
		if f == nil {
			continue
		}
		f.Calls++
		if kind, failed := r.Failed[id]; failed && ctxEnded(kind) {
			f.GaveUp++
		} else if failed {
			f.NotObtained++
		}
	}
	type fenceOf struct {
		role, key string
		fence     uint64
	}
	fences := map[fenceOf]int{}
	for _, h := range r.Sections {
		f := fs[h.column()]
		if f == nil {
			continue
		}
		if h.enter.Fence != 0 {
			f.Fenced++
			id := fenceOf{h.role(), h.enter.Key, h.enter.Fence}
			if fences[id]++; fences[id] > 1 {
				f.DupFences++
				r.example(exDupFence, h)
			}
		}
		rec := h.rec
		if rec == nil {
			f.Killed++
			continue
		}
		f.Completed++
		st := h.status()
		switch st {
		case confirmed:
			f.Confirmed++
		case found:
			f.Found++
		case unsure:
			f.Unsure++
		}
		if rec.Manual {
			f.Manual++
		}
		if rec.ErrLost {
			f.ErrLost++
		}
		if rec.LostSeen || rec.CtxLost {
			f.LostSeen++
			if rec.Unlock == "ok" {
				f.LostButConfirmed++
				r.example(exLostNil, h)
			}
		}
		if (rec.Read == rejected || rec.Write == rejected) && st == confirmed {
			f.FencedConfirmed++
			r.example(exFenced, h)
		}
	}
	for _, st := range r.Stops {
		from, to := st.from.UnixNano(), st.to.UnixNano()
		for _, h := range r.Sections {
			f := fs[h.column()]
			if f == nil || h.rec == nil || h.enter.Pid != st.pid || h.enter.Enter > from {
				continue
			}
			if _, end := h.bounds(0); end >= to {
				f.Resumed++
				if st := h.status(); st == confirmed || st == unsure && !h.rec.Manual {
					f.ResumedUntold++
					r.example(exUntold, h)
				}
			}
		}
	}
	return fs
}

// ctxEnded reports whether kind, an error's kind (see kind), is that of a
// call to lock not obtained because its ctx ended.
func ctxEnded(kind string) bool {
	return kind == "ErrNotObtained (deadline)" || kind == "ErrNotObtained (canceled)"
}
