package bound

import (
	"sync"
	"sync/atomic"
	"time"
)

// The alarms that close the Contexts' Done. A timer for each call that a
// driver waits on would cost a timer's start and stop for every command
// (valkey-go and rueidis wait on Done for each): the Contexts whose
// deadlines fall in the same grain share one alarm, which goes off at the
// grain's end, so that a Done closes up to a grain after its deadline.
// Command timeouts are hundreds of milliseconds and more, and a call's
// deadline is a bound, not a schedule.

// grain is how late an alarm may go off after a deadline.
const grain = 2 * time.Millisecond

// epoch is what the grains count from: a reading with a monotonic clock,
// so that a step of the wall clock moves no alarm.
var epoch = time.Now()

var alarms struct {
	mu    sync.Mutex
	byEnd map[int64]chan struct{} // the alarms set, by grain
	// last is the alarm most recently set: calls made together share
	// it without taking mu.
	last atomic.Pointer[pending]
}

// A pending alarm: the grain it goes off at the end of, and what it closes.
type pending struct {
	end  int64
	done chan struct{}
}

// alarm returns a channel closed at the end of the grain of deadline.
func alarm(deadline time.Time) <-chan struct{} {
	end := (int64(deadline.Sub(epoch)) + int64(grain) - 1) / int64(grain)
	if p := alarms.last.Load(); p != nil && p.end == end {
		return p.done
	}
	alarms.mu.Lock()
	defer alarms.mu.Unlock()
	if done, ok := alarms.byEnd[end]; ok {
		return done
	}
	if alarms.byEnd == nil {
		alarms.byEnd = map[int64]chan struct{}{}
	}
	p := &pending{end: end, done: make(chan struct{})}
	alarms.byEnd[end] = p.done
	alarms.last.Store(p)
	time.AfterFunc(time.Until(epoch.Add(time.Duration(end)*grain)), func() {
		alarms.mu.Lock()
		delete(alarms.byEnd, end)
		alarms.mu.Unlock()
		close(p.done)
	})
	return p.done
}
