package main

import (
	"testing"
	"time"
)

// TestRecord_roles checks the figures by role that must be 0: a hold
// stopped mid-section that Do did not report lost, a fenced-out hold
// confirmed, a Lost signal with Do's nil, a fence shown twice.
func TestRecord_roles(t *testing.T) {
	r := run1000()
	r.Stops = []stop{{pid: 1, from: time.Unix(0, 100), to: time.Unix(0, 400)}}
	reads(r, 1, 90, 450, accepted, "ok")    // resumed after the stop, yet confirmed
	writes(r, 2, 7, 10, 20, rejected, "ok") // fenced out, yet confirmed
	lost := writes(r, 3, 7, 30, 40, accepted, "ok")
	lost.rec.CtxLost = true // fence 7 again; found lost, yet Do returned nil
	killed := event{Pid: 4, Seq: 1, Key: "k", Role: roleWriter, Fence: 8, Enter: 500}
	r.Sections[secID{4, 1}] = &hold{enter: killed}
	fs := r.roles()
	if got, want := *fs[roleReader], (roleFigures{Completed: 1, Confirmed: 1, Resumed: 1, ResumedUntold: 1}); got != want {
		t.Errorf("roles()[reader] = %+v; want %+v", got, want)
	}
	// Frozen mid-section too, Do cut short by its deadline and told
	// nothing: untold; the same with Acquire and Release: excused, as
	// Release has no lease clock to tell it.
	permit := func(pid int, manual bool) {
		h := reads(r, pid, 90, 450, accepted, "deadline")
		h.enter.Role, h.rec.Manual = rolePermit, manual
		r.Stops = append(r.Stops, stop{pid: pid, from: time.Unix(0, 100), to: time.Unix(0, 400)})
	}
	permit(5, false)
	permit(6, true)
	if got, want := *r.roles()[rolePermit], (roleFigures{Completed: 2, Manual: 1, Unsure: 2, Resumed: 2, ResumedUntold: 1}); got != want {
		t.Errorf("roles()[permit] = %+v; want %+v", got, want)
	}
	want := roleFigures{Completed: 2, Killed: 1, Confirmed: 1, Found: 1, LostSeen: 1, LostButConfirmed: 1, FencedConfirmed: 1, Fenced: 3, DupFences: 1}
	if got := *fs[roleWriter]; got != want {
		t.Errorf("roles()[writer] = %+v; want %+v", got, want)
	}
}
