package uncomplicatedtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

func TestObservedClock_state(t *testing.T) {
	mock := clock.NewMock()
	now := mock.Now()
	later, sooner := now.Add(2*time.Second), now.Add(time.Second)
	cases := []struct {
		name    string
		waiting int
		parked  []time.Time // zero: behind another goroutine, no timer
		settled bool
		next    time.Time
	}{
		{"nobody", 0, nil, true, time.Time{}},
		{"one running", 1, nil, false, time.Time{}},
		{"one asleep", 1, []time.Time{later}, true, later},
		{"two asleep", 2, []time.Time{later, sooner}, true, sooner},
		{"one asleep, one running", 2, []time.Time{later}, false, later},
		{"one due", 1, []time.Time{now}, false, now},
		{"one behind another", 1, []time.Time{{}}, true, time.Time{}},
		{"behind another and asleep", 2, []time.Time{{}, later}, true, later},
	}
	for _, tc := range cases {
		c := &observedClock{Mock: mock, waiting: tc.waiting, parked: map[*parking]struct{}{}}
		for _, u := range tc.parked {
			c.parked[&parking{until: u}] = struct{}{}
		}
		settled, parked, next := c.state()
		if settled != tc.settled || parked != len(tc.parked) || !next.Equal(tc.next) {
			t.Errorf("%s: state() = %v, %d, %v; want %v, %d, %v", tc.name, settled, parked, next, tc.settled, len(tc.parked), tc.next)
		}
	}
}

// Advance stops at each wake-up of a waiter and waits for it, however slow
// it is: a waiter that takes real milliseconds to act on each wake-up
// still sees every one at its own instant, and Advance returns only once
// it sleeps again.
func TestAdvance_stepsAndWaits(t *testing.T) {
	e := New(t)
	c := e.clock
	start := c.Now()
	woke := make(chan time.Duration, 100)
	c.Waiting(1)
	go func() {
		defer c.Waiting(-1)
		for i := 1; i <= 10; i++ {
			timer := c.Timer(time.Second)
			wake := c.Park(c.Now().Add(time.Second), "")
			<-timer.C
			time.Sleep(2 * time.Millisecond) // slow work, in real time
			woke <- c.Since(start)
			wake()
		}
	}()
	e.AwaitWaiters(1)
	e.Advance(5 * time.Second)
	if len(woke) != 5 {
		t.Fatalf("Advance(5s) returned after %d wake-ups; want 5", len(woke))
	}
	e.Advance(5 * time.Second)
	for i := 1; i <= 10; i++ {
		if got, want := <-woke, time.Duration(i)*time.Second; got != want {
			t.Errorf("wake-up %d at %v; want %v", i, got, want)
		}
	}
}

func TestAdvance_negative(t *testing.T) {
	r := &fatalRecorder{}
	e := New(t)
	e.t = r
	func() {
		defer func() { _ = recover() }()
		e.Advance(-time.Second)
	}()
	if r.msg == "" {
		t.Error("Advance(-1s) did not fail the test")
	}
}

// fatalRecorder keeps the message of Fatalf, which panics to stop.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (*fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r.msg)
}
