package uncomplicatedtest

import (
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/benbjohnson/clock"
)

// redisClock is Redis's clock in an Env: the mock clock's time plus a
// microsecond for every script sent so far. On a real server two scripts
// in practice never read the same time (TIME: a script takes longer than a
// microsecond), and the locks' fences, which Redis's clock makes, rise
// with every grant; so they do here while the mock clock stands still. TTLs follow the mock clock alone: Advance moves them
// by exactly its step (FastForward).
type redisClock struct {
	redis *miniredis.Miniredis
	clock *clock.Mock

	mu    sync.Mutex    // guards ahead and orders the moves
	ahead time.Duration // how far Redis's time is ahead of the mock clock's
}

// before moves Redis's clock a microsecond ahead if cmd runs a script.
func (c *redisClock) before(cmd string) {
	if !strings.EqualFold(cmd, "EVALSHA") && !strings.EqualFold(cmd, "EVAL") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ahead += time.Microsecond
	c.redis.SetTime(c.clock.Now().Add(c.ahead))
}

// advance moves Redis's clock and its TTLs to t, where the mock clock is
// about to go.
func (c *redisClock) advance(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.redis.FastForward(t.Sub(c.clock.Now()))
	c.redis.SetTime(t.Add(c.ahead))
}
