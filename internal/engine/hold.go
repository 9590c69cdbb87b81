package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
	"github.com/uncomplicated-mutex/uncomplicated/internal/trace"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// A hold is one acquisition of a lock: of a Mutex, of an RWMutex as its
// writer or one of its readers, or of a Semaphore's permit. It has its
// tokens, lease and fence, and the scripts that renew it, release it and
// ask whether Redis still has it. A hold serves one acquisition; a Mutex
// makes a new one each time it is locked.
//
// A lease lock can be lost while its holder still runs: the lease ends
// during a pause, a waiter takes over a holder that was only slow, or Redis
// forgets the key (an eviction, a restart without persistence). A hold
// learns it when Refresh, Held or a release finds another token or none,
// when auto-refresh cannot renew the lease before it ends, or when the
// Client sees Redis restart; its Lost channel is then closed.
type hold struct {
	b    *base
	kind *holdKind
	keys []string // the lock's keys, as its scripts take them
	// channel is its Client's wake-up channel for the lock: a release
	// passes it, and hands the lock to a waiter of the same Client in its
	// reply (see handedOff).
	channel string
	// watch is its place among the holds its Client's restart watch
	// checks, guarded by the watch's mu.
	watch watchLink
	fence uint64    // 0 for a reader
	since time.Time // when Redis granted it, as far as the holder knows
	// quick is set when the hold took the lock free, which nobody has
	// likely queued for since: it releases with its kind's quickRelease,
	// and with release only when a waiter has (see internal/lua/queued.lua).
	quick bool
	// op holds a value while Refresh, release or verify talks to Redis, so
	// that they never interleave; unlike a sync.Mutex, waiting for it ends
	// with ctx.
	op chan struct{}

	mu sync.Mutex // guards the fields below
	// tokens are those Redis may hold, newest first: one, or more after a
	// Refresh whose reply was lost; nil once released. past are the last
	// tokens that Refreshes replaced, which a failover to a replica that
	// missed a Refresh would bring back (see owned).
	tokens []string
	past   []string
	lost   *signal   // closed when the hold is found lost; made when asked for
	from   time.Time // the current lease began at or after this instant
	// lease is how long the current lease lasts from from: the lock's, or
	// for a hold that a release handed over, until it is taken, its claim.
	lease time.Duration
	// claimed is set while the hold's lease is a hand-off's claim, which
	// its holder has not yet taken (see Claims, below); pendingTake is
	// then the pending take, if any.
	claimed     bool
	pendingTake *claimTake
	// obs hears of the hold's loss and release; nil without an Observer,
	// and until the acquisition succeeds (see granted).
	obs *observing
}

// inKey returns tokens as the lock's key holds them, so that a release
// compares them whole: for a hold whose key holds its holder (a Mutex's,
// an RWMutex's writer), each with the hold's fence (see wire.Fenced); the
// others' as they are.
func (h *hold) inKey(tokens []string) []string {
	if h.kind.set >= 0 || h.fence == 0 {
		return tokens
	}
	values := make([]string, len(tokens))
	for i, t := range tokens {
		values[i] = wire.Fenced(t, h.fence)
	}
	return values
}

// maxTokens bounds the tokens kept for one hold after lost Refresh replies.
const maxTokens = 4

// Refresh restarts the lease under a new token (see uncomplicated.Mutex.Refresh,
// and uncomplicated.Permit.Refresh).
func (h *hold) Refresh(ctx context.Context) error {
	if err := h.b.usable(ctx); err != nil {
		return err
	}
	_, err := h.refresh(ctx, false)
	return err
}

// replicate refreshes a new hold and waits for the replicas of
// WithReplicas to have it (see there); when they do not, it gives the hold
// back.
func (h *hold) replicate(ctx context.Context) error {
	acked, err := h.refresh(ctx, true)
	if err == nil && acked >= int64(h.b.cfg.Replicas) {
		return nil
	}
	why := fmt.Sprintf("%d of %d replicas acknowledged it within %v", acked, h.b.cfg.Replicas, h.b.cfg.ReplicaWait)
	if err != nil {
		why = "waiting for replicas: " + err.Error()
	}
	h.mu.Lock()
	args := append([]string{""}, h.inKey(h.tokens)...)
	h.mu.Unlock()
	if rerr := h.release(ctx, true); rerr != nil && !errors.Is(rerr, sentinel.ErrNotHeld) {
		h.b.c.clean(ctx, cleanup{b: h.b, script: h.kind.release, keys: h.keys, args: args}) // give it back all the same
	}
	return h.b.c.newError(h.b.name, sentinel.ErrNotObtained.Error()+": "+h.b.name+": "+why, err, sentinel.ErrNotObtained, sentinel.ErrNotReplicated)
}

