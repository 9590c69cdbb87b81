package bound

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// The alarms that close the Contexts' Done. A timer for each call that a
// driver waits on would cost a timer's start and stop for every command
// (valkey-go and rueidis wait on Done for each): the Contexts whose
// deadlines fall in the same grain share one alarm, which goes off at the
// grain's end, so that a Done closes up to a grain after its deadline. A
// grain is minGrain times a power of two, from a 64th to a 32nd of the
// time left, minGrain at least: a call under the default command timeout,
// 10 s, may end up to 256 ms late, and a Client under load keeps about 40
// alarms for such calls, each going off once. A call's deadline is a
// bound, not a schedule.

// minGrain is the finest grain, for deadlines up to 128 ms away.
const minGrain = 2 * time.Millisecond

// epoch is what the grains count from: a reading with a monotonic clock,
// so that a step of the wall clock moves no alarm.
var epoch = time.Now()

// never is the Done of a deadline beyond what a time.Duration from epoch
// holds, some 290 years: no alarm goes off for it.
var never = make(chan struct{})

var alarms struct {
	mu    sync.Mutex
	byEnd map[time.Duration]chan struct{} // the alarms set, by when they go off, from epoch
	// last is the alarm most recently set: calls made together share
	// it without taking mu.
	last atomic.Pointer[pending]
}

// A pending alarm: when it goes off, from epoch, and what it closes.
type pending struct {
	end  time.Duration
	done chan struct{}
}

// alarm returns a channel closed at the end of the grain of deadline,
// left from now.
func alarm(deadline time.Time, left time.Duration) <-chan struct{} {
	grain := minGrain
	for grain < left/64 {
		grain *= 2
	}
	at := deadline.Sub(epoch) // saturates at math.MaxInt64
	if at > math.MaxInt64-grain {
		return never
	}
	end := (at + grain - 1) / grain * grain
	if p := alarms.last.Load(); p != nil && p.end == end {
		return p.done
	}
	alarms.mu.Lock()
	defer alarms.mu.Unlock()
	if done, ok := alarms.byEnd[end]; ok {
		return done
	}
	if alarms.byEnd == nil {
		alarms.byEnd = map[time.Duration]chan struct{}{}
	}
	p := &pending{end: end, done: make(chan struct{})}
	alarms.byEnd[end] = p.done
	alarms.last.Store(p)
	time.AfterFunc(time.Until(epoch.Add(end)), func() {
		alarms.mu.Lock()
		delete(alarms.byEnd, end)
		alarms.mu.Unlock()
		close(p.done)
	})
	return p.done
}
