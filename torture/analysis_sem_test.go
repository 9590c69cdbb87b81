package main

import "testing"

// TestRecord_sem checks the count of a Semaphore's holders at once, and
// that only confirmed holders over the permits fail.
func TestRecord_sem(t *testing.T) {
	r := run1000()
	permit := func(pid int, begin, end int64, unlock string) {
		h := &hold{
			enter: event{Pid: pid, Seq: 1, Key: "s", Role: rolePermit, Enter: begin - 1},
			rec:   &section{Begin: accepted, BeginAt: begin, End: accepted, EndAt: end, FnEnd: end + 1, Exit: end + 2, Unlock: unlock},
		}
		h.rec.ErrLost = unlock == "ErrLost"
		r.Sections[secID{pid, 1}] = h
	}
	permit(1, 10, 100, "ErrLost") // stopped, its permit lost
	permit(2, 20, 30, "ok")
	permit(3, 30, 40, "ok") // begins as 2 ends: not at once
	permit(4, 35, 45, "ok") // 1, 3, 4: over 2 permits, but 1 was lost
	if got, want := r.sem(2), (semFigures{MaxHolders: 3, MaxConfirmed: 2, Over: 1}); got != want {
		t.Errorf("sem(2) = %+v; want %+v", got, want)
	}
	permit(5, 38, 39, "ok") // 3, 4, 5 confirmed at once
	if got, want := r.sem(2), (semFigures{MaxHolders: 4, MaxConfirmed: 3, Over: 2, OverConfirmed: 1}); got != want {
		t.Errorf("sem(2) = %+v; want %+v", got, want)
	}
}
