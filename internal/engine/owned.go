package engine

import (
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// A Client knows its own tokens. Each token carries the ID of the Client
// that made it (see holderToken), and the Client keeps the tokens that its
// waiters and holds may have in Redis. A token of this Client that none of
// them owns is an orphan: a release that never reached Redis, or an
// acquisition whose reply was lost. A waiter that finds an orphan holding
// its lock releases it at once (see waiter.releaseOrphans), rather than
// wait for its lease or its timeout.
//
// It also remembers the holds it released, for as long as their leases
// would have lasted, up to maxReleased of them: a failover to a replica
// that had not yet received a release, or the Refresh before it, brings
// the hold back on the new master. When the restart watch sees a new
// master, it releases those of them that the new master still has (see
// restartWatch.rerelease); a release that failed, or found the hold gone
// (it may have met a node without the lock), it repeats at its next
// reading.

// maxReleased bounds the releases a Client remembers: about 150 bytes
// each with their tokens, so 600 KB at most. A variable for the tests.
var maxReleased = 4096

// owned is what a Client knows of its tokens.
type owned struct {
	mu sync.Mutex // guards the fields below
	// tokens counts, by token, the waiters and holds that may have it in
	// Redis.
	tokens map[string]int
	// released are the releases to repeat on a new master: a ring, whose
	// oldest is at index oldest.
	released []releaseRecord
	oldest   int
}

// A releaseRecord is a hold given back, as the restart watch may repeat it.
type releaseRecord struct {
	kind   *holdKind
	keys   []string // the lock's keys, shared with its locks
	tokens []string // the hold's tokens, and those its last Refreshes replaced, as its release passes them (see hold.inKey)
	// failed is set when the release did not surely reach Redis, or found
	// the hold gone, as a node without the lock would: the watch repeats
	// it at its next reading, whatever the run_id.
	failed bool
	// until is when the hold's lease would have ended, by the Client's
	// clock; zero when it had none.
	until time.Time
}

// own records that a waiter or a hold may have tokens in Redis.
func (o *owned) own(tokens ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tokens == nil {
		o.tokens = map[string]int{}
	}
	for _, t := range tokens {
		o.tokens[t]++
	}
}

// disown records that a waiter or a hold no longer has tokens.
func (o *owned) disown(tokens ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range tokens {
		if o.tokens[t] <= 1 {
			delete(o.tokens, t)
		} else {
			o.tokens[t]--
		}
	}
}

// orphan reports whether token is one of the Client with id that no waiter
// or hold of the Client owns.
func (o *owned) orphan(id, token string) bool {
	if wire.ParseToken(token).Client != id {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tokens[token] == 0
}

// remember records a release, to repeat on a new master until the hold's
// lease would have ended; at maxReleased, it takes the place of the
// oldest.
func (o *owned) remember(r releaseRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.released) < maxReleased {
		o.released = append(o.released, r)
		return
	}
	o.released[o.oldest] = r
	o.oldest = (o.oldest + 1) % len(o.released)
}

// releases returns the releases to repeat at now, oldest first, dropping
// those whose lease has ended.
func (o *owned) releases(now time.Time) []releaseRecord {
	return o.keep(func(r releaseRecord) bool { return r.until.IsZero() || now.Before(r.until) })
}

// forget drops the releases done.
func (o *owned) forget(done []releaseRecord) {
	if len(done) == 0 {
		return
	}
	gone := make(map[string]bool, len(done))
	for _, r := range done {
		gone[r.tokens[0]] = true
	}
	o.keep(func(r releaseRecord) bool { return !gone[r.tokens[0]] })
}

// keep keeps the releases that keep reports true of, oldest first, and
// returns a copy of them.
func (o *owned) keep(keep func(releaseRecord) bool) []releaseRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	kept := make([]releaseRecord, 0, len(o.released))
	for i := range o.released {
		if r := o.released[(o.oldest+i)%len(o.released)]; keep(r) {
			kept = append(kept, r)
		}
	}
	o.released, o.oldest = kept, 0
	return append([]releaseRecord(nil), kept...)
}
