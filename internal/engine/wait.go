package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
	"github.com/uncomplicated-mutex/uncomplicated/internal/trace"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// The wait loop, the same for every lock: try at once; while the lock is
// taken, sleep a random time below the tick and try again. Patience
// follows the blockers: a new token restarts it, and blockers seen for
// their patience are stale (see patience). Once the Client listens for the
// lock, the waiter joins its queue, and a release hands it the lock, for a
// claim (see Claims, in hold.go), and wakes it; the ticks go on all the same, so
// that a waiter never depends on wake-ups.

// acquire acquires c's hold: in this process first, taking sem, if not
// nil, and then in Redis. It returns the new hold, or an error wrapping
// ErrNotObtained and its cause (see gaveUp). It tells o how it went.
func (b *base) acquire(ctx context.Context, c *spec, sem chan struct{}, o *observing) (h *hold, err error) {
	defer func() {
		if h == nil {
			o.failed(err)
		}
	}()
	if err := b.open(ctx); err != nil {
		return nil, err
	}
	obs, _ := b.cfg.Clock.(settle.Observer)
	if obs != nil {
		obs.Waiting(1)
		defer obs.Waiting(-1)
	}
	if sem != nil {
		if err := b.enter(ctx, obs, sem, o); err != nil {
			return nil, err
		}
		defer func() {
			if h == nil { // also when a driver or logger panics
				<-sem
			}
		}()
	}
	return b.wait(ctx, obs, c, o)
}

// try makes one attempt at c's hold, and never waits nor takes over. It
// returns nil and no error when the lock is taken, here (sem) or in Redis.
// It tells o how it went.
func (b *base) try(ctx context.Context, c *spec, sem chan struct{}, o *observing) (h *hold, err error) {
	defer func() {
		if h == nil {
			o.failed(err)
		}
	}()
	if err := b.open(ctx); err != nil {
		return nil, err
	}
	if sem != nil {
		select {
		case sem <- struct{}{}:
		default:
			return nil, nil
		}
		defer func() {
			if h == nil {
				<-sem
			}
		}()
	}
	from := b.cfg.Clock.Now()
	token := b.holderToken(from)
	b.c.tokens.own(token)
	defer func() {
		if h == nil {
			b.c.tokens.disown(token)
		}
	}()
	args := wire.AttemptArgs{Token: token, Lease: b.cfg.LeaseMillis(), Form: c.args, Permits: c.permits}
	g, _, err := b.attempt(ctx, c.acquire, c.keys, c.kind, args)
	if err != nil {
		b.logFailure(ctx, err)
		return nil, b.gaveUp(ctx, err, "")
	}
	if !g.OK {
		return nil, nil
	}
	return b.granted(ctx, c, token, g, from, observe.Acquired, o)
}

// enter takes sem, waiting while another goroutine of this process holds
// the lock (the Mutex, or the RWMutex as a writer).
func (b *base) enter(ctx context.Context, obs settle.Observer, sem chan struct{}, o *observing) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	o.waiting()
	if obs != nil {
		defer obs.Park(time.Time{}, "")() // no timer: only an Unlock wakes it
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return b.gaveUp(ctx, ctx.Err(), "busy: "+b.name+" held by another goroutine of this process")
	case <-b.c.done:
		return b.gaveUp(ctx, sentinel.ErrClosed, "")
	}
}

