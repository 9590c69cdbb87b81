package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// hurries is a hurried caller's call to lock key from from to to (0:
// still waiting), which got it when got.
func hurries(pid int, seq int64, key string, from, to int64, got bool) step {
	return func(r *record) {
		r.add(event{Ev: evWait, Pid: pid, Seq: seq, Key: key, Role: roleMutex, Hurried: true, Enter: from})
		switch {
		case to == 0:
		case got:
			r.add(event{Ev: evEnter, Pid: pid, Seq: seq, Key: key, Role: roleMutex, Hurried: true, Enter: to})
		default:
			r.add(event{Ev: evError, Pid: pid, Seq: seq, Op: "hurried lock", Kind: "ErrNotObtained (deadline)", Ret: to})
		}
	}
}

// TestRecord_hurried checks which hurried calls count as made while no
// fault of the locks was under way: not those that meet a fault of a
// lock's server until it settled, those during a fault of a worker, not
// the patient callers' nor those still waiting at the end.
func TestRecord_hurried(t *testing.T) {
	r := replay([]step{
		hurries(1, 1, "a", 150, 160, false), // during the restart
		hurries(1, 2, "a", 290, 310, true),  // ends after the restart settled: still during
		hurries(1, 3, "a", 350, 360, false),
		hurries(1, 4, "b", 500, 510, true), // during a kill, a fault of a worker
		hurries(1, 5, "b", 900, 0, false),  // still waiting
		waits(2, 1, "a", roleMutex, 350),   // a patient caller, whose ctx ended
		func(r *record) {
			r.add(event{Ev: evError, Pid: 2, Seq: 1, Op: "lock", Kind: "ErrNotObtained (deadline)", Ret: 360})
		},
	})
	r.Injected = []injection{{kind: faultRestart, at: 100, until: 300}, {kind: faultKill, at: 400, until: 600}}
	f := r.hurried()
	if got, want := f.total(), (calls{Calls: 2, Acquired: 1}); got != want {
		t.Errorf("hurried().total() = %+v; want %+v", got, want)
	}
	if got, want := *f.Unfaulted["a"], (calls{Calls: 1}); got != want {
		t.Errorf("hurried() of a = %+v; want %+v", got, want)
	}
	if got := r.roles()[colHurried]; got.Calls != 5 || got.GaveUp != 2 || got.Completed != 0 || got.Killed != 2 {
		t.Errorf("roles()[hurried] = %+v; want 5 calls, 2 given up, 2 sections begun, none ended", got)
	}
	if got := r.roles()[roleMutex]; got.Calls != 1 || got.GaveUp != 1 {
		t.Errorf("roles()[mutex] = %+v; want the patient call, given up", got)
	}
}

func TestHurriedFigures_collapsed(t *testing.T) {
	for _, tt := range []struct {
		unfaulted map[string]*calls
		want      bool
	}{
		{map[string]*calls{"a": {Calls: 60}, "b": {Calls: 40}}, true},
		{map[string]*calls{"a": {Calls: 60}, "b": {Calls: 40, Acquired: 1}}, false},
		{map[string]*calls{"a": {Calls: hurriedCallsMin - 1}}, false}, // too few to judge
		{nil, false},
	} {
		f := hurriedFigures{Unfaulted: tt.unfaulted}
		if got := f.collapsed(); got != tt.want {
			t.Errorf("collapsed() of %+v = %v; want %v", f.total(), got, tt.want)
		}
	}
}

// TestRecord_summarize_samples checks that a worker's goroutines or
// connections, or the servers' keys, over their bounds fail the run, and
// at their bounds do not.
func TestRecord_summarize_samples(t *testing.T) {
	opts := options{Procs: 2, Goroutines: 3, Hurried: 2, Keys: 1, Permits: 1, Timeout: 100}
	s := run1000().samples(opts)
	for _, tt := range []struct {
		name  string
		gauge func(r *record) *[]gauge
		bound int
	}{
		{"goroutines", func(r *record) *[]gauge { return &r.Goroutines }, s.GoroutineBound},
		{"connections", func(r *record) *[]gauge { return &r.Conns }, s.ConnBound},
		{"keys", func(r *record) *[]gauge { return &r.Keys }, s.KeyBound},
	} {
		for _, over := range []bool{false, true} {
			r := run1000()
			n := tt.bound
			if over {
				n++
			}
			*tt.gauge(r) = []gauge{{pid: 1, at: 10, n: 1}, {pid: 1, at: 20, n: n}, {pid: 2, at: 30, n: 2}}
			s := r.summarize(opts)
			failed := slices.ContainsFunc(s.Failures, func(f string) bool { return strings.Contains(f, "over") })
			if failed != over {
				t.Errorf("%s %d, bound %d: failures %q; want one: %v", tt.name, n, tt.bound, s.Failures, over)
			}
		}
	}
	if want := standingGoroutines + goroutinesPerCaller*5 + goroutinesPerBehind*maxBehind; s.GoroutineBound != want {
		t.Errorf("GoroutineBound = %d; want %d: 5 callers", s.GoroutineBound, want)
	}
}

// TestRecord_lateCalls checks that a late call is excused when its
// process was stopped or stalled during it, and not for another's.
func TestRecord_lateCalls(t *testing.T) {
	ms := int64(time.Millisecond)
	r := newRecord()
	r.Start, r.End = time.Unix(0, 0), time.Unix(10, 0)
	r.Stops = []stop{{pid: 1, from: time.Unix(0, 100*ms), to: time.Unix(0, 200*ms)}}
	r.Stalls = []gauge{{pid: 2, at: 300 * ms, n: int(60 * ms)}, {pid: 3, at: 700 * ms, n: int(70 * ms)}, {pid: 1, at: 120 * ms, n: int(80 * ms)}}
	r.Late = []event{
		{Pid: 1, Enter: 150 * ms, Ret: 250 * ms}, // stopped
		{Pid: 2, Enter: 350 * ms, Ret: 500 * ms}, // stalled from 300 to 360
		{Pid: 2, Enter: 361 * ms, Ret: 500 * ms}, // after its stall
		{Pid: 1, Enter: 700 * ms, Ret: 800 * ms}, // another worker stalled
	}
	late, excused := r.lateCalls()
	if len(late) != 2 || len(excused) != 2 || late[0].Enter != 361*ms || late[1].Enter != 700*ms {
		t.Errorf("lateCalls() = %v late, %v excused; want those from 361 and 700 ms late", late, excused)
	}
	// The stall of the stopped worker is its stop.
	if stalls, longest := r.unstopped(); len(stalls) != 2 || longest.pid != 3 {
		t.Errorf("unstopped() = %v, %v; want the stalls of workers 2 and 3, the longest 3's", stalls, longest)
	}
}
