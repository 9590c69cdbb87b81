package uncomplicated

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// The wait loop of the RWMutex and the Semaphore. It is the Mutex's (try,
// sleep a random time below the tick, try again) with two differences.
// A waiter is blocked by several holders, whose tokens each attempt
// returns, so its patience follows a crowd. And there is no queue: a
// release wakes every waiter of the lock, and each tries again.

// A crowd is the patience of a waiter blocked by several holders. For an
// RWMutex's writer the crowd is stale when the same set of blockers has
// been seen for the whole timeout: any change restarts the patience. For
// a Semaphore's waiter each holder has its own patience: one that keeps
// its token for the whole timeout is stale while the others come and go.
type crowd struct {
	each  bool                 // each holder has its own patience
	seen  map[string]time.Time // each blocker, and since when it is seen
	set   string               // the blockers, sorted and joined
	since time.Time            // when set last changed
}

// watch records the blockers seen at now, and reports whether one of them
// is new. No blockers (a reader behind waiting writers) counts as busy:
// the patience restarts.
func (p *crowd) watch(blockers []string, now time.Time) (news bool) {
	seen := make(map[string]time.Time, len(blockers))
	for _, b := range blockers {
		if t, ok := p.seen[b]; ok {
			seen[b] = t
		} else {
			seen[b] = now
			news = true
		}
	}
	p.seen = seen
	if p.each {
		return news
	}
	set := strings.Join(slices.Sorted(maps.Keys(seen)), " ")
	if len(blockers) == 0 || set != p.set || p.since.IsZero() {
		p.since = now
	}
	p.set = set
	return news
}

// stale returns the blockers whose patience has run out at now (the whole
// set, or the holder seen longest), if any, and the age of the patience:
// how long the set, or that holder, has been seen.
func (p *crowd) stale(now time.Time, timeout time.Duration) ([]string, time.Duration) {
	if !p.each {
		age := now.Sub(p.since)
		if len(p.seen) == 0 || age < timeout {
			return nil, age
		}
		return strings.Fields(p.set), age
	}
	oldest, since := "", now
	for b, t := range p.seen {
		if oldest == "" || t.Before(since) || t.Equal(since) && b < oldest {
			oldest, since = b, t
		}
	}
	if age := now.Sub(since); oldest != "" && age >= timeout {
		return []string{oldest}, age
	}
	return nil, now.Sub(since)
}

// restart makes every blocker new: after a failed take-over the waiter
// watches whoever won it for a whole timeout.
func (p *crowd) restart(now time.Time) {
	for b := range p.seen {
		p.seen[b] = now
	}
	p.since = now
}

// An acquisition is one Lock, RLock or Acquire in the wait loop.
type acquisition struct {
	b       *base
	what    string // "write lock", "read lock" or "permit", for logs
	channel string // where releases wake its waiters
	token   string
	each    bool // a Semaphore's: each holder has its own patience
	// try makes one attempt; with stale blockers, a take-over of them.
	try func(ctx context.Context, stale []string) (grant, error)
	// leave, if set, undoes in the background what the attempts left when
	// the acquisition fails: a waiting writer holds readers back.
	leave func(ctx context.Context)
}

// wait tries until the lock is acquired, ctx ends, the Client closes or
// the stale policy fails it. It returns the grant and when the attempt
// that got it was sent: the lease began at or after that.
func (a *acquisition) wait(ctx context.Context, obs settle.Observer) (g grant, from time.Time, err error) {
	b := a.b
	var l *listener
	if wk := b.c.wakeups(true); wk != nil {
		l = wk.listen(a.channel, a.token, true)
	}
	defer func() {
		if l != nil {
			l.close(nil)
		}
		if err != nil && a.leave != nil {
			a.leave(ctx)
		}
	}()
	p := crowd{each: a.each}
	for {
		drainWake(l)
		from = b.cfg.clock.Now()
		g, err := a.try(ctx, nil)
		if loading(err) { // a restarted Redis reading its data: not a failure yet
			if _, err := b.nap(ctx, obs, l, a.token, false, b.cfg.tick()); err != nil {
				return grant{}, from, err
			}
			continue
		}
		if err != nil || g.ok {
			return g, from, b.gaveUp(ctx, err)
		}
		if l == nil {
			if wk := b.c.wakeups(false); wk != nil {
				l = wk.listen(a.channel, a.token, false)
			}
		}
		now := b.cfg.clock.Now()
		if p.watch(g.blockers(), now) {
			b.logWaiting(ctx, a.what)
		}
		stale, age := p.stale(now, b.cfg.timeout)
		left := b.cfg.timeout - age
		if stale != nil {
			if b.cfg.policy == Fail {
				return grant{}, from, b.staleError(ctx, a.what, "the same holders", age)
			}
			from = b.cfg.clock.Now()
			if g, err = a.try(ctx, stale); err != nil || g.ok {
				if err == nil {
					b.logTakeOver(ctx, a.what, age, g.fence, len(stale))
				}
				return g, from, b.gaveUp(ctx, err)
			}
			// Another waiter took over first, or the blockers changed.
			p.watch(g.blockers(), now)
			if p.each {
				// The holders still there stay stale: try them again
				// after a tick, as another waiter took the one we chose.
				left = b.cfg.tick()
			} else {
				p.restart(now)
				left = b.cfg.timeout
			}
		}
		if _, err := b.nap(ctx, obs, l, a.token, l != nil && !listening(l), left); err != nil {
			return grant{}, from, err
		}
	}
}

// drainWake drops a wake-up that came before an attempt.
func drainWake(l *listener) {
	if l == nil {
		return
	}
	select {
	case <-l.wake:
	default:
	}
}

func listening(l *listener) bool {
	confirmed, _, _, _ := l.state()
	return confirmed
}

// attempt runs an acquiring script. When its reply is lost after it may
// have run, it runs it again with the same arguments: the scripts reply
// the hold when the token has it already. When that fails too, or the
// lost reply did not come in time (see askAgain), undo gives back in the
// background whatever the token may hold.
func (b *base) attempt(ctx context.Context, s *script, keys []any, undo func(), args ...any) (grant, error) {
	g, unknown, err := b.grantOf(ctx, s, keys, args...)
	if !unknown {
		return g, err
	}
	if !askAgain(err) {
		undo()
		return grant{}, err
	}
	g, _, again := b.grantOf(ctx, s, keys, args...)
	if again == nil {
		return g, nil
	}
	undo()
	return grant{}, errors.Join(err, again)
}

// grantOf runs s and reads its grant; unknown reports a reply lost after
// the script may have run.
func (b *base) grantOf(ctx context.Context, s *script, keys []any, args ...any) (g grant, unknown bool, err error) {
	reply, sent, err := b.eval(ctx, s, keys, args...)
	if err == nil {
		if g, err = parseGrant(reply); err == nil {
			return g, false, nil
		}
	}
	unknown = mayHaveRun(sent, err)
	return grant{}, unknown, b.redisError(ctx, err)
}
