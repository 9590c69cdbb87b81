package main

import (
	"testing"
	"time"
)

// rwRecord returns a record of one RWMutex "k" between 0 and 1000 ns.
func run1000() *record {
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

// TestRecord_rw checks how the overlaps of an RWMutex's sections are
// counted: readers share, a writer conflicts with all, and only pairs with
// a hold not confirmed are excused.
func TestRecord_rw(t *testing.T) {
	r := run1000()
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