// refresh is Refresh; with wait, it waits for replicas as replicate does.
func (h *hold) refresh(ctx context.Context, wait bool) (acked int64, err error) {
	if err := takeOp(ctx, h.op); err != nil {
		return 0, h.b.redisError(ctx, err)
	}
	defer func() { <-h.op }()
	h.mu.Lock()
	tokens := h.tokens
	h.mu.Unlock()
	if tokens == nil {
		return 0, h.b.notHeld(h.kind.what + " released")
	}
	next := h.b.tokenOf(wire.RefreshedSecret(tokens[0]), h.since)
	h.b.c.tokens.own(next) // before Redis may have it
	sent := h.b.cfg.Clock.Now()
	refresh := func(tokens []string) (bool, int64, error) {
		return h.b.flag(ctx, wait, h.kind.refresh, h.keys[:h.kind.refreshKeys], append([]any{h.b.cfg.LeaseMillis(), next}, wire.Anys(tokens)...)...)
	}
	ok, acked, err := refresh(tokens)
	if cur, adopted := h.adopt(ctx, tokens, !ok && err == nil); adopted {
		tokens = []string{cur}
		ok, acked, err = refresh(tokens)
	}
	if err = h.refreshed(ctx, tokens, next, sent, ok, err); err != nil {
		return 0, err
	}
	return acked, nil
}

// refreshed records what a Refresh of tokens to next, sent at sent, came
// to: ok and err as Redis replied.
func (h *hold) refreshed(ctx context.Context, tokens []string, next string, sent time.Time, ok bool, err error) error {
	found := false // the loss, logged once mu is unlocked
	defer func() {
		if found {
			h.logLost(ctx, "Refresh found it expired or taken over")
		}
	}()
	// gone are the tokens no hold owns any more, disowned once mu is
	// unlocked: those Redis surely no longer has, and next when the hold
	// was released meanwhile (its release's ctx ended), which leaves next
	// to Redis as an orphan, for a waiter of the Client to release.
	var gone []string
	defer func() { h.b.c.tokens.disown(gone...) }()
	h.mu.Lock()
	defer h.mu.Unlock()
	current := h.tokens != nil
	if !current || !ok && err == nil {
		gone = []string{next}
	}
	switch {
	case err != nil:
		if current { // the script may have run: next may be ours too
			keep := min(len(tokens), maxTokens-1)
			h.tokens, gone = append([]string{next}, tokens[:keep]...), tokens[keep:]
		}
		return err
	case !ok:
		if current {
			found = h.lostSignalLocked().fire()
			h.b.c.restarts.unwatch(h)
		}
		return h.b.lostError(h.kind.what + " expired or taken over")
	}
	if current {
		h.tokens, h.from, gone = []string{next}, sent, tokens
		h.past = append(slices.Clone(tokens), h.past[:min(len(h.past), maxTokens-len(tokens))]...)
		if h.claimed {
			h.claimed, h.lease = false, h.b.cfg.Lease
			h.stopTake()
		}
	}
	return nil
}

// release ends the hold and gives it back in Redis, which hands the lock
// on to its next waiter. With later, a release that ctx ended before it
// was sent, or before its reply came, is made again in the background.
// After Client.Close it still releases, and reports ErrClosed as well.
func (h *hold) release(ctx context.Context, later bool) error {
	return h.b.afterClose(h.releaseNow(ctx, later))
}

func (h *hold) releaseNow(ctx context.Context, later bool) error {
	trace.Stamp(trace.Unlock, h.b.name, "")
	defer h.b.releasing()() // from the end of the claim's take to the hand-off
	opErr := takeOp(ctx, h.op)
	h.mu.Lock()
	tokens, lost, past := h.tokens, h.lost, h.past
	h.tokens = nil
	h.stopTake()
	h.mu.Unlock()
	if opErr == nil {
		defer func() { <-h.op }()
	}
	if tokens == nil {
		return h.b.notHeld(h.kind.what + " already released")
	}
	defer h.b.c.restarts.unwatch(h)      // once the release is remembered, so that the watch stays for it
	defer h.b.c.tokens.disown(tokens...) // a waiter of the Client releases what the release left
	defer h.observer().released(h.since) // after Lost, if the release finds the hold lost
	args := append([]string{h.b.handsHere(h.channel)}, h.inKey(tokens)...)
	if opErr == nil {
		opErr = ctx.Err() // redigo may still send on an ended ctx
	}
	// The Client repeats the release on a new master (see owned), unless
	// the replicas of WithReplicas have it.
	remember := releaseRecord{kind: h.kind, keys: h.keys, tokens: args[1:], until: h.b.leaseEnd()}
	if len(past) > 0 {
		remember.tokens = append(slices.Clip(args[1:]), h.inKey(past)...)
	}
	if opErr != nil {
		return h.releaseFailed(ctx, remember, args, later, opErr)
	}
	trace.Stamp(trace.Sent, h.b.name, "")
	reply, acked, err := h.releaseScript(ctx, args)
	if cur, adopted := h.adopt(ctx, tokens, err == nil && reply == int64(0)); adopted {
		defer h.b.c.tokens.disown(cur)
		args = append([]string{args[0]}, h.inKey([]string{cur})...)
		remember.tokens = args[1:]
		reply, acked, err = h.b.evalReplicated(ctx, h.kind.release, h.keys, wire.Anys(args)...)
	}
	return h.released(ctx, remember, args, later, lost, reply, acked, err)
}

