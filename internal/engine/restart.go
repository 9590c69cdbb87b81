package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
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

// A restartWatch is a Client's restart watch: the holds it checks, and
// what it read of Redis's nodes.
type restartWatch struct {
	c *Client

	mu        sync.Mutex         // guards the fields below
	holding   map[*hold]struct{} // the holds of the Client's locks
	watching  bool               // the watch runs
	serverIDs map[string]string  // by node address: the last run_id read
	owners    map[int]string     // by slot of a hold or a release: its node at that reading
	single    bool               // Redis said it is not a Cluster
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
		go w.run(w.c.settings().clock)
	}
	if w.holding == nil {
		w.holding = map[*hold]struct{}{}
	}
	w.holding[h] = struct{}{}
}

// unwatch forgets a hold.
func (w *restartWatch) unwatch(h *hold) {
	w.mu.Lock()
	delete(w.holding, h)
	w.mu.Unlock()
}

// run reads the run_id every restartEvery and checks the holds, and
// repeats the releases, when it has changed. It ends at Close, or at a
// tick that finds no hold and no release to remember.
func (w *restartWatch) run(clk clock.Clock) {
	defer w.c.cleanups.Done()
	for {
		t := clk.Timer(restartEvery)
		select {
		case <-w.c.done:
			t.Stop()
			return
		case <-t.C:
		}
		rs := w.c.tokens.releases(clk.Now())
		w.mu.Lock()
		if len(w.holding) == 0 && len(rs) == 0 {
			w.watching = false
			w.mu.Unlock()
			return
		}
		hs := make([]*hold, 0, len(w.holding))
		for h := range w.holding {
			hs = append(hs, h)
		}
		w.mu.Unlock()
		w.check(hs, rs)
	}
}

// check reads the run_id of each node that holds one of hs, or
// has the lock of one of rs. When it differs from the last one seen there,
// or none was seen yet, it checks the holds on that node; when it differs
// from the last one, or the slot of a release has moved there from another
// node (a Cluster's failover), or the release failed, it repeats the
// release. The run_id counts as
// seen once every check succeeded and Redis answered every release. A driver
// that panics counts as an error: no caller could receive the panic.
func (w *restartWatch) check(hs []*hold, rs []release) {
	defer func() { _ = recover() }()
	ctx, cancel := context.WithTimeout(w.c.ctx, releaseTimeout)
	defer cancel()
	for addr, on := range w.nodes(ctx, hs, rs) {
		id := w.runID(ctx, on.key)
		if id == "" {
			continue
		}
		w.mu.Lock()
		seen := w.serverIDs[addr]
		var redo []release
		for _, r := range on.releases {
			if r.failed || seen != "" && seen != id || w.moved(addr, r.keys[0]) {
				redo = append(redo, r)
			}
		}
		w.mu.Unlock()
		// A new run_id: the node restarted, or took over from a master
		// that failed, since the holds began or the releases were sent.
		done := w.rerelease(ctx, redo)
		w.c.tokens.forget(done)
		if len(done) < len(redo) || seen != id && !verify(ctx, on.holds) {
			continue
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
	}
}

// rerelease repeats rs on the node that has their locks now: a release
// compares and deletes the exact token, handing the lock on, so it frees
// what a failover brought back and touches nothing else. It returns the
// releases that Redis answered, which need not be repeated again.
func (w *restartWatch) rerelease(ctx context.Context, rs []release) (done []release) {
	d := w.c.settings().commandTimeout
	for _, r := range rs {
		args := append([]any{""}, anys(r.tokens)...)
		if _, _, err := w.c.redis.eval(ctx, d, r.kind.release, r.keys, args...); err == nil {
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
	releases []release
}

// nodes groups hs and rs by the address of the Cluster node that owns
// their keys' slot (CLUSTER SLOTS); on a Redis that is not a Cluster, or
// when the map cannot be read, all are on one node, "".
func (w *restartWatch) nodes(ctx context.Context, hs []*hold, rs []release) map[string]*node {
	slots, _ := w.slotMap(ctx)
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

// slotMap returns the address of each slot's master, or nil when Redis is
// not a Cluster, or an error when it cannot tell. A Redis that says it is
// not ("cluster support disabled") is not asked again.
func (w *restartWatch) slotMap(ctx context.Context) ([]string, error) {
	w.mu.Lock()
	single := w.single
	w.mu.Unlock()
	if single {
		return nil, nil
	}
	reply, err := w.c.redis.command(ctx, w.c.settings().commandTimeout, nil, "CLUSTER", "SLOTS")
	var se *serverError
	if errors.As(err, &se) && strings.Contains(se.msg, "cluster support disabled") {
		w.mu.Lock()
		w.single = true
		w.mu.Unlock()
		return nil, nil
	}
	ranges, _ := reply.([]any)
	if err != nil || len(ranges) == 0 {
		return nil, err
	}
	slots := make([]string, hashslot.Count)
	for _, r := range ranges {
		// [first slot, last slot, [ip, port, id, ...], replicas...]
		r, _ := r.([]any)
		if len(r) < 3 {
			continue
		}
		first, _ := r[0].(int64)
		last, _ := r[1].(int64)
		master, _ := r[2].([]any)
		if len(master) < 2 || first < 0 || last >= hashslot.Count || first > last {
			continue
		}
		ip, _ := master[0].([]byte)
		port, _ := master[1].(int64)
		addr := net.JoinHostPort(string(ip), strconv.FormatInt(port, 10))
		for i := first; i <= last; i++ {
			slots[i] = addr
		}
	}
	return slots, nil
}

// runID returns the run_id of the node that owns key, or "" when Redis
// cannot tell.
func (w *restartWatch) runID(ctx context.Context, key string) string {
	reply, err := w.c.redis.command(ctx, w.c.settings().commandTimeout, []string{key}, "INFO", "server")
	info, ok := reply.([]byte)
	if err != nil || !ok {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		if id, ok := bytes.CutPrefix(sc.Bytes(), []byte("run_id:")); ok {
			return string(bytes.TrimSpace(id))
		}
	}
	return ""
}
