package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Clean-ups are the releases a Client makes apart from any caller: of a
// waiter that left the queue, of an attempt whose reply was lost or came
// after its caller had left, of a hand-off that reached a waiter that had
// gone, of a hold whose release the caller's ctx cut short. A Client runs
// them on at most maxCleaners goroutines of its own, one lock at a time
// each: a lock's clean-ups reach Redis one after the other, in the order
// they were asked for, and those of the waiters that left one lock since
// the last go in one script call. So callers that give up by the thousand
// cost a queue of clean-ups as long as the locks they left, not a
// goroutine, a connection or a call each.

// maxCleaners bounds the goroutines that run a Client's clean-ups.
const maxCleaners = 4

// maxLeaving bounds the tokens of waiters that one call takes out of a
// lock's queue; more go in the next.
const maxLeaving = 256

// A cleanup is one release in the background: the release script of a
// kind of hold on a lock's keys, with its ARGV.
type cleanup struct {
	b      *base
	script *driver.Script
	keys   []string
	// args are the release's ARGV: "q" and the tokens of waiters that
	// leave, each leaving the queue and releasing what a hand-off gave it
	// (see wire.AttemptArgs), or "" and a hold's values.
	args []string
}

// leaving reports whether x takes waiters out of the queue, which one call
// can do for many.
func (x cleanup) leaving() bool { return x.args[0] == wire.OpLeave }

// run makes the release, bounded by ctx and by link.DetachedTimeout; a driver
// that panics ends the clean-up, not the process.
func (x cleanup) run(ctx context.Context) {
	defer func() { _ = recover() }()
	ctx, cancel := context.WithTimeout(ctx, link.DetachedTimeout)
	defer cancel()
	_, _, _ = x.b.eval(ctx, x.script, x.keys, wire.Anys(x.args)...)
}

// A cleaner is a Client's queue of clean-ups.
type cleaner struct {
	mu      sync.Mutex           // guards the fields below
	pending map[string][]cleanup // by lock (its first key), oldest first
	busy    map[string]bool      // the locks whose clean-ups a goroutine makes now
	ready   []string             // the locks with clean-ups pending and none under way, oldest first
	running int                  // the goroutines making clean-ups
}

// clean makes x in the background, after the clean-ups of the same lock
// asked for before it. Once Close has begun, it makes it in the caller's
// goroutine instead, bounded by the deadline of ctx as Do's release is.
func (c *Client) clean(ctx context.Context, x cleanup) {
	if c.cleaner.add(c, x) {
		return
	}
	rctx, cancel := releaseContext(ctx)
	defer cancel()
	x.run(rctx)
}

// lateCleanup is how long after a call that its driver dropped when its
// ctx ended (see driver.KeepsConnectionsOnCancel) its clean-up is made
// once more: what the driver had sent runs in Redis within it, or never.
const lateCleanup = time.Second

// cleanLater makes x once more, lateCleanup from now (see base.attempt):
// a grant that the dropped attempt made after x first ran is given back
// then, rather than held for its lease. Close waits for it as for the
// other clean-ups.
func (c *Client) cleanLater(x cleanup) {
	if !c.backgroundStarts() {
		return
	}
	clk := c.settings().Clock
	done := func() {}
	if obs, ok := clk.(settle.Observer); ok {
		done = obs.Due(clk.Now().Add(lateCleanup))
	}
	clk.AfterFunc(lateCleanup, func() {
		defer c.cleanups.Done()
		defer done()
		c.clean(c.ctx, x)
	})
}

// add queues x, starting a goroutine for it if fewer than maxCleaners
// run; it reports false, having queued nothing, once Close has begun.
func (cl *cleaner) add(c *Client, x cleanup) bool {
	if c.closed() { // its goroutines may be cancelled before they reach it
		return false
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	lock := x.keys[0]
	q, queued := cl.pending[lock]
	if !queued && !cl.busy[lock] {
		cl.ready = append(cl.ready, lock)
	}
	if cl.pending == nil {
		cl.pending, cl.busy = map[string][]cleanup{}, map[string]bool{}
	}
	cl.pending[lock] = append(q, x)
	if cl.running < maxCleaners && len(cl.ready) > 0 {
		if !c.backgroundStarts() {
			if cl.running > 0 { // one of them will make it
				return true
			}
			cl.pending[lock] = q
			if !queued {
				delete(cl.pending, lock)
				cl.ready = slices.DeleteFunc(cl.ready, func(l string) bool { return l == lock })
			}
			return false
		}
		cl.running++
		go cl.work(c)
	}
	return true
}

// work makes the clean-ups of the ready locks until none is left.
func (cl *cleaner) work(c *Client) {
	defer c.cleanups.Done()
	for {
		cl.mu.Lock()
		if len(cl.ready) == 0 {
			cl.running--
			cl.mu.Unlock()
			return
		}
		lock := cl.ready[0]
		cl.ready = cl.ready[1:]
		batch := cl.pending[lock]
		delete(cl.pending, lock)
		cl.busy[lock] = true
		cl.mu.Unlock()

		for _, x := range coalesce(batch) {
			x.run(c.cleanCtx)
		}

		cl.mu.Lock()
		delete(cl.busy, lock)
		if _, more := cl.pending[lock]; more {
			cl.ready = append(cl.ready, lock)
		}
		cl.mu.Unlock()
	}
}

// coalesce merges the leaves of one lock's batch that follow each other
// and share a script into calls of up to maxLeaving tokens, each token
// once; other clean-ups stay as they are, in their order. A Semaphore's
// are not merged: its release hands on one permit, however many the
// tokens held.
func coalesce(batch []cleanup) []cleanup {
	out := make([]cleanup, 0, len(batch))
	for _, x := range batch {
		last := len(out) - 1
		if last >= 0 && x.leaving() && out[last].leaving() && out[last].script == x.script &&
			x.script != lua.SemRelease && len(out[last].args) <= maxLeaving {
			for _, t := range x.args[1:] {
				if !slices.Contains(out[last].args[1:], t) {
					out[last].args = append(out[last].args, t)
				}
			}
			continue
		}
		x.args = slices.Clone(x.args)
		out = append(out, x)
	}
	return out
}
