package main

import (
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

func testEnv(t *testing.T) *env {
	t.Helper()
	e, err := newEnv(redistest.Shared(t).Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e
}

// TestRows runs every row briefly and checks that each acquired the lock,
// never twice at once, and counted its commands.
func TestRows(t *testing.T) {
	e := testEnv(t)
	if e.overhead != 1 {
		t.Errorf("INFO adds %d commands to the count, want 1", e.overhead)
	}
	cfg := config{duration: 300 * time.Millisecond, workers: 3, hold: time.Millisecond, think: time.Millisecond, uncontended: 20}
	for _, r := range allRows() {
		res := e.runRow(r, cfg)
		switch {
		case res.failed != nil:
			t.Errorf("%s: %v", r.name, res.failed)
		case res.overlaps != 0 || res.acquisitions == 0:
			t.Errorf("%s: %d overlaps in %d acquisitions", r.name, res.overlaps, res.acquisitions)
		case !r.inProcess && (res.cmdsLockUnlock < 2 || res.cmdsPerAcq < 2):
			t.Errorf("%s: %.2f commands per lock+unlock, %.2f per acquisition; want at least 2", r.name, res.cmdsLockUnlock, res.cmdsPerAcq)
		}
	}
}

// TestScaleRun checks that every waiter of a small scale run acquires.
func TestScaleRun(t *testing.T) {
	res, err := testEnv(t).scaleRun(100)
	if err != nil {
		t.Fatal(err)
	}
	if res.acquired != 100 || res.early != 0 || res.errors != 0 {
		t.Errorf("acquired %d of 100, %d before the unlocks, %d errors (first: %v)", res.acquired, res.early, res.errors, res.firstErr)
	}
}

func TestSubscribed(t *testing.T) {
	for line, want := range map[string]bool{
		"id=3 addr=127.0.0.1:1 fd=8 name= sub=0 psub=0 ssub=0 multi=-1": false,
		"id=4 addr=127.0.0.1:2 fd=9 name= sub=2 psub=0 ssub=0 multi=-1": true,
		"id=5 addr=127.0.0.1:3 fd=9 name= sub=0 psub=1 multi=-1":        true,
	} {
		if got := subscribed(line); got != want {
			t.Errorf("subscribed(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for p, want := range map[float64]time.Duration{0.5: 3, 0.99: 5, 0.2: 1, 0.21: 2} {
		if got := percentile(ds, p); got != want {
			t.Errorf("percentile(%v) = %v, want %v", p, got, want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile(nil) = %v, want 0", got)
	}
}