// open reports, as an acquisition's error, a closed Client or an ended
// ctx: redigo may still send on an ended ctx.
func (b *base) open(ctx context.Context) error {
	if b.c.closed() {
		return b.notObtained("client closed", sentinel.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return b.notObtained(err.Error(), err)
	}
	return nil
}

// wait acquires c's hold in Redis; this is the one wait loop.
func (b *base) wait(ctx context.Context, obs settle.Observer, c *spec, o *observing) (h *hold, err error) {
	w := waiter{b: b, c: c, token: b.holderToken(b.cfg.Clock.Now()), o: o}
	b.c.tokens.own(w.token)
	w.listenIfReady()
	defer func() { w.end(ctx, err == nil) }()
	p := patience{each: c.each, own: b.cfg.Timeout}
	var failing error // what Redis last answered, while it fails
	for {
		w.drain()
		from := b.cfg.Clock.Now()
		g, err := w.attempt(ctx, nil)
		if err != nil && b.ctxErr(ctx) == nil && link.Transient(err) {
			// Redis restarting, failing over or out of reach: try again on
			// the next tick.
			b.logFailed(ctx, err)
			b.unreached(ctx, err)
			failing = err
			if _, err := w.sleep(ctx, obs, b.cfg.Tick()); err != nil {
				return nil, b.failing(ctx, err, failing)
			}
			continue
		}
		if err != nil {
			b.logFailed(ctx, err)
			if failing != nil && b.ctxErr(ctx) != nil {
				return nil, b.failing(ctx, err, failing)
			}
			return nil, b.gaveUp(ctx, err, "")
		}
		failing = nil
		if g.OK {
			return b.granted(ctx, c, w.token, g, from, observe.Acquired, o)
		}
		w.blocked(g)
		if w.releaseOrphans(ctx, g) { // try again at once
			continue
		}
		now := b.cfg.Clock.Now()
		if p.watch(g.Blockers(), now) {
			b.logWaiting(ctx, c.kind.what)
		}
		stale, age, left := p.stale(now)
		if stale != nil {
			if !b.cfg.TakeOver {
				return nil, b.staleError(ctx, c.kind.what, c.who, age)
			}
			from = b.cfg.Clock.Now()
			if g, err = w.attempt(ctx, stale); err != nil {
				b.logFailed(ctx, err)
				return nil, b.gaveUp(ctx, err, "")
			}
			if g.OK {
				b.logTakeOver(ctx, c.kind.what, age, g.Fence, len(stale))
				return b.granted(ctx, c, w.token, g, from, observe.TakenOver, o)
			}
			// Another waiter took over first, or the blockers changed.
			w.blocked(g)
			left = p.overtaken(g.Blockers(), now, b.cfg.Tick())
		}
		wu, err := w.sleep(ctx, obs, left)
		if err != nil {
			return nil, b.gaveUp(ctx, err, w.busy(&p))
		}
		if w.handedOver(wu, from) {
			trace.Stamp(trace.Woken, b.name, w.token)
			b.c.slack.taken()
			h, err := b.granted(ctx, c, w.token, wire.Grant{OK: true, Fence: wu.Fence}, from, observe.HandedOff, o)
			trace.Stamp(trace.Returned, b.name, w.token)
			return h, err
		}
		w.heard = w.heard || wu.Attempt > 0
	}
}

// A waiter is one acquisition in the wait loop.
type waiter struct {
	b       *base
	c       *spec
	token   string
	o       *observing
	l       *link.Listener // its wake-ups; nil until it first finds the lock taken
	inQueue bool           // an attempt may have put its entry in the queue
	// entries counts its attempts that may have written its queue entry,
	// which carries the number of the one that wrote it (see wire.QueueEntry).
	entries uint64
	// attempts counts those that found the lock taken, each of which
	// may have counted it as waiting (an RWMutex's waiting writers).
	attempts int
	blockers []string        // what the last attempt found blocking it
	orphans  map[string]bool // the orphans it released
	// cut is set when the expiry its last attempt wrote (of its queue
	// entry, and of its mark among an RWMutex's waiting writers) was cut
	// to what was left of its caller's ctx (see entryExpiry): once that ctx
	// has ended by its deadline, Redis has forgotten both by itself.
	cut bool
	// heard is set when a hand-off reached it that it did not take, until
	// an attempt tells whether the lock is its own.
	heard bool
}

// attempt makes one attempt, or with stale blockers a take-over. When its
// token was given back (see base.attempt), the waiter goes on as a new one
// (see again).
func (w *waiter) attempt(ctx context.Context, stale []string) (wire.Grant, error) {
	s, op, entry := w.c.acquire, w.queue(), ""
	if stale != nil {
		s, op = w.c.takeOver, w.queued()
	}
	var expiry time.Duration
	expiry, w.cut = w.b.entryExpiry(ctx, op != "")
	if op != "" {
		entry = w.nextEntry(expiry)
	}
	args := wire.AttemptArgs{Token: w.token, Lease: w.b.cfg.LeaseMillis(), Entry: entry, Op: op,
		Expiry: expiry.Milliseconds(), Form: w.c.args, Stale: stale, Permits: w.c.permits}
	g, released, err := w.b.attempt(ctx, s, w.c.keys, w.c.kind, args)
	if released {
		w.again(ctx)
	} else if err == nil {
		w.heard = false
	}
	return g, err
}

// again makes w a new waiter, with a token of its own, after an attempt
// whose token is released in the background (see base.attempt): that
// release must not free a later grant. The old waiter leaves as one that
// gives up does.
func (w *waiter) again(ctx context.Context) {
	w.end(ctx, false)
	*w = waiter{b: w.b, c: w.c, token: w.b.holderToken(w.b.cfg.Clock.Now()), o: w.o, orphans: w.orphans}
	w.b.c.tokens.own(w.token)
	w.listenIfReady()
}

// blocked records what an attempt that found the lock taken saw, and
// starts listening for hand-offs, so that a later attempt can join the
// queue.
func (w *waiter) blocked(g wire.Grant) {
	w.o.waiting()
	w.attempts++
	w.blockers = g.Blockers()
	if w.l != nil {
		return
	}
	if wk := w.b.c.wakeups(false); wk != nil {
		w.l = wk.Listen(w.c.channel, w.token, false)
	}
}

// handedOver reports whether wu, what the waiter's sleep heard, is a
// hand-off it can trust, and if so takes the waiter out of the queue.
//
// A hand-off that took the entry of an attempt before the last came
// before the last attempt, which found the lock taken: its claim ended
// unheard (the process paused, or the listening connection lagged). One
// that came after the last attempt ran has a claim that ends no sooner
// than from + claim. The waiter trusts it only until from + claim/2, so
// that half a claim remains for its Client to take it (see Claims, in hold.go);
// later (the waiter was paused, or its last attempt was long ago, or the
// attempt's reply was held up, and the message with it), the next attempt,
// made at once, tells whether the lock is ours, and restarts the lease if
// it is.
func (w *waiter) handedOver(wu wire.WakeUp, from time.Time) bool {
	if wu.Fence == 0 || wu.Attempt != w.entries || !w.b.cfg.Clock.Now().Before(from.Add(w.b.cfg.Claim()/2)) {
		return false
	}
	w.inQueue = false
	return true
}

// busy describes what the waiter last found holding the lock, for the
// error of a wait that ctx ended, as "busy: lock:x held by web-1:4121 for
// 3.2s" (how long by the holder's clock, or as long as the waiter saw it).
func (w *waiter) busy(p *patience) string {
	if w.attempts == 0 {
		return ""
	}
	what := "busy: " + w.b.name
	if len(w.blockers) == 0 {
		return what + ", with writers waiting first"
	}
	first := w.blockers[0]
	token, ok := wire.CutWriter(first)
	if !ok {
		token = first
	}
	t, now := wire.ParseToken(token), w.b.cfg.Clock.Now()
	if t.Label != "" {
		what += " held by " + t.Label
	} else {
		what += " held"
	}
	if n := len(w.blockers) - 1; n > 0 {
		what += " +" + strconv.Itoa(n)
	}
	held := now.Sub(p.seen[first].since)
	if !t.Since.IsZero() && !t.Since.After(now) {
		held = now.Sub(t.Since)
	}
	return what + " for " + roundShort(held).String()
}

// roundShort rounds d for a message: to the millisecond below a second,
// else to a tenth of a second.
func roundShort(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// listenIfReady listens at once if the Client already listens for the
// lock, so that the first attempt can join the queue.
func (w *waiter) listenIfReady() {
	if wk := w.b.c.wakeups(true); wk != nil {
		w.l = wk.Listen(w.c.channel, w.token, true)
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
	case wu := <-w.l.Wake:
		w.heard = w.heard || wu.Attempt > 0
	default:
	}
}

// nextEntry is the queue entry of the waiter's next attempt: its claim, not
// its lease, which a release gives it until it takes the lock, and the
// attempt's number.
func (w *waiter) nextEntry(expiry time.Duration) string {
	w.entries++
	return wire.QueueEntry(w.c.entry, w.b.cfg.Claim(), expiry, w.entries, w.c.channel)
}

// entryExpiry is the expiry an attempt under ctx writes: the waiter's, or
// what is left of ctx if less, less the time a hand-off takes to reach
// the waiter (a round trip to Redis, as the Client has seen them lately, a
// millisecond, and the Client's slack), and at least a millisecond: so
// Redis forgets a waiter whose caller gives up at its deadline by itself,
// and no release hands the lock to a waiter that could not take it in
// time. cut says whether it is ctx's; queued, whether the attempt writes
// an entry.
func (b *base) entryExpiry(ctx context.Context, queued bool) (d time.Duration, cut bool) {
	d = b.cfg.Expiry()
	left, ok := link.DeadlineLeft(ctx)
	if !ok {
		return d, false
	}
	left -= b.c.redis.RoundTrip() + time.Millisecond
	slack := b.c.slack.get()
	if queued && left > time.Millisecond && left-slack <= time.Millisecond {
		b.c.slack.taken() // a slack that keeps waiters out of the queue shrinks too
	}
	left -= slack
	if left < d {
		return max(left.Truncate(time.Millisecond), time.Millisecond), true
	}
	return d, false
}

// queue tells the attempt what to do with the entry (see wire.AttemptArgs).
func (w *waiter) queue() string {
	switch {
	case w.l != nil && w.listening():
		if w.inQueue {
			return wire.OpRejoin
		}
		w.inQueue = true
		return wire.OpJoin
	case w.inQueue:
		return wire.OpStay
	}
	return ""
}

func (w *waiter) listening() bool {
	confirmed, _, _, _ := w.l.State()
	return confirmed
}

// queued is the op of a take-over: leave the queue on success if in it.
func (w *waiter) queued() string {
	if w.inQueue {
		return wire.OpStay
	}
	return ""
}

// end stops listening and, unless the waiter got the lock, takes it out of
// the waiters and the queue, releasing the lock if a release has just
// handed it over. The Client remembers its token, so that a hand-off that
// reaches it after it left is released at once (see link.Wakeups.Deliver). A
// waiter whose ctx ended at its deadline, which its last attempt's expiry
// was cut to, leaves Redis nothing to take out: it costs no call, unless
// a hand-off reached it.
func (w *waiter) end(ctx context.Context, acquired bool) {
	if acquired {
		if w.l != nil {
			w.l.Close(nil)
		}
		return
	}
	defer w.b.c.tokens.disown(w.token) // after the leave is under way
	c, leave := w.b.c, w.b.giveBack(w.c.kind, w.c.keys, w.token)
	atDeadline := w.cut && errors.Is(w.b.ctxErr(ctx), context.DeadlineExceeded)
	handed := false
	if w.l != nil {
		var gone *link.LeftWaiter
		if w.inQueue { // what it needs, as again reuses w
			gone = &link.LeftWaiter{Release: func(ctx context.Context) { c.clean(ctx, leave) }}
			if atDeadline {
				gone.Late = c.slack.late
			}
		}
		handed = w.l.Close(gone)
	}
	switch {
	case handed || w.heard: // a hand-off it did not take
		if atDeadline {
			c.slack.late()
		}
	case w.attempts == 0 || !w.inQueue && w.c.kind != writerKind: // nothing of it in Redis
		return
	case atDeadline: // Redis forgot it
		return
	}
	c.clean(ctx, leave)
}

// sleep is nap for the waiter, which wakes when its subscription is
// confirmed until it is in the queue.
func (w *waiter) sleep(ctx context.Context, obs settle.Observer, left time.Duration) (wire.WakeUp, error) {
	return w.b.sleepFor(ctx, obs, w.l, w.token, !w.inQueue, left)
}

// sleepFor waits a random time below the tick, but not past left, the rest of
// the waiter's patience, so that staleness is judged exactly at the timeout.
// It returns early with what l hears (a hand-off to token); with ready (a
// waiter not yet in the queue), at once when l's subscription is
// confirmed, or when the listening connection fails while the waiter waits
// for that; without (a waiter in the queue), at once when l's subscription
// is confirmed anew after the listening connection failed or moved (see
// wakeups.check), so that the waiter rejoins the queue on the node where
// releases now run rather than on its next tick. It returns with ctx's
// error when ctx ends, and ErrClosed when the Client closes.
func (b *base) sleepFor(ctx context.Context, obs settle.Observer, l *link.Listener, token string, ready bool, left time.Duration) (wire.WakeUp, error) {
	d := min(b.cfg.Sleep(), left)
	t := b.cfg.Clock.Timer(d)
	defer t.Stop()
	var wake <-chan wire.WakeUp
	var confirmed, changed <-chan struct{}
	coming, queued := false, false
	if l != nil {
		wake = l.Wake
		isConfirmed, isComing, readyCh, changedCh := l.State()
		switch {
		case ready:
			coming, confirmed, changed = isComing, readyCh, changedCh
		case isConfirmed:
			queued, changed = true, changedCh
		default:
			confirmed = readyCh
		}
	}
	if obs != nil && !coming { // a confirmation on its way keeps the waiter active
		defer obs.Park(b.cfg.Clock.Now().Add(d), token)()
	}
	for {
		select {
		case <-t.C:
			return wire.WakeUp{}, nil
		case wu := <-wake:
			return wu, nil
		case <-confirmed:
			return wire.WakeUp{}, nil
		case <-changed:
			if !queued { // a failed connection: back to ticks, asleep
				return wire.WakeUp{}, nil
			}
			isConfirmed, _, readyCh, changedCh := l.State()
			if isConfirmed {
				changed = changedCh
			} else { // rejoin once the subscription is confirmed anew
				changed, confirmed = nil, readyCh
			}
		case <-ctx.Done():
			return wire.WakeUp{}, ctx.Err()
		case <-b.c.done:
			return wire.WakeUp{}, sentinel.ErrClosed
		}
	}
}

// releaseOrphans releases what the attempt that got g found blocking it
// that is an orphan of the waiter's Client (see owned), each token once,
// and reports whether it released any: the next attempt, made at once, may
// then find the lock free. A release compares and deletes that exact
// token, and hands the lock on as Unlock does.
func (w *waiter) releaseOrphans(ctx context.Context, g wire.Grant) bool {
	released := false
	for _, blocker := range g.Blockers() {
		token, writer := wire.CutWriter(blocker)
		kind := w.c.writer
		if !writer {
			token, kind = blocker, w.c.holder
		}
		if kind == nil || w.orphans[token] || !w.b.c.tokens.orphan(w.b.c.id, token) {
			continue
		}
		if w.orphans == nil {
			w.orphans = map[string]bool{}
		}
		w.orphans[token] = true
		reply, _, err := w.b.eval(ctx, kind.release, w.c.keys, "-", token)
		if err != nil {
			continue
		}
		if ok, next, err := wire.ParseRelease(reply); err == nil && ok {
			w.b.handedOff("", next)
			w.b.logOrphan(ctx, kind.what)
			released = true
		}
	}
	return released
}