// releaseScript runs the release of h with args (see releaseNow): its
// quickRelease first if h took the lock free and no waiter of its Client
// listens, which replies -1 when a waiter has queued since, for release.
func (h *hold) releaseScript(ctx context.Context, args []string) (reply any, acked int64, err error) {
	if h.quick && args[0] == "" {
		reply, acked, err = h.b.evalReplicated(ctx, h.kind.quickRelease, h.keys[:1], wire.Anys(args[1:])...)
		if err != nil || reply != int64(-1) {
			return reply, acked, err
		}
	}
	return h.b.evalReplicated(ctx, h.kind.release, h.keys, wire.Anys(args)...)
}

// adopt, when missed (a Refresh or release found none of tokens in Redis),
// looks for the token that a Refresh by another copy of the hold gave it
// (see Handles, in handle.go): when the lock's key holds a token of the
// same hold (wire.SameHold) under the hold's fence, adopt returns it, now
// owned by the Client. Only a hold that its lock's key holds (a Mutex's,
// an RWMutex's writer) can be found so; a permit's copy cannot.
func (h *hold) adopt(ctx context.Context, tokens []string, missed bool) (string, bool) {
	if !missed || h.kind.set >= 0 || len(tokens) == 0 || h.fence == 0 {
		return "", false
	}
	cur, err := h.b.get(ctx, h.keys[0])
	if err != nil {
		return "", false
	}
	token, fence := wire.CutFence(cur)
	if fence != h.fence || !wire.SameHold(token, tokens[0]) || slices.Contains(tokens, token) {
		return "", false
	}
	h.b.c.tokens.own(token)
	return token, true
}

// released reads the reply of the release of h (see releaseNow): the
// release to remember, its ARGV, whether a failure may go on later, and
// the loss signal to fire if the release found the hold lost.
func (h *hold) released(ctx context.Context, remember releaseRecord, args []string, later bool, lost *signal, reply any, acked int64, err error) error {
	var ok bool
	var next []string
	if err == nil {
		ok, next, err = wire.ParseRelease(reply)
	}
	switch {
	case err != nil:
		return h.releaseFailed(ctx, remember, args, later && h.b.ctxErr(ctx) != nil, err)
	case !ok:
		// Or it met a node without the lock: a client routing to the old
		// master for a moment of a failover. The watch repeats it.
		remember.failed = true
		h.b.c.tokens.remember(remember)
		h.lose(ctx, lost, "expired or taken over")
		return h.b.lostError(h.kind.what + " expired or taken over")
	case acked < int64(h.b.cfg.Replicas) || h.b.cfg.Replicas == 0:
		h.b.c.tokens.remember(remember)
	}
	h.b.handedOff(h.channel, next)
	h.b.logReleased(ctx, h.kind.what, h.fence, slog.Bool("handed_off", len(next) > 0))
	return nil
}

// releaseFailed returns the error of a release r that failed with err,
// which the Client's restart watch repeats; with again, it is also made
// once more in the background.
func (h *hold) releaseFailed(ctx context.Context, r releaseRecord, args []string, again bool, err error) error {
	r.failed = true
	h.b.c.tokens.remember(r)
	if again { // by a message: nobody reads this reply
		args = append([]string{""}, args[1:]...)
		h.b.c.clean(ctx, cleanup{b: h.b, script: h.kind.release, keys: h.keys, args: args})
	}
	return h.b.redisError(ctx, err)
}

// observe lets o hear of the hold's loss and release.
func (h *hold) observe(o *observing) {
	h.mu.Lock()
	h.obs = o
	h.mu.Unlock()
}

func (h *hold) observer() *observing {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.obs
}

