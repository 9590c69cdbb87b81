package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// wrote is a section of lock key whose fn began at enter, whose WRITE
// ended with outcome at write and whose Do confirmed it.
func wrote(r *record, pid int, seq int64, key string, enter, write int64, outcome string) {
	r.Sections[secID{pid, seq}] = &hold{
		enter: event{Pid: pid, Seq: seq, Key: key, Role: roleMutex, Enter: enter},
		rec:   &section{Read: accepted, ReadAt: enter + 1, Write: outcome, WriteAt: write, Exit: write + 1, Unlock: "ok"},
	}
}

func TestRecord_recoveries(t *testing.T) {
	r := newRecord()
	r.Start, r.End = time.Unix(0, 0), time.Unix(0, 10_000)
	r.Losses = []loss{
		{from: 1000, back: 1100, locks: []string{"a", "b"}},            // a restart: both locks
		{rollback: true, from: 5000, back: 5001, locks: []string{"a"}}, // a rollback of a
		{rollback: true, from: 7000, back: 7001},                       // a rollback of a Semaphore
		{from: 9000, back: 9100, locks: []string{"a"}},                 // a restart near the end
	}
	wrote(r, 1, 1, "a", 900, 1150, accepted)  // the old holder's write: began before the loss
	wrote(r, 2, 1, "a", 1050, 1080, accepted) // a new holder's, before the server answered
	wrote(r, 3, 1, "a", 1120, 1200, accepted) // a's first
	wrote(r, 3, 2, "a", 1300, 1350, accepted)
	wrote(r, 1, 2, "b", 1110, 1150, rejected)
	wrote(r, 2, 2, "b", 1300, 1400, accepted) // b's first: the later of the two
	wrote(r, 1, 3, "a", 4990, 5010, accepted) // the holder the rollback hit
	wrote(r, 3, 3, "a", 5005, 5006, accepted) // granted before the rollback, its fn began after: its Do found it lost
	r.Sections[secID{3, 3}].rec.ErrLost, r.Sections[secID{3, 3}].rec.Unlock = true, "ErrLost"
	wrote(r, 2, 3, "a", 5010, 5020, accepted) // a's first after the rollback
	wrote(r, 1, 4, "b", 9200, 9300, accepted) // not a lock of the last restart

	got := r.recoveries()
	want := []struct {
		from  int64 // the loss's
		key   string
		after time.Duration
		cut   bool
	}{{1000, "b", 300, false}, {5000, "a", 19, false}, {9000, "a", 900, true}}
	if len(got) != len(want) {
		t.Fatalf("recoveries() = %+v; want %+v", got, want)
	}
	for i, w := range want {
		if g := got[i]; g.l.from != w.from || g.key != w.key || g.after != w.after || g.cut != w.cut {
			t.Errorf("recoveries()[%d] = the loss at %d: %s after %v, cut %v; want the loss at %d: %s after %v, cut %v",
				i, g.l.from, g.key, g.after, g.cut, w.from, w.key, w.after, w.cut)
		}
	}

	f := r.lose()
	var afters []time.Duration
	for _, rc := range f.Recoveries {
		afters = append(afters, rc.after)
	}
	if f.Restarts != 2 || f.Rollbacks != 2 || f.Unmeasured != 1 || !slices.Equal(afters, []time.Duration{900, 300, 19}) || f.median() != 300 {
		t.Errorf("lose() = %d restarts, %d rollbacks, %d unmeasured, recoveries %v, median %v; want 2, 2, 1, [900 300 19], 300",
			f.Restarts, f.Rollbacks, f.Unmeasured, afters, f.median())
	}
}

// TestRecord_summarize_lose checks the pass criterion: a new holder's
// first write accepted loseBound or more after Redis answered again fails
// the run, and so does none by the run's end once loseBound has passed;
// none before then does not.
func TestRecord_summarize_lose(t *testing.T) {
	const s = int64(time.Second)
	for _, tt := range []struct {
		name  string
		write int64 // the new holder's write; 0: none
		end   int64
		fail  bool
	}{
		{"in time", 1*s + 1900*1e6, 10 * s, false},
		{"late", 1*s + 2*s, 10 * s, true},
		{"none, the run ended early", 0, 1*s + 1500*1e6, false},
		{"none", 0, 10 * s, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecord()
			r.Start, r.End = time.Unix(0, 0), time.Unix(0, tt.end)
			r.Losses = []loss{{rollback: true, from: 1*s - 1000, back: 1 * s, locks: []string{"k"}}}
			r.Injected = []injection{{kind: faultLose, at: 1*s - 1000}}
			if tt.write > 0 {
				wrote(r, 1, 1, "k", tt.write-1000, tt.write, accepted)
			}
			sum := r.summarize(options{Timeout: time.Second, Permits: 1, Faults: []string{faultLose}})
			failed := slices.ContainsFunc(sum.Failures, func(f string) bool { return strings.Contains(f, "after a lose fault") })
			if failed != tt.fail {
				t.Errorf("failures %q; want a lose failure: %v", sum.Failures, tt.fail)
			}
		})
	}
}

func TestSnapshots_pick(t *testing.T) {
	s := &snapshots{rings: map[string][]snapshot{}}
	at := func(ms int64) time.Time { return time.Unix(0, ms*1e6) }
	for i := range snapshotsKept + 5 {
		s.add("k", snapshot{taken: at(int64(i * 10)), acquired: i})
	}
	if n := len(s.rings["k"]); n != snapshotsKept {
		t.Errorf("%d snapshots kept; want %d", n, snapshotsKept)
	}
	for _, tt := range []struct {
		acquired int
		before   time.Time
		want     int // the acquired of the snapshot picked; -1: none
	}{
		{50, at(10_000), 50}, // the latest old enough
		{50, at(300), 29},    // the latest before the open holds called
		{50, at(290), 28},    // taken at 290: not before
		{3, at(10_000), -1},  // older than the ring
		{1000, at(10_000), snapshotsKept + 4},
	} {
		snap, ok := s.pick("k", tt.acquired, tt.before)
		if got := map[bool]int{true: snap.acquired, false: -1}[ok]; got != tt.want {
			t.Errorf("pick(k, %d, %v) = %d; want %d", tt.acquired, tt.before.UnixMilli(), got, tt.want)
		}
	}
	if _, ok := s.pick("other", 1000, at(10_000)); ok {
		t.Errorf("pick(other) found a snapshot; want none")
	}
}

func TestRestoreTTL(t *testing.T) {
	for _, tt := range []struct {
		pttl int64
		want int64
	}{{-1, 1000}, {0, 1}, {1, 1}, {750, 750}} {
		if got := restoreTTL(tt.pttl, time.Second); got != tt.want {
			t.Errorf("restoreTTL(%d, 1s) = %d; want %d", tt.pttl, got, tt.want)
		}
	}
}
