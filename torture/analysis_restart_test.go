package main

import (
	"testing"
	"time"
)

// The calls to lock under way while Redis restarted: within 2s of a
// restart fault, or from a lose fault's kill to a second after the server
// answered again (not a rollback); those that did not obtain the lock are
// told apart by why.
func TestRecord_restarts(t *testing.T) {
	s := int64(time.Second)
	r := newRecord()
	r.Start, r.End = time.Unix(0, 0), time.Unix(100, 0)
	r.Injected = []injection{{kind: faultRestart, at: 10 * s}, {kind: faultKill, at: 50 * s}}
	r.Losses = []loss{{from: 30 * s, back: 31 * s}, {rollback: true, from: 60 * s, back: 60 * s}}
	calls := []struct {
		from, to int64
		failed   string // "": obtained
	}{
		{9 * s, 10*s + 1, ""}, // under way at the restart
		{11 * s, 13 * s, "ErrNotObtained (connection refused)"}, // gave up within the window
		{12*s + 1, 14 * s, "ErrNotObtained (EOF)"},              // began after the window
		{29 * s, 31 * s, "ErrNotObtained (deadline)"},           // its ctx ended, within the lose's restart
		{31*s + s/2, 33 * s, "ErrStale"},                        // within a second of the server answering
		{50 * s, 51 * s, "ErrNotObtained (EOF)"},                // at a kill of a worker, not of Redis
		{60 * s, 61 * s, "ErrNotObtained (EOF)"},                // at a rollback, not a restart
		{11 * s, 12 * s, "ErrNotObtained (closed)"},             // its Client closed
		{11 * s, 12 * s, "ErrNotObtained"},                      // no cause told
		{95 * s, 0, ""},                                         // still waiting at the end
	}
	for i, c := range calls {
		id := secID{1, int64(i)}
		r.Waits[id] = &wait{pid: 1, from: c.from, to: c.to}
		if c.failed != "" {
			r.Failed[id] = c.failed
		}
	}
	got, want := r.restarts(), restartFigures{Waits: 6, GaveUp: 1, CtxEnded: 1, Other: 3}
	if got != want {
		t.Errorf("restarts() = %+v; want %+v", got, want)
	}
}
