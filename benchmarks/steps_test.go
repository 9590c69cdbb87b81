package main

import (
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/trace"
)

// The stamps join into hand-offs by the waiter's token, also when the
// message reached the waiter's Client before the release's reply came
// back; a hand-off whose waiter never returned is left out; each step is
// the median time since the one before.
func TestSteps_join(t *testing.T) {
	us := time.Microsecond
	s := &stepTrace{events: []stepEvent{
		{trace.Unlock, "L", "", 0}, {trace.Sent, "L", "", 10 * us},
		{trace.Read, "", "a", 50 * us}, {trace.Reply, "L", "a", 60 * us},
		{trace.Woken, "L", "a", 70 * us}, {trace.Returned, "L", "a", 75 * us}, {trace.Taken, "L", "a", 500 * us},
		{trace.Unlock, "L", "", 1000 * us}, {trace.Sent, "L", "", 1020 * us},
		{trace.Reply, "L", "b", 1100 * us}, {trace.Read, "", "b", 1120 * us}, // b gave up: never woken
		{trace.Unlock, "M", "", 2000 * us}, {trace.Sent, "M", "", 2010 * us}, {trace.Reply, "M", "c", 2040 * us},
		{trace.Read, "", "c", 2040 * us}, {trace.Woken, "M", "c", 2045 * us}, {trace.Returned, "M", "c", 2050 * us},
	}}
	got := s.steps()
	if got.n != 2 {
		t.Fatalf("%d hand-offs joined; want 2 (b never woke)", got.n)
	}
	// a: 10, 50, 40, 20, 5, 75, 425; c: 10, 30, 30, 5, 5, 50; the median of two is the upper one.
	want := []time.Duration{10 * us, 50 * us, 40 * us, 20 * us, 5 * us, 75 * us, 425 * us}
	for i, w := range want {
		if got.medians[i] != w {
			t.Errorf("%s = %v; want %v", stepNames[i], got.medians[i], w)
		}
	}
	var b strings.Builder
	printSteps(&b, []result{{name: "ours", steps: got}, {name: "none"}})
	if !strings.Contains(b.String(), "| ours | 2 | 10 | 50 | 40 | 20 | 5 | 75 | 425 |") || strings.Contains(b.String(), "none") {
		t.Errorf("table:\n%s\nwant ours' row, and no row for a result without steps", b.String())
	}
}
