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
	byEnd map[time.Duration]*pending // the alarms set, by when they go off, from epoch
	// last is the alarm most recently set: calls made together share
	// it without taking mu.
	last atomic.Pointer[pending]
}

// A pending alarm: when it goes off, from epoch, what it closes, and the
// funcs to call then (see Context.AfterFunc).
type pending struct {
	end  time.Duration
	done chan struct{}

	mu    sync.Mutex
	gone  bool                   // it went off
	after map[*callback]struct{} // the funcs to call when it goes off
}

// A callback is a func that an alarm calls when it goes off, unless it is
// stopped first.
type callback struct{ f func() }

// alarm returns the alarm that goes off at the end of the grain of
// deadline, left from now; nil for a deadline that never comes.
func alarm(deadline time.Time, left time.Duration) *pending {
	grain := minGrain
	for grain < left/64 {
		grain *= 2
	}
	at := deadline.Sub(epoch) // saturates at math.MaxInt64
	if at > math.MaxInt64-grain {
		return nil
	}
	end := (at + grain - 1) / grain * grain
	if p := alarms.last.Load(); p != nil && p.end == end {
		return p
	}
	alarms.mu.Lock()
	defer alarms.mu.Unlock()
	if p, ok := alarms.byEnd[end]; ok {
		return p
	}
	if alarms.byEnd == nil {
		alarms.byEnd = map[time.Duration]*pending{}
	}
	p := &pending{end: end, done: make(chan struct{})}
	alarms.byEnd[end] = p
	alarms.last.Store(p)
	time.AfterFunc(time.Until(epoch.Add(end)), p.goOff)
	return p
}

// goOff closes the alarm's channel and calls its funcs, each in a
// goroutine of its own.
func (p *pending) goOff() {
	alarms.mu.Lock()
	delete(alarms.byEnd, p.end)
	alarms.mu.Unlock()
	p.mu.Lock()
	close(p.done) // before gone: a func called from here on finds the Contexts ended
	p.gone = true
	after := p.after
	p.after = nil
	p.mu.Unlock()
	for cb := range after {
		go cb.f()
	}
}

// afterFunc calls f, in a goroutine of its own, when the alarm goes off,
// unless stop is called first; stop reports whether it stopped f.
func (p *pending) afterFunc(f func()) (stop func() bool) {
	cb := &callback{f}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		go f()
		return func() bool { return false }
	}
	if p.after == nil {
		p.after = map[*callback]struct{}{}
	}
	p.after[cb] = struct{}{}
	return func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		_, ok := p.after[cb]
		delete(p.after, cb)
		return ok
	}
}
