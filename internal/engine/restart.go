package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Redis without persistence forgets every lock when it restarts, and
// another process may take a lock its holder still thinks it has; so may
// a replica that takes over from a failed master before it had every
// write. While a Client holds locks, it asks each node that holds one of
// them for its run_id (INFO server) every restartEvery; when a node's
// run_id changes, or the node of a hold is new (a Cluster's failover moves
// the slots to a replica), it checks each hold there as Held does, so that
// a hold whose key vanished closes its Lost channel without waiting for
// the holder's next call. It also repeats the releases the Client
// remembers (see owned) on a node whose run_id changed, or to which their
// slot moved: a failover to a replica that had not received a release
// would otherwise leave the lock held until its lease ends. The watch runs
// while the Client holds locks or remembers releases.

// restartEvery is how often a Client that holds locks looks for a restart.
const restartEvery = time.Second

// answerEvery is how often a Client that holds locks, whose listening
// connection broke, asks Redis until every node answers: a refused or
// failed connection costs Redis nothing, and the holds are checked the
// moment Redis answers again.
const answerEvery = 25 * time.Millisecond

// pinToken registers the restart watch's own listener on a channel (see
// restartWatch.pin): no waiter's token can be it.
const pinToken = "restart-watch"

// pinAfter is how old a hold is before its Client keeps a listening
// connection for it (see restartWatch.pin): holds shorter than that, as
// most of a busy lock's and of a fleet of locks' are, cost no
// subscription, which has rueidis queue every command of the connection
// it shares (10 % more Redis CPU a lock+unlock on the fleet workload when
// holds of 50 ms were pinned). A hold younger than that when Redis
// restarts is checked at the watch's next reading, within a second.
var pinAfter atomic.Int64 // ns; a variable for the tests

func init() { pinAfter.Store(int64(time.Second)) }

// A restartWatch is a Client's restart watch: the holds it checks, and
// what it read of Redis's nodes.
type restartWatch struct {
	c *Client

	// kick tells the watch that the listening connection broke: Redis may
	// be restarting.
	kick chan struct{}

	mu        sync.Mutex                // guards the fields below
	holding   watched                   // the holds of the Client's locks
	watching  bool                      // the watch runs
	serverIDs map[string]string         // by node address: the last run_id read
	owners    map[int]string            // by slot of a hold or a release: its node at that reading
	skews     map[string]time.Duration  // by node address: how far its clock was ahead at the last reading
	lastSkew  time.Duration             // the last of those read, of any node
	skewRead  bool                      // lastSkew was read
	pins      map[string]*link.Listener // by node address, or "" before the first reading: see pin
	pinning   *clock.Timer              // fires pinOld; nil when not set
}

// watch records a new hold, and starts the watch if it is not running,
// unless the Client is closing.
func (w *restartWatch) watch(h *hold) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.watching {
		if !w.c.backgroundStarts() {
			return
		}
		w.watching = true
		if w.kick == nil {
			w.kick = make(chan struct{}, 1)
		}
		go w.run(w.c.settings().Clock, w.kick)
	}
	w.holding.add(h)
	if len(w.pins) == 0 && w.pinning == nil {
		w.pinning = w.c.settings().Clock.AfterFunc(time.Duration(pinAfter.Load()), w.pinOld)
	}
}

// pinOld pins (see pin) a hold older than pinAfter, if the watch has no
// pin yet; while it has holds but none that old, it looks again pinAfter
// later.
func (w *restartWatch) pinOld() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pinning = nil
	if !w.watching || len(w.pins) > 0 || w.holding.n == 0 {
		return
	}
	if h := w.oldHold(w.holding.all()); h != nil {
		w.pin("", h)
		return
	}
	w.pinning = w.c.settings().Clock.AfterFunc(time.Duration(pinAfter.Load()), w.pinOld)
}

