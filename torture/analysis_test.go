package main

import (
	"testing"
	"time"
)

// done returns a completed critical section of key k read at read and
// written at write with outcome.
func done(pid int, seq int64, read, write int64, outcome string) (secID, *hold) {
	return secID{pid, seq}, &hold{
		enter: event{Pid: pid, Seq: seq, Key: "k", Enter: read - 1},
		rec:   &section{Read: accepted, ReadAt: read, Write: outcome, WriteAt: write, Exit: write + 1},
	}
}

func TestRecord_overlaps(t *testing.T) {
	r := newRecord()
	r.Start, r.End = time.Unix(0, 0), time.Unix(0, 1000)
	add := func(id secID, h *hold) { r.Sections[id] = h }
	add(done(1, 1, 10, 20, accepted))
	add(done(2, 1, 15, 25, rejected)) // fenced: overlaps 1/1
	add(done(1, 2, 30, 40, accepted))
	add(done(2, 2, 35, 45, accepted)) // unfenced: both written
	add(done(3, 1, 60, 70, accepted)) // overlaps the killed one below: fenced
	r.Sections[secID{4, 1}] = &hold{enter: event{Pid: 4, Seq: 1, Key: "k", Enter: 50}}
	r.Kills[4] = time.Unix(0, 65)
	add(done(1, 3, 100, 110, accepted)) // touches nothing: starts as 3/1 ends
	add(done(2, 3, 110, 120, accepted))

	fenced, unfenced, _ := r.overlaps()
	if fenced != 2 || unfenced != 1 {
		t.Errorf("overlaps() = %d fenced, %d unfenced; want 2, 1", fenced, unfenced)
	}
	if key, gap := r.longestGap(roleMutex); key != "k" || gap != 1000-120 {
		t.Errorf("longestGap() = %q, %d; want k, %d", key, gap, 1000-120)
	}
}

func TestRecord_stopped(t *testing.T) {
	r := newRecord()
	r.Start, r.End = time.Unix(0, 0), time.Unix(0, 10_000)
	r.Stops = []stop{{pid: 1, from: time.Unix(0, 100), to: time.Unix(0, 1100)}}
	at := func(pid int, seq int64, fence uint64, enter int64, rec *section) {
		r.Sections[secID{pid, seq}] = &hold{enter: event{Pid: pid, Seq: seq, Key: "k", Fence: fence, Enter: enter}, rec: rec}
	}
	at(1, 1, 5, 90, &section{Read: accepted, ReadAt: 95, Write: rejected, WriteAt: 1200, Exit: 1300, ErrLost: true})
	at(2, 1, 6, 500, &section{Read: accepted, ReadAt: 510, Write: accepted, WriteAt: 520, Exit: 530})
	at(1, 2, 7, 99, &section{Read: accepted, ReadAt: 98, Write: accepted, WriteAt: 99, Exit: 1150})              // had written
	at(1, 3, 4, 50, &section{Read: rejected, ReadAt: 60, FnEnd: 70, Exit: 1200, Unlock: "deadline"})             // fn over, stopped in Unlock
	at(1, 4, 3, 40, &section{Read: accepted, ReadAt: 45, Write: accepted, WriteAt: 101, FnEnd: 102, Exit: 1150}) // wrote as the SIGSTOP was sent

	got, _ := r.stopped(400)
	want := stopFigures{Before: 3, Holders: 1, TakenOver: 1, LateRejected: 1, NotHeld: 1}
	if got != want {
		t.Errorf("stopped() = %+v; want %+v", got, want)
	}
	r.Sections[secID{1, 1}].rec.ErrLost = false // Do said nothing
	got, unnoticed := r.stopped(400)
	want.NotHeld, want.Unnoticed = 0, 1
	if got != want || len(unnoticed) != 1 || unnoticed[0].h != r.Sections[secID{1, 1}] {
		t.Errorf("stopped() = %+v, %v; want %+v and the section of 1/1", got, unnoticed, want)
	}
}
