package uncomplicated

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// The wait loop: try at once; while the lock is held, sleep a random time
// below the tick and try again. Patience follows the holder's token: a new
// token restarts it, and one token seen for the whole timeout is stale.
// Once the Client listens for the lock, the waiter joins its queue, and a
// release hands it the lock and wakes it; the ticks go on all the same, so
// that a waiter never depends on wake-ups.

// wait acquires the lock in Redis for a caller that holds m.sem.
func (m *Mutex) wait(ctx context.Context, obs settle.Observer) (err error) {
	w := waiter{m: m, token: newToken()}
	w.listenIfReady()
	defer func() { w.end(ctx, err == nil) }()
	var p patience
	for {
		w.drain()
		queue := w.queue()
		from := m.cfg.clock.Now()
		out, err := m.acquire(ctx, w.token, w.entry, queue)
		if loading(err) { // a restarted Redis reading its data: not a failure yet
			if _, err := m.sleep(ctx, obs, &w, m.cfg.tick()); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return m.gaveUp(ctx, err)
		}
		if out.fence > 0 {
			m.acquired(ctx, w.token, out.fence, from, false)
			return nil
		}
		w.seen = max(w.seen, out.seen)
		w.listen()
		now := m.cfg.clock.Now()
		if p.watch(out.holder, now) {
			m.logWaiting(ctx, "lock")
		}
		if age := p.age(now); age >= m.cfg.timeout {
			if m.cfg.policy == Fail {
				return m.staleError(ctx, "lock", "one holder token", age)
			}
			out, err = m.takeOver(ctx, p.holder, w.token, w.queued())
			if err != nil {
				return m.gaveUp(ctx, err)
			}
			if out.fence > 0 {
				w.inQueue = false
				m.logTakeOver(ctx, "lock", age, out.fence, 1)
				m.acquired(ctx, w.token, out.fence, from, false)
				return nil
			}
			// Another waiter took it over first: a new holder to watch,
			// with patience restarted even if the reply names the same
			// token, which only a server that is not Redis gives.
			p = patience{holder: out.holder, since: now, seen: true}
			w.seen = max(w.seen, out.seen)
		}
		fence, err := m.sleep(ctx, obs, &w, m.cfg.timeout-p.age(now))
		if err != nil {
			return err
		}
		if fence > 0 && fence <= w.seen {
			// A release handed the lock to us before our last attempt,
			// which found it taken: that hand-off's lease ended unheard
			// (the process paused, or the listening connection lagged).
			// The next attempt tells whether the lock is ours.
			continue
		}
		if fence > 0 && m.outlived(from) {
			// Handed over after our last attempt ran (its fence is above
			// what that attempt saw), so the hand-off's lease ends no
			// sooner than from + lease; but that has passed: the message
			// came too late to be trusted (the attempt's reply was held
			// up, and the message with it). The next attempt tells, and
			// restarts the lease if the lock is still ours.
			continue
		}
		if fence > 0 {
			w.inQueue = false
			m.acquired(ctx, w.token, fence, from, true) // handed over after the last attempt began
			return nil
		}
	}
}

// A waiter is one Lock call in the wait loop.
type waiter struct {
	m       *Mutex
	token   string
	entry   string    // its queue entry, "<token> <lease> <channel>", once it may be in the queue
	l       *listener // its wake-ups; nil until it first finds the lock taken
	inQueue bool      // an attempt may have put entry in the queue
	seen    uint64    // the highest fence counter a failed attempt saw
}

// listenIfReady listens at once if the Client already listens for the
// lock, so that the first attempt can join the queue.
func (w *waiter) listenIfReady() {
	if wk := w.m.c.wakeups(true); wk != nil {
		w.l = wk.listen(w.m.channel, w.token, true)
	}
}

// listen starts listening for hand-offs after a failed attempt, so that a
// later attempt can join the queue.
func (w *waiter) listen() {
	if w.l != nil {
		return
	}
	if wk := w.m.c.wakeups(false); wk != nil {
		w.l = wk.listen(w.m.channel, w.token, false)
	}
}

// drain drops a hand-off that came before an attempt: the attempt finds
// the lock ours if it still is, while acting on a hand-off whose lease has
// since ended would make two holders.
func (w *waiter) drain() {
	if w.l == nil {
		return
	}
	select {
	case <-w.l.wake:
	default:
	}
}

// queue tells acquireScript what to do with the entry: join the queue once
// the subscription is confirmed ("q"), rejoin if a release skipped it while
// it was not listening ("r"), or only leave the queue on success ("x").
func (w *waiter) queue() string {
	switch {
	case w.l != nil && w.listening():
		if w.inQueue {
			return "r"
		}
		w.inQueue = true
		w.entry = w.token + " " + strconv.FormatInt(w.m.cfg.leaseMillis(), 10) + " " + w.m.channel
		return "q"
	case w.inQueue:
		return "x"
	}
	return ""
}

func (w *waiter) listening() bool {
	confirmed, _, _, _ := w.l.state()
	return confirmed
}

// queued is the entry for takeOverScript to remove, if in the queue.
func (w *waiter) queued() string {
	if w.inQueue {
		return w.entry
	}
	return ""
}

// end stops listening and, unless the waiter got the lock, takes it out of
// the queue, releasing the lock if a release has just handed it over. The
// Client remembers its token, so that a hand-off that reaches it after a
// failed leave is released too.
func (w *waiter) end(ctx context.Context, acquired bool) {
	left := w.inQueue && !acquired
	if w.l != nil {
		var gone *Mutex
		if left {
			gone = w.m
		}
		w.l.close(gone)
	}
	if left {
		w.m.background(ctx, leaveScript, w.m.keys[:], w.entry, w.token)
	}
}

// sleep is nap for a waiter of the Mutex, which waits for its
// subscription to be confirmed until it is in the queue.
func (m *Mutex) sleep(ctx context.Context, obs settle.Observer, w *waiter, left time.Duration) (uint64, error) {
	return m.nap(ctx, obs, w.l, w.token, !w.inQueue, left)
}

// nap waits a random time below the tick, but not past left, the rest of
// the waiter's patience, so that staleness is judged exactly at the timeout.
// It returns early with what l hears (the fence of a hand-off to token, or
// 0 for a wake-up), and, with ready, at once when l's subscription is
// confirmed, or when the listening connection fails while the waiter waits
// for that; with an error when ctx ends or the Client closes.
func (b *base) nap(ctx context.Context, obs settle.Observer, l *listener, token string, ready bool, left time.Duration) (uint64, error) {
	d := min(jitter(b.cfg.tick()), left)
	t := b.cfg.clock.Timer(d)
	defer t.Stop()
	var wake <-chan uint64
	var confirmed, changed <-chan struct{}
	coming := false
	if l != nil {
		wake = l.wake
		if ready {
			_, coming, confirmed, changed = l.state()
		}
	}
	if obs != nil && !coming { // a confirmation on its way keeps the waiter active
		defer obs.Park(b.cfg.clock.Now().Add(d), token)()
	}
	select {
	case <-t.C:
		return 0, nil
	case fence := <-wake:
		return fence, nil
	case <-confirmed:
		return 0, nil
	case <-changed: // a failed connection: back to ticks, asleep
		return 0, nil
	case <-ctx.Done():
		return 0, b.notObtained(ctx.Err().Error(), ctx.Err())
	case <-b.c.done:
		return 0, b.notObtained("client closed", ErrClosed)
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
