package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A step is one thing that happened in a synthetic run: a worker's event,
// or a kill or a stop by the coordinator. Times are nanoseconds from 0.
type step func(r *record)

// waits is a call to lock key as role, at at.
func waits(pid int, seq int64, key, role string, at int64) step {
	return func(r *record) { r.add(event{Ev: evWait, Pid: pid, Seq: seq, Key: key, Role: role, Enter: at}) }
}

// enters is fn's start, at at, for the call seq.
func enters(pid int, seq int64, key, role string, at int64) step {
	return func(r *record) { r.add(event{Ev: evEnter, Pid: pid, Seq: seq, Key: key, Role: role, Enter: at}) }
}

// exits is Do's return, at at, for the call seq.
func exits(pid int, seq int64, at int64) step {
	return func(r *record) {
		r.add(event{Ev: evSection, Pid: pid, Seq: seq, Rec: &section{Exit: at, Unlock: "ok"}})
	}
}

// fails is the call seq's failure to lock, at at.
func fails(pid int, seq int64, at int64) step {
	return func(r *record) { r.add(event{Ev: evError, Pid: pid, Seq: seq, Op: "lock", Kind: "deadline", Ret: at}) }
}

func kills(pid int, at int64) step {
	return func(r *record) { r.killed(pid, time.Unix(0, at)) }
}

func stops(pid int, from, to int64) step {
	return func(r *record) {
		r.Stops = append(r.Stops, stop{pid: pid, from: time.Unix(0, from), to: time.Unix(0, to)})
	}
}

// holds is a call to lock key as role at from that got it at from, and
// whose Do returned at to.
func holds(pid int, seq int64, key, role string, from, to int64) []step {
	return []step{waits(pid, seq, key, role, from), enters(pid, seq, key, role, from), exits(pid, seq, to)}
}

// replay returns the record of a run from 0 to 1000 made of steps. A
// time of 0 is unset in events: steps begin later.
func replay(steps ...[]step) *record {
	r := newRecord()
	r.Start, r.End = time.Unix(0, 0), time.Unix(0, 1000)
	for _, s := range slices.Concat(steps...) {
		s(r)
	}
	return r
}

func TestRecord_idle(t *testing.T) {
	const m, p = roleMutex, rolePermit
	for _, tt := range []struct {
		name  string
		steps [][]step
		want  []stretch
	}{
		{"hand-off", [][]step{holds(1, 1, "k", m, 10, 100), {waits(2, 1, "k", m, 50), enters(2, 1, "k", m, 100), exits(2, 1, 150)}}, nil},
		{"nobody waits", [][]step{holds(1, 1, "k", m, 10, 100), holds(2, 1, "k", m, 200, 300)}, nil},
		{"waiter got it late", [][]step{holds(1, 1, "k", m, 10, 100), {waits(2, 1, "k", m, 50), enters(2, 1, "k", m, 300), exits(2, 1, 350)}},
			[]stretch{{"k", 100, 300}}},
		{"waiter gave up", [][]step{holds(1, 1, "k", m, 10, 100), {waits(2, 1, "k", m, 50), fails(2, 1, 150)}},
			[]stretch{{"k", 100, 150}}},
		{"still waiting at the end", [][]step{holds(1, 1, "k", m, 10, 100), {waits(2, 1, "k", m, 50)}},
			[]stretch{{"k", 100, 1000}}},
		{"holder killed", [][]step{{enters(1, 1, "k", m, 10), waits(2, 1, "k", m, 50), kills(1, 100), enters(2, 1, "k", m, 400), exits(2, 1, 450)}},
			[]stretch{{"k", 100, 400}}},
		{"wait read after its kill", [][]step{holds(1, 1, "k", m, 10, 200), {kills(2, 100), waits(2, 1, "k", m, 90)}}, nil},
		{"holder stopped", [][]step{holds(1, 1, "k", m, 10, 300), {stops(1, 100, 250), waits(2, 1, "k", m, 50), enters(2, 1, "k", m, 400), exits(2, 1, 450)}},
			[]stretch{{"k", 100, 400}}},
		{"waiter stopped", [][]step{holds(1, 1, "k", m, 10, 100), {waits(2, 1, "k", m, 50), stops(2, 120, 200), enters(2, 1, "k", m, 300), exits(2, 1, 350)}},
			[]stretch{{"k", 100, 120}, {"k", 200, 300}}},
		{"semaphore with a free permit", [][]step{holds(1, 1, "s", p, 10, 500), {waits(2, 1, "s", p, 100), enters(2, 1, "s", p, 150), exits(2, 1, 300)},
			{waits(3, 1, "s", p, 200), enters(3, 1, "s", p, 300), exits(3, 1, 400)}},
			[]stretch{{"s", 100, 150}}},
		{"writer behind readers", [][]step{holds(1, 1, "rw", roleReader, 10, 100), holds(2, 1, "rw", roleReader, 50, 200),
			{waits(3, 1, "rw", roleWriter, 60), enters(3, 1, "rw", roleWriter, 250), exits(3, 1, 300)}},
			[]stretch{{"rw", 200, 250}}},
		{"locks apart", [][]step{holds(1, 1, "a", m, 10, 100), holds(2, 1, "b", m, 10, 50), {waits(1, 2, "b", m, 40), enters(1, 2, "b", m, 70), exits(1, 2, 80)}},
			[]stretch{{"b", 50, 70}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := replay(tt.steps...).idle(2); !slices.Equal(got, tt.want) {
				t.Errorf("idle() = %v; want %v", got, tt.want)
			}
		})
	}
}