// Held asks Redis whether the hold is still ours (see
// uncomplicated.Mutex.Held).
func (h *hold) Held(ctx context.Context) (bool, error) {
	if err := h.b.usable(ctx); err != nil {
		return false, err
	}
	return h.verify(ctx)
}

// verify asks Redis whether it still has the hold; when not, it closes
// Lost's channel. It reports false after release, and false with the error
// when Redis fails, changing nothing.
func (h *hold) verify(ctx context.Context) (bool, error) {
	if err := takeOp(ctx, h.op); err != nil {
		return false, h.b.redisError(ctx, err)
	}
	defer func() { <-h.op }()
	h.mu.Lock()
	tokens := h.tokens
	h.mu.Unlock()
	if tokens == nil {
		return false, nil
	}
	var held bool
	var err error
	if h.kind.set >= 0 {
		held, _, err = h.b.flag(ctx, false, lua.Held, h.keys[h.kind.set:h.kind.set+1], wire.Anys(tokens)...)
	} else {
		var cur string
		if cur, err = h.b.get(ctx, h.keys[0]); err != nil {
			err = h.b.redisError(ctx, err)
		}
		cur, _ = wire.CutFence(cur)
		held = slices.Contains(tokens, cur)
	}
	if err != nil || held {
		return held, err
	}
	h.mu.Lock()
	current := h.tokens != nil
	found := current && h.lostSignalLocked().fire()
	h.mu.Unlock()
	if found {
		h.logLost(ctx, "Redis no longer has it")
	}
	if current {
		h.b.c.restarts.unwatch(h) // nothing more to find out
	}
	return false, nil
}

// Lost returns a channel closed once the hold is found lost (see
// uncomplicated.Mutex.Lost).
func (h *hold) Lost() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokens == nil {
		return closedChan
	}
	return h.lostSignalLocked().ch
}

// lostSignalLocked returns the hold's loss signal, making it; h.mu is held.
func (h *hold) lostSignalLocked() *signal {
	if h.lost == nil {
		h.lost = &signal{ch: make(chan struct{})}
	}
	return h.lost
}

// lostSignal returns the hold's signal, making it.
func (h *hold) lostSignal() *signal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostSignalLocked()
}

// leaseLeft is how long the holder may count on the current lease: until
// its margin before the lease can end in Redis, counted from the send time
// of the call that began it; for a hold without a lease (WithLease(0)),
// for ever.
func (h *hold) leaseLeft() time.Duration {
	h.mu.Lock()
	from, lease := h.from, h.lease
	h.mu.Unlock()
	if lease == 0 {
		return math.MaxInt64
	}
	return from.Add(lease - config.Margin(lease)).Sub(h.b.cfg.Clock.Now())
}

