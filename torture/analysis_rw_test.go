package main

import (
	"testing"
	"time"
)

// rwRecord returns a record of one RWMutex "k" between 0 and 1000 ns.
func rwRecord() *record {
	r := newRecord()
	r.Start, r.End = time.Unix(0, 0), time.Unix(0, 1000)
	return r
}

// writes adds a write section of pid, READ at read and WRITE at write
// with outcome, whose Do returned unlock ("ok": nil).
func writes(r *record, pid int, fence uint64, read, write int64, outcome, unlock string) *hold {
	h := &hold{
		enter: event{Pid: pid, Seq: 1, Key: "k", Role: roleWriter, Fence: fence, Enter: read - 1},
		rec:   &section{Read: accepted, ReadAt: read, Write: outcome, WriteAt: write, FnEnd: write + 1, Exit: write + 2, Unlock: unlock},
	}
	h.rec.ErrLost = unlock == "ErrLost"
	r.Sections[secID{pid, 1}] = h
	return h
}

// reads adds a read section of pid, looking at begin and end, the second
// look with outcome, whose RDo returned unlock.
func reads(r *record, pid int, begin, end int64, outcome, unlock string) *hold {
	h := &hold{
		enter: event{Pid: pid, Seq: 1, Key: "k", Role: roleReader, Enter: begin - 1},
		rec:   &section{Begin: accepted, BeginAt: begin, End: outcome, EndAt: end, FnEnd: end + 1, Exit: end + 2, Unlock: unlock},
	}
	h.rec.ErrLost = unlock == "ErrLost"
	r.Sections[secID{pid, 1}] = h
	return h
}

func TestRecord_rw(t *testing.T) {
	r := rwRecord()
	reads(r, 1, 10, 20, accepted, "ok")
	reads(r, 2, 15, 25, accepted, "ok") // readers share: no overlap counted
	// A writer stopped between its READ and WRITE, displaced by a reader
	// that saw it write: caught by the second LOOK, and excused as the
	// writer was told it lost the lock.
	writes(r, 3, 1, 30, 60, accepted, "ErrLost")
	reads(r, 4, 40, 50, rejected, "ok")
	// Two writers, both told nothing, one refused by the fence: fenced,
	// but a confirmed pair.
	writes(r, 5, 2, 100, 120, accepted, "ok")
	writes(r, 6, 3, 110, 130, rejected, "ok")
	// A reader inside a writer's section, neither told: confirmed pair;
	// the write came after the reader left, so the store saw nothing.
	writes(r, 7, 4, 200, 240, accepted, "ok")
	reads(r, 8, 210, 220, accepted, "ok")

	got := r.rw()
	want := rwFigures{
		WWFenced: 1, WR: 2, WRCaught: 1, Confirmed: 2, ReadsChanged: 1, ReadsChangedConfirmed: 1, MaxReaders: 2,
	}
	want.Excused[found] = 1
	if got != want {
		t.Errorf("rw() = %+v; want %+v", got, want)
	}
}

func TestRecord_sem(t *testing.T) {
	r := rwRecord()
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

func TestRecord_roles(t *testing.T) {
	r := rwRecord()
	r.Stops = []stop{{pid: 1, from: time.Unix(0, 100), to: time.Unix(0, 400)}}
	reads(r, 1, 90, 450, accepted, "ok")                                                                            // resumed, yet confirmed
	writes(r, 2, 7, 10, 20, rejected, "ok")                                                                         // fenced out, yet confirmed
	writes(r, 3, 7, 30, 40, accepted, "ok").rec.CtxLost = true                                                      // fence 7 again; lost, yet nil
	r.Sections[secID{4, 1}] = &hold{enter: event{Pid: 4, Seq: 1, Key: "k", Role: roleWriter, Fence: 8, Enter: 500}} // killed
	fs := r.roles()
	if got, want := *fs[roleReader], (roleFigures{Completed: 1, Confirmed: 1, Resumed: 1, ResumedConfirmed: 1}); got != want {
		t.Errorf("roles()[reader] = %+v; want %+v", got, want)
	}
	want := roleFigures{Completed: 2, Killed: 1, Confirmed: 1, Found: 1, LostSeen: 1, LostButConfirmed: 1, FencedConfirmed: 1, Fenced: 3, DupFences: 1}
	if got := *fs[roleWriter]; got != want {
		t.Errorf("roles()[writer] = %+v; want %+v", got, want)
	}
}
