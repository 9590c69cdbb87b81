// Package mockclock is benbjohnson/clock's Mock made safe to move while
// goroutines make timers on it.
//
// clock.Mock's Timer fires the timers already due itself. Made while Add
// or Set fires one, or while another Timer does, it can fire that timer a
// second time; with the first value unread, the second send blocks for
// ever, with the mock's lock held, and every goroutine that reads the
// clock with it. A Mock makes its timers only while it is not moving.
package mockclock

import (
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// A Mock is a clock.Mock whose Add, Set and Timer (and so After and
// Sleep) run one at a time.
type Mock struct {
	*clock.Mock
	mu sync.Mutex
}

// Wrap returns the Mock of m. Moving m itself, not through the Mock, is
// not serialised.
func Wrap(m *clock.Mock) *Mock { return &Mock{Mock: m} }

// Add moves the clock forward by d, firing the timers due.
func (c *Mock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Mock.Add(d)
}

// Set moves the clock to t, firing the timers due.
func (c *Mock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Mock.Set(t)
}

// Timer is the mock's, made while the clock does not move.
func (c *Mock) Timer(d time.Duration) *clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Mock.Timer(d)
}

// After and Sleep go through Timer.
func (c *Mock) After(d time.Duration) <-chan time.Time { return c.Timer(d).C }
func (c *Mock) Sleep(d time.Duration)                  { <-c.After(d) }