// oldHold returns a hold of hs older than pinAfter, or nil.
func (w *restartWatch) oldHold(hs []*hold) *hold {
	now := w.c.settings().Clock.Now()
	for _, h := range hs {
		if now.Sub(h.since) >= time.Duration(pinAfter.Load()) {
			return h
		}
	}
	return nil
}

// pin keeps a listener of the watch on h's channel, for the node at addr,
// so that the Client keeps a listening connection there while it holds
// locks: when Redis restarts, that connection breaks at once (see broke).
// The caller holds w.mu.
func (w *restartWatch) pin(addr string, h *hold) {
	wk := w.c.wakeups(false)
	if wk == nil {
		return
	}
	if w.pins == nil {
		w.pins = map[string]*link.Listener{}
	}
	w.pins[addr] = wk.Listen(wire.WakeChannel(h.b.cfg.Prefix, h.b.name, w.c.id), pinToken, false)
}

// unpin ends the pins of the nodes not in keep. The caller holds w.mu.
func (w *restartWatch) unpin(keep map[string]*node) {
	for addr, l := range w.pins {
		if keep[addr] == nil || len(keep[addr].holds) == 0 {
			l.Close(nil)
			delete(w.pins, addr)
		}
	}
}

// broke tells the watch that the listening connection failed: until every
// node answers, it asks every answerEvery rather than every restartEvery.
func (w *restartWatch) broke() {
	w.mu.Lock()
	kick := w.kick
	w.mu.Unlock()
	if kick != nil {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
}

// unwatch forgets a hold.
func (w *restartWatch) unwatch(h *hold) {
	w.mu.Lock()
	w.holding.remove(h)
	w.mu.Unlock()
}

// run reads the run_id every restartEvery and checks the holds, and
// repeats the releases, when it has changed; after the listening
// connection broke (kick), every answerEvery until every node answers. It
// ends at Close, or at a tick that finds no hold and no release to
// remember.
func (w *restartWatch) run(clk clock.Clock, kick <-chan struct{}) {
	defer w.c.cleanups.Done()
	waiting := false // for Redis to answer again
	for {
		every := restartEvery
		if waiting {
			every = answerEvery
		}
		t := clk.Timer(every)
		select {
		case <-w.c.done:
			t.Stop()
			return
		case <-kick:
			t.Stop()
			waiting = true
		case <-t.C:
		}
		rs := w.c.tokens.releases(clk.Now())
		w.mu.Lock()
		if w.holding.n == 0 && len(rs) == 0 {
			w.watching = false
			w.unpin(nil)
			if w.pinning != nil {
				w.pinning.Stop()
				w.pinning = nil
			}
			w.mu.Unlock()
			return
		}
		hs := w.holding.all()
		w.mu.Unlock()
		waiting = !w.check(hs, rs) && waiting
	}
}

// check reads the run_id of each node that holds one of hs, or
// has the lock of one of rs. When it differs from the last one seen there,
// or none was seen yet, it checks the holds on that node; when it differs
// from the last one, or the slot of a release has moved there from another
// node (a Cluster's failover), or the release failed, it repeats the
// release. The run_id counts as
// seen once every check succeeded and Redis answered every release. A driver
// that panics counts as an error: no caller could receive the panic. It
// reports whether every node answered. A node that is new, or whose
// run_id changed, has the listening connection checked at once (see
// wakeups.check): it may still listen on the node that was the master.
func (w *restartWatch) check(hs []*hold, rs []releaseRecord) (answered bool) {
	defer func() {
		if recover() != nil {
			answered = false
		}
	}()
	ctx, cancel := context.WithTimeout(w.c.ctx, link.DetachedTimeout)
	defer cancel()
	nodes := w.nodes(ctx, hs, rs)
	w.repin(nodes)
	answered = true
	for addr, on := range nodes {
		if !w.checkNode(ctx, addr, on) {
			answered = false
		}
	}
	return answered
}

// checkNode checks the holds and repeats the releases that are on the node
// at addr, as check says, and records the node's run_id once they are
// done; it reports false when the node did not answer.
func (w *restartWatch) checkNode(ctx context.Context, addr string, on *node) bool {
	id, silent := w.runID(ctx, addr, on.key)
	if id == "" {
		return !silent
	}
	w.mu.Lock()
	seen := w.serverIDs[addr]
	var redo []releaseRecord
	for _, r := range on.releases {
		if r.failed || seen != "" && seen != id || w.moved(addr, r.keys[0]) {
			redo = append(redo, r)
		}
	}
	w.mu.Unlock()
	// A new run_id: the node restarted, or took over from a master
	// that failed, since the holds began or the releases were sent.
	if seen != id {
		if wk := w.c.wakeups(true); wk != nil {
			wk.Recheck()
		}
	}
	verified := seen == id || verify(ctx, on.holds) // first: a hold's loss is what its holder waits to hear
	done := w.rerelease(ctx, redo)
	w.c.tokens.forget(done)
	if len(done) < len(redo) || !verified {
		return true
	}
	w.mu.Lock()
	if w.serverIDs == nil {
		w.serverIDs, w.owners = map[string]string{}, map[int]string{}
	}
	w.serverIDs[addr] = id
	for _, h := range on.holds {
		w.owners[hashslot.Of(h.keys[0])] = addr
	}
	for _, r := range on.releases {
		w.owners[hashslot.Of(r.keys[0])] = addr
	}
	w.mu.Unlock()
	return true
}

// repin keeps a pin (see pin) on each node of nodes that has a hold older
// than pinAfter, and ends the others.
func (w *restartWatch) repin(nodes map[string]*node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.watching {
		return
	}
	old := map[string]*node{}
	for addr, on := range nodes {
		if w.oldHold(on.holds) != nil {
			old[addr] = on
		}
	}
	w.unpin(old)
	for addr, on := range old {
		if w.pins[addr] == nil {
			w.pin(addr, w.oldHold(on.holds))
		}
	}
}

// rerelease repeats rs on the node that has their locks now: a release
// compares and deletes the exact token, handing the lock on, so it frees
// what a failover brought back and touches nothing else. It returns the
// releases that Redis answered, which need not be repeated again.
func (w *restartWatch) rerelease(ctx context.Context, rs []releaseRecord) (done []releaseRecord) {
	d := w.c.settings().CommandTimeout
	for _, r := range rs {
		args := append([]any{""}, wire.Anys(r.tokens)...)
		if _, _, err := w.c.redis.Eval(ctx, d, r.kind.release, r.keys, args...); err == nil {
			done = append(done, r)
		}
	}
	return done
}

// moved reports whether the slot of key was on another node than addr at
// the last reading: a Cluster's failover, or a resharding, moved it. The
// caller holds w.mu.
func (w *restartWatch) moved(addr, key string) bool {
	owner, ok := w.owners[hashslot.Of(key)]
	return ok && owner != addr
}

// verify checks hs as Held does; it reports whether every check succeeded.
func verify(ctx context.Context, hs []*hold) bool {
	for _, h := range hs {
		if _, err := h.verify(ctx); err != nil {
			return false
		}
	}
	return true
}

// A node is what the restart watch checks on one node: holds, and
// releases to repeat, and a key of one of them, which routes INFO there.
type node struct {
	key      string
	holds    []*hold
	releases []releaseRecord
}

// nodes groups hs and rs by the address of the Cluster node that owns
// their keys' slot (CLUSTER SLOTS); on a Redis that is not a Cluster, or
// when the map cannot be read, all are on one node, "".
func (w *restartWatch) nodes(ctx context.Context, hs []*hold, rs []releaseRecord) map[string]*node {
	slots, _ := w.c.redis.SlotMap(ctx, w.c.settings().CommandTimeout)
	nodes := map[string]*node{}
	on := func(key string) *node {
		addr := ""
		if slots != nil {
			addr = slots[hashslot.Of(key)]
		}
		n := nodes[addr]
		if n == nil {
			n = &node{key: key}
			nodes[addr] = n
		}
		return n
	}
	for _, h := range hs {
		n := on(h.keys[0])
		n.holds = append(n.holds, h)
	}
	for _, r := range rs {
		n := on(r.keys[0])
		n.releases = append(n.releases, r)
	}
	return nodes
}

// runID returns the run_id of the node that owns key, or "" when Redis
// cannot tell; silent reports that the node did not answer (see
// link.Link.ServerInfo). It also compares the node's clock with the
// Client's (see clockStep).
func (w *restartWatch) runID(ctx context.Context, addr, key string) (id string, silent bool) {
	clk := w.c.settings().Clock
	sent := clk.Now()
	id, usec, silent := w.c.redis.ServerInfo(ctx, w.c.settings().CommandTimeout, key)
	if id != "" && usec > 0 {
		came := clk.Now()
		mid := sent.Add(came.Sub(sent) / 2)
		w.clockStep(ctx, addr, id, time.UnixMicro(usec).Sub(mid))
	}
	return id, silent
}

// maxClockStep is how far the difference between a node's clock and the
// Client's may move between two readings before the Client warns.
const maxClockStep = time.Second

// clockStep records skew, how far the clock of the node at addr, run_id
// id, is ahead of the Client's, and logs a Warn when it moved by more than
// maxClockStep since the last reading of that address, or of any node for
// an address not read before (a Cluster's failover promotes a replica at
// an address of its own): a failover to a node whose clock is off, or a
// clock stepped. A master's clock ahead
// shortens every lease on it (Redis replicates PX as an absolute PXAT, and
// a replica that takes over expires keys by its own clock); one behind
// gives fences below those granted before, which a fenced store refuses
// until the clock catches up.
func (w *restartWatch) clockStep(ctx context.Context, addr, id string, skew time.Duration) {
	w.mu.Lock()
	last, seen := w.skews[addr]
	if !seen {
		last, seen = w.lastSkew, w.skewRead
	}
	if w.skews == nil {
		w.skews = map[string]time.Duration{}
	}
	w.skews[addr], w.lastSkew, w.skewRead = skew, skew, true
	w.mu.Unlock()
	step := skew - last
	if !seen || step.Abs() <= maxClockStep {
		return
	}
	node := addr
	if node == "" {
		node = "run_id " + id
	}
	logger := w.c.settings().Logger
	if logger.Enabled(ctx, slog.LevelWarn) {
		logger.LogAttrs(ctx, slog.LevelWarn, "Redis clock stepped: leases end early on a clock ahead, fences repeat on one behind",
			slog.String("node", node), slog.Duration("step", step), slog.Duration("ahead", skew))
	}
}

// watched is the holds of a restart watch, a list through the holds
// themselves (hold.watch), so that a hold costs its watch no allocation.
type watched struct {
	first *hold
	n     int
}

// A watchLink is a hold's place in its Client's watched holds.
type watchLink struct {
	prev, next *hold
	in         bool
}

func (l *watched) add(h *hold) {
	if h.watch.in {
		return
	}
	h.watch = watchLink{next: l.first, in: true}
	if l.first != nil {
		l.first.watch.prev = h
	}
	l.first = h
	l.n++
}

func (l *watched) remove(h *hold) {
	if !h.watch.in {
		return
	}
	if h.watch.prev != nil {
		h.watch.prev.watch.next = h.watch.next
	} else {
		l.first = h.watch.next
	}
	if h.watch.next != nil {
		h.watch.next.watch.prev = h.watch.prev
	}
	h.watch = watchLink{}
	l.n--
}

// all returns the holds watched.
func (l *watched) all() []*hold {
	hs := make([]*hold, 0, l.n)
	for h := l.first; h != nil; h = h.watch.next {
		hs = append(hs, h)
	}
	return hs
}
