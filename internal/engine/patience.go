package engine

import (
	"maps"
	"slices"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// A patience is a waiter's judgement of what blocks it. A holder is stuck
// once it has kept one token for its own timeout, or for the waiter's if
// that is longer: each token states its holder's timeout (see
// holderToken), so waiters and holders with different timeouts agree on
// who is stuck. For a Mutex, and an RWMutex, the blockers are stuck when
// the same set of them has been seen for the longest patience of its
// members: any change restarts it. For a Semaphore's waiter each holder
// has its own patience: one that keeps its token long enough is stuck
// while the others come and go.
type patience struct {
	each  bool          // each holder has its own patience
	own   time.Duration // the waiter's timeout
	seen  map[string]seenBlocker
	set   []string  // the blockers, sorted
	since time.Time // when set last changed
}

// A seenBlocker is a blocker as the waiter watches it.
type seenBlocker struct {
	since time.Time     // when the waiter first saw it
	limit time.Duration // how long it may keep its token: its patience
}

// watch records the blockers seen at now, and reports whether one of them
// is new. No blockers (a reader behind waiting writers) counts as busy:
// the patience restarts.
func (p *patience) watch(blockers []string, now time.Time) (news bool) {
	seen := make(map[string]seenBlocker, len(blockers))
	for _, b := range blockers {
		if s, ok := p.seen[b]; ok {
			seen[b] = s
		} else {
			seen[b] = seenBlocker{since: now, limit: p.of(b)}
			news = true
		}
	}
	p.seen = seen
	if p.each {
		return news
	}
	set := slices.Sorted(maps.Keys(seen))
	if len(blockers) == 0 || !slices.Equal(set, p.set) || p.since.IsZero() {
		p.since = now
	}
	p.set = set
	return news
}

// of is the patience of one blocker: the larger of the waiter's timeout
// and the timeout its token states.
func (p *patience) of(blocker string) time.Duration {
	if w, ok := wire.CutWriter(blocker); ok {
		blocker = w
	}
	return max(p.own, wire.ParseToken(blocker).Timeout)
}

// stale returns the blockers that are stuck at now (the whole set, or the
// holder seen longest of those stuck), if any; the age of the patience
// (how long the set, or that holder, has been seen); and how long until
// the next blocker would be stuck, 0 when some are.
func (p *patience) stale(now time.Time) (stale []string, age, left time.Duration) {
	if !p.each {
		age = now.Sub(p.since)
		limit := p.own
		for _, s := range p.seen {
			limit = max(limit, s.limit)
		}
		if len(p.seen) == 0 || age < limit {
			return nil, age, limit - age
		}
		return p.set, age, 0
	}
	oldest, since := "", now
	left = p.own
	for b, s := range p.seen {
		if l := s.since.Add(s.limit).Sub(now); l > 0 {
			left = min(left, l)
			continue
		}
		if oldest == "" || s.since.Before(since) || s.since.Equal(since) && b < oldest {
			oldest, since = b, s.since
		}
	}
	if oldest == "" {
		return nil, p.longest(now), left
	}
	return []string{oldest}, now.Sub(since), 0
}

// longest is how long the blocker seen longest has been seen.
func (p *patience) longest(now time.Time) time.Duration {
	var age time.Duration
	for _, s := range p.seen {
		age = max(age, now.Sub(s.since))
	}
	return age
}

// overtaken follows the blockers after a take-over failed at now, and
// returns how long to wait before judging them again. The holders of a
// Semaphore still there stay stale: they are tried again after a tick, as
// another waiter took the one chosen. Otherwise every blocker counts as
// new, even one the waiter saw before (which only a server that is not
// Redis replies), and the waiter watches whoever won the take-over for a
// whole patience.
func (p *patience) overtaken(blockers []string, now time.Time, tick time.Duration) time.Duration {
	p.watch(blockers, now)
	if p.each {
		return tick
	}
	p.restart(now)
	_, _, left := p.stale(now)
	return left
}

// restart makes every blocker new.
func (p *patience) restart(now time.Time) {
	for b, s := range p.seen {
		s.since = now
		p.seen[b] = s
	}
	p.since = now
}
