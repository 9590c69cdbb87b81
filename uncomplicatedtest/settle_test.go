package uncomplicatedtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/uncomplicated-mutex/uncomplicated/internal/mockclock"
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
		due     []time.Time // the library's own work (a take of a claim)
	}{
		{"nobody", 0, nil, true, time.Time{}, nil},
		{"one running", 1, nil, false, time.Time{}, nil},
		{"one asleep", 1, []time.Time{later}, true, later, nil},
		{"two asleep", 2, []time.Time{later, sooner}, true, sooner, nil},
		{"one asleep, one running", 2, []time.Time{later}, false, later, nil},
		{"one due", 1, []time.Time{now}, false, now, nil},
		{"one behind another", 1, []time.Time{{}}, true, time.Time{}, nil},
		{"behind another and asleep", 2, []time.Time{{}, later}, true, later, nil},
		{"work due later", 0, nil, true, later, []time.Time{later}},
		{"work due now", 0, nil, false, now, []time.Time{now}},
		{"asleep, work due sooner", 1, []time.Time{later}, true, sooner, []time.Time{sooner}},
	}
	for _, tc := range cases {
		c := &observedClock{Mock: mockclock.Wrap(mock), waiting: tc.waiting, parked: map[*parking]struct{}{}, due: map[*time.Time]struct{}{}}
		for _, u := range tc.parked {
			c.parked[&parking{until: u}] = struct{}{}
		}
		for _, at := range tc.due {
			c.Due(at)
		}
		settled, parked, next, due := c.state()
		if settled != tc.settled || parked != len(tc.parked) || !next.Equal(tc.next) || due != (len(tc.due) > 0) {
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

// clock.Mock's Timer fires the timers already due itself: made while Set
// fires one, it could fire it a second time, and with the first value
// unread that send blocks for ever with the mock's lock held. Env's clock
// makes timers only while Set does not run.
func TestObservedClock_timerWhileSet(t *testing.T) {
	e := New(t)
	for round := range 50 {
		unread := e.clock.Timer(time.Second) // a timer that fires and is never read
		_ = unread
		stop := make(chan struct{})
		done := make(chan struct{})
		for range 4 {
			go func() {
				for {
					select {
					case <-stop:
						return
					default:
						e.clock.Timer(time.Hour).Stop()
					}
				}
			}()
		}
		go func() {
			e.set(e.Clock.Now().Add(2 * time.Second))
			close(done)
		}()
		select {
		case <-done:
			close(stop)
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: Set still blocked after 5s: a timer fired twice", round)
		}
	}
}