// takeOp waits for op, or for ctx to end.
func takeOp(ctx context.Context, op chan struct{}) error {
	select {
	case op <- struct{}{}:
		return nil
	default:
	}
	select {
	case op <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lose closes s, the Lost signal of h, found lost because why, and logs
// it the first time: a nil s (no Lost channel was asked for) is logged
// every time, as it is found only by the release that ends the hold. The
// caller holds no lock of the hold: a handler may call back into it.
func (h *hold) lose(ctx context.Context, s *signal, why string) {
	if s == nil || s.fire() {
		h.logLost(ctx, why)
	}
}

// logLost records that h was found lost, and tells its Observation; see
// lose.
func (h *hold) logLost(ctx context.Context, why string) {
	h.observer().lost(why)
	if h.b.logs(ctx, slog.LevelWarn) {
		h.b.log(ctx, slog.LevelWarn, h.kind.what+" lost", slog.Uint64("fence", h.fence), slog.String("why", why))
	}
}

// granted records and logs a hold of c that Redis granted to token, g,
// for a call sent at or after from; how tells an attempt, a release's
// hand-off or a take-over, to o. Under WithReplicas it fails when the
// replicas do not have the hold.
func (b *base) granted(ctx context.Context, c *spec, token string, g wire.Grant, from time.Time, how observe.Outcome, o *observing) (*hold, error) {
	fence := g.Fence
	if !c.kind.fenced {
		fence = 0
	}
	if b.cfg.Replicas == 0 { // Acquired comes first: the restart watch may find the hold lost at once
		b.logAcquired(ctx, c.kind.what, fence, slog.Bool("handed_off", how == observe.HandedOff))
		o.acquired(how, fence)
		return b.newHold(c, token, fence, from, how == observe.HandedOff, g.Free, o), nil
	}
	h := b.newHold(c, token, fence, from, how == observe.HandedOff, g.Free, nil)
	if err := h.replicate(ctx); err != nil { // a hold given back is never reported
		return nil, err
	}
	b.logAcquired(ctx, c.kind.what, fence, slog.Bool("handed_off", how == observe.HandedOff))
	o.acquired(how, fence)
	h.observe(o)
	return h, nil
}

// newHold records a hold that Redis granted to token, for a call sent at
// or after from, and lets the Client's restart watch check it. With
// claimed, a release handed it over with a claim, which the hold takes
// half-way through (see Claims, in hold.go); with free, the attempt took
// the lock free (see wire.Grant). Its Observation, o, may be nil, and set
// later with observe. The token is already the Client's own (see owned).
func (b *base) newHold(c *spec, token string, fence uint64, from time.Time, claimed, free bool, o *observing) *hold {
	h := &hold{
		b: b, kind: c.kind, keys: c.keys, channel: c.channel, fence: fence, since: b.cfg.Clock.Now(),
		op: make(chan struct{}, 1), tokens: []string{token}, from: from, lease: b.cfg.Lease, obs: o,
		quick: free && c.kind.quickRelease != nil,
	}
	if claimed && b.cfg.Claims() {
		h.mu.Lock()
		h.claimed, h.lease = true, b.cfg.Claim()
		h.takeAt(from.Add(h.lease / 2))
		h.mu.Unlock()
	}
	b.c.restarts.watch(h)
	return h
}

// Claims. A release that hands the lock to a queued waiter gives it a
// claim, not its lease: the lock is the waiter's for a short time only
// (see config.Config.Claim), so that a waiter that was paused while it waited (a
// stopped process, a long GC pause) holds the lock up for that long and
// no longer; the next waiter then gets it by its own attempt. A waiter
// that hears the hand-off while at least half the claim surely remains
// returns from Lock at once (see waiter.handedOver); one that hears it
// later tries again at once, and that attempt restarts the lease if the
// lock is still its own.
//
// The holder takes the lock, turning the claim into its lease, with its
// first Refresh (auto-refresh makes them) or, at the latest, half-way
// through the claim, when the Client refreshes the hold itself, with half
// a claim to spare. So a hold released before then, as most are, costs
// Redis nothing more than one that was not handed over; until it is taken,
// its lease is the claim.

// A claimTake is the pending take of a hold's claim.
type claimTake struct {
	timer *clock.Timer
	done  func() // tells the clock the take is over (see settle.Observer)
}

// takeAt makes the Client take h's claim at at, unless a Refresh takes it
// first. The caller holds h.mu.
func (h *hold) takeAt(at time.Time) {
	clk := h.b.cfg.Clock
	done := func() {}
	if obs, ok := clk.(settle.Observer); ok {
		done = obs.Due(at)
	}
	t := &claimTake{done: done}
	t.timer = clk.AfterFunc(max(clk.Until(at), 0), func() {
		defer done()
		h.takeClaim(t)
	})
	h.pendingTake = t
}

// stopTake ends the pending take, if any: the claim was taken or the hold
// released. The caller holds h.mu.
func (h *hold) stopTake() {
	if h.pendingTake != nil && h.pendingTake.timer.Stop() {
		h.pendingTake.done()
	}
	h.pendingTake = nil
}

// takeClaim takes h's claim for the pending take t: it refreshes the hold,
// which gives it its lease. When Redis fails it tries again half-way
// through what surely remains of the claim; once the claim has surely
// ended, the hold is lost. Close waits for it.
func (h *hold) takeClaim(t *claimTake) {
	h.mu.Lock()
	pending := h.pendingTake == t && h.tokens != nil
	if h.pendingTake == t {
		h.pendingTake = nil
	}
	token := ""
	if pending {
		token = h.tokens[0]
	}
	h.mu.Unlock()
	if !pending || !h.b.c.backgroundStarts() {
		return
	}
	defer h.b.c.cleanups.Done()
	defer func() { _ = recover() }() // a driver's panic ends the take, not the process
	ctx, cancel := context.WithTimeout(h.b.c.ctx, link.DetachedTimeout)
	defer cancel()
	_, err := h.refresh(ctx, false)
	if err == nil {
		trace.Stamp(trace.Taken, h.b.name, token)
	}
	if err == nil || errors.Is(err, sentinel.ErrNotHeld) { // taken, or found lost or released
		return
	}
	left := h.leaseLeft()
	if left <= 0 {
		h.lose(ctx, h.lostSignal(), "its claim ended before it was taken")
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.claimed && h.tokens != nil && h.pendingTake == nil {
		h.takeAt(h.b.cfg.Clock.Now().Add(left / 2))
	}
}
