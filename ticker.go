package uncomplicated

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// The wait loop: try at once; while the lock is held, sleep a random time
// below the tick and try again. Patience follows the holder's token: a new
// token restarts it, and one token seen for the whole timeout is stale.

// wait acquires the lock in Redis for a caller that holds m.sem.
func (m *Mutex) wait(ctx context.Context, obs settle.Observer) error {
	token := newToken()
	var p patience
	for {
		out, err := m.acquire(ctx, token)
		if err != nil {
			return m.gaveUp(ctx, err)
		}
		if out.fence > 0 {
			m.acquired(ctx, token, out.fence)
			return nil
		}
		now := m.cfg.clock.Now()
		if p.watch(out.holder, now) && m.logs(ctx) {
			m.debug(ctx, "lock busy, waiting", slog.Duration("timeout", m.cfg.timeout))
		}
		if age := p.age(now); age >= m.cfg.timeout {
			if m.cfg.policy == Fail {
				return m.stale(ctx, age)
			}
			out, err = m.takeOver(ctx, p.holder, token)
			if err != nil {
				return m.gaveUp(ctx, err)
			}
			if out.fence > 0 {
				m.hold(token, out.fence)
				if m.logs(ctx) {
					m.debug(ctx, "lock taken over", slog.Duration("age", age), slog.Uint64("fence", out.fence))
				}
				return nil
			}
			// Another waiter took it over first: a new holder to watch.
			p.watch(out.holder, now)
		}
		if err := m.sleep(ctx, obs, m.cfg.timeout-p.age(now)); err != nil {
			return err
		}
	}
}

// stale is the error of a Lock that found the holder stuck under Fail.
func (m *Mutex) stale(ctx context.Context, age time.Duration) error {
	if m.logs(ctx) {
		m.debug(ctx, "lock stale", slog.Duration("age", age))
	}
	return m.notObtained(fmt.Sprintf("stale: one holder token for %v", age.Round(time.Millisecond)), ErrStale)
}

// sleep waits a random time below the tick, but not past left, the rest of
// the waiter's patience, so that staleness is judged exactly at the timeout.
// It returns early with an error when ctx ends or the Client closes.
func (m *Mutex) sleep(ctx context.Context, obs settle.Observer, left time.Duration) error {
	d := min(jitter(m.cfg.tick()), left)
	t := m.cfg.clock.Timer(d)
	defer t.Stop()
	if obs != nil {
		defer obs.Park(m.cfg.clock.Now().Add(d))()
	}
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return m.notObtained(ctx.Err().Error(), ctx.Err())
	case <-m.c.done:
		return m.notObtained("client closed", ErrClosed)
	}
}

// jitter returns a random duration in [0, bound), or 0 when bound is not
// positive.
func jitter(bound time.Duration) time.Duration {
	if bound <= 0 {
		return 0
	}
	return rand.N(bound)
}

// patience follows the holder a waiter sees.
type patience struct {
	holder string    // the holder's token
	since  time.Time // when the waiter first saw it
	seen   bool
}

// watch records the holder seen at now. It reports whether the holder is a
// new one, which restarts the patience.
func (p *patience) watch(holder string, now time.Time) bool {
	if p.seen && holder == p.holder {
		return false
	}
	*p = patience{holder: holder, since: now, seen: true}
	return true
}

// age is how long the current holder has been seen.
func (p *patience) age(now time.Time) time.Duration {
	return now.Sub(p.since)
}