// idleFor makes lock key idle from from to to: a goroutine waits for it
// from from and gets it at to.
func idleFor(pid int, key string, from, to int64) []step {
	return []step{waits(pid, 1, key, roleMutex, from), enters(pid, 1, key, roleMutex, to), exits(pid, 1, to+1)}
}

func TestRecord_idleByFault(t *testing.T) {
	const timeout = 100
	r := replay(
		idleFor(1, "a", 50, 80),    // before the first fault
		idleFor(2, "b", 150, 300),  // after the first kill
		idleFor(3, "c", 160, 200),  // shorter
		idleFor(4, "d", 550, 580),  // after the stop
		idleFor(5, "e", 780, 900),  // cut by the second kill at 800
		idleFor(6, "f", 850, 1000), // after the second kill, at the end
	)
	r.Injected = []injection{{kind: faultKill, at: 100}, {kind: faultStop, at: 500}, {kind: faultKill, at: 800}}
	got := r.idleByFault(1, timeout)
	for _, want := range []struct {
		kind    string
		longest []time.Duration
		median  time.Duration
		bound   time.Duration
	}{
		{faultNone, []time.Duration{30}, 30, 0},
		{faultKill, []time.Duration{150, 150}, 150, 2 * timeout},
		{faultStop, []time.Duration{30}, 30, 2*timeout + timeout + timeout/2},
	} {
		f := got[want.kind]
		if f == nil {
			t.Errorf("idleByFault()[%s] = nil; want %v", want.kind, want.longest)
			continue
		}
		var lengths []time.Duration
		for _, s := range f.Longest {
			lengths = append(lengths, s.length())
		}
		if !slices.Equal(lengths, want.longest) || f.median() != want.median || f.Bound != want.bound {
			t.Errorf("idleByFault()[%s] = %v, median %v, bound %v; want %v, median %v, bound %v",
				want.kind, lengths, f.median(), f.Bound, want.longest, want.median, want.bound)
		}
	}
	if n := len(got); n != 3 {
		t.Errorf("idleByFault() has %d kinds; want 3 (none, kill, stop)", n)
	}
}

func TestIdleFigures_median(t *testing.T) {
	for _, tt := range []struct {
		lengths []int64 // longest first
		want    time.Duration
	}{
		{nil, 0},
		{[]int64{7}, 7},
		{[]int64{9, 3}, 6},
		{[]int64{9, 5, 0}, 5},
	} {
		f := idleFigures{}
		for _, n := range tt.lengths {
			f.Longest = append(f.Longest, stretch{from: 0, to: n})
		}
		if got := f.median(); got != tt.want {
			t.Errorf("median() of %v = %v; want %v", tt.lengths, got, tt.want)
		}
	}
}

// TestRecord_summarize_idle checks the pass criterion: a lock idle after
// a kill for its bound or longer fails the run; after a restart it does
// not, however long.
func TestRecord_summarize_idle(t *testing.T) {
	opts := options{Timeout: 100, Permits: 1}
	for _, tt := range []struct {
		kind string
		to   int64
		fail bool
	}{
		{faultKill, 100 + 199, false},
		{faultKill, 100 + 200, true},
		{faultRestart, 900, false},
	} {
		r := replay(idleFor(1, "k", 100, tt.to))
		r.Injected = []injection{{kind: tt.kind, at: 100}}
		s := r.summarize(opts)
		failed := slices.ContainsFunc(s.Failures, func(f string) bool { return strings.Contains(f, "after a "+tt.kind+" fault") })
		if failed != tt.fail {
			t.Errorf("%s, idle %dns: failures %q; want an idle failure: %v", tt.kind, tt.to-100, s.Failures, tt.fail)
		}
	}
}

// TestParking runs a worker's parking through the coordinator's commands,
// one step at a time.
func TestParking(t *testing.T) {
	var p parking
	var parked <-chan struct{} // the section parked last
	isClosed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	for i, s := range []struct {
		obey     string // a command line, or "" for none
		take     string // the role of a section that ends its work, or ""
		parks    bool   // it parks
		released bool   // the section parked last may go
	}{
		{take: roleMutex},                                      // no park asked
		{obey: "park writer", take: roleMutex},                 // not its role
		{take: roleWriter, parks: true},                        // parks
		{take: roleWriter},                                     // one park, one section
		{obey: "go", released: true},                           // lets it go
		{obey: "park permit", released: true},                  // a park not yet taken ...
		{obey: "go", take: rolePermit, released: true},         // ... cancelled
		{obey: "park mutex", take: roleMutex, parks: true},     // parks
		{obey: "park mutex", released: true},                   // a new park lets the old go
		{obey: "bogus", take: roleMutex, parks: true},          // unknown lines are ignored
		{obey: "park writer", take: roleMutex, released: true}, // the new park is for writers
	} {
		if s.obey != "" {
			p.obey(s.obey)
		}
		if s.take != "" {
			c := p.take(s.take)
			if (c != nil) != s.parks {
				t.Errorf("step %d: take(%q) = %v; want a channel: %v", i, s.take, c, s.parks)
			}
			if c != nil {
				parked = c
			}
		}
		if parked != nil && isClosed(parked) != s.released {
			t.Errorf("step %d: the parked section may go: %v; want %v", i, isClosed(parked), s.released)
		}
	}
	p.obey("park mutex")
	parked = p.take(roleMutex)
	p.stop() // the worker stops
	if !isClosed(parked) {
		t.Errorf("after stop(), the parked section may not go; want it to")
	}
}
