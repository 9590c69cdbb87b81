package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The lose fault: Redis loses its data, by one of two means, alternating,
// the first chosen with the coordinator's rng:
//
//   - restartEmpty: the lock server (on a Cluster, the faulted master) is
//     killed with SIGKILL, its persisted data (the AOF directory and any
//     RDB file, which CONFIG GET names before the kill) deleted, and it is
//     started again on its port, empty; a Cluster node keeps its
//     nodes.conf, so it serves its slots again.
//   - rollback: the keys of one held lock on the lock server go back to a
//     snapshot taken some acquisitions earlier, as a failover to a replica
//     that missed writes, or keys restored from an old DUMP, would leave
//     them. The coordinator keeps, for each lock on the lock server, a
//     ring of snapshots of its keys (see keepSnapshots).
//
// Either way the holds Redis had granted are gone, or belong to holders
// long gone, and a holder still in its critical section may write with
// its old fence, which the fenced store refuses once a newer fence has
// read. The library's fences come from Redis's clock, so a new holder's
// is above every fence the store has seen, and the store takes its
// write: the report gives how soon after Redis answered again (see
// recoveries), which must be under loseBound.

// The lose fault's settings.
const (
	snapshotEvery = 50 * time.Millisecond // between two snapshots of the locks
	snapshotsKept = 100                   // per lock: 5 s of them
	rollbackDepth = 20                    // acquisitions of the lock since the snapshot a rollback restores
	loseBound     = 2 * time.Second       // from Redis answering again to a new holder's first accepted write
)

// A loss is one lose fault: when the data went, when the lock server
// answered again, and the locks whose data it took that write to the
// store (Mutexes and RWMutexes; a Semaphore writes nothing).
type loss struct {
	rollback bool     // the keys of one lock went back to a snapshot; false: the server restarted empty
	from     int64    // Unix nanoseconds: just before the SIGKILL, or the rollback sent
	back     int64    // when the server answered again (see restartEmpty), or the rollback replied
	locks    []string // as Name gives them
}

// lose injects the lose fault: a restart without persistence or a
// rollback, whichever the previous one was not.
func (c *coordinator) lose() (at time.Time, err error) {
	if c.losses == 0 {
		c.loseRollback = c.rng.IntN(2) == 1
	} else {
		c.loseRollback = !c.loseRollback
	}
	c.losses++
	if c.loseRollback {
		return c.rollback()
	}
	return c.restartEmpty()
}

// restartEmpty kills the lock server, deletes what it persisted and starts
// it again, empty, as serverFault does with the restart fault. The server
// answers again when it answers PING; on a Cluster, once every master
// says the Cluster is ok again (see awaitCluster): a master that starts
// refuses commands on keys with CLUSTERDOWN for its first 2 s (Redis's
// CLUSTER_WRITABLE_DELAY), whatever its data, which no client can
// shorten.
func (c *coordinator) restartEmpty() (at time.Time, err error) {
	files, err := dataFiles(c.lock.Addr)
	if err != nil {
		return at, err
	}
	c.logf("lose: kill -9 %s, delete %v, start it again", c.lockNode(), files)
	var l loss
	err = c.serverFault(faultLose, func() error {
		at = time.Now()
		l.from = at.UnixNano()
		c.lock.Kill()
		for _, f := range files {
			if err := os.RemoveAll(f); err != nil {
				return err
			}
		}
		err := c.lock.Revive()
		l.back = time.Now().UnixNano()
		return err
	})
	if err != nil {
		return at, err
	}
	if c.cluster != nil {
		l.back = time.Now().UnixNano() // serverFault has waited for the Cluster to be ok
	}
	for _, name := range c.stored() {
		if c.onLock[name] {
			l.locks = append(l.locks, name)
		}
	}
	c.mu.Lock()
	c.rec.Losses = append(c.rec.Losses, l)
	c.mu.Unlock()
	return at, nil
}

// dataFiles returns the files in which the server at addr persists its
// data, in its directory, as CONFIG GET names them: its AOF directory
// (appenddirname; before Redis 7, its AOF file, appendfilename) and its
// RDB file (dbfilename). Its nodes.conf, on a Cluster, is not among them.
func dataFiles(addr string) ([]string, error) {
	conf, err := redis.StringMap(dialDo(addr, "CONFIG", "GET", "*"))
	if err != nil {
		return nil, err
	}
	aof := conf["appenddirname"]
	if aof == "" {
		aof = conf["appendfilename"]
	}
	if conf["dir"] == "" || aof == "" || conf["dbfilename"] == "" {
		return nil, fmt.Errorf("CONFIG GET on %s: dir %q, AOF %q, dbfilename %q", addr, conf["dir"], aof, conf["dbfilename"])
	}
	return []string{filepath.Join(conf["dir"], aof), filepath.Join(conf["dir"], conf["dbfilename"])}, nil
}

// rollback rolls the keys of a held lock on the lock server back to the
// latest of its snapshots that is rollbackDepth acquisitions old and older
// than every hold open on it (see pickSnapshot). It counts those holds as
// its targets.
func (c *coordinator) rollback() (at time.Time, err error) {
	lock, snap, err := c.rollbackTarget()
	if err != nil {
		return at, err
	}
	c.mu.Lock()
	var open []*hold
	for _, h := range c.rec.Open {
		if h.enter.Key == lock {
			open = append(open, h)
		}
	}
	c.mu.Unlock()
	conn, err := dialLock(c.lock.Addr)
	if err != nil {
		return at, err
	}
	defer conn.Close()
	if err := rollbackScript.Load(conn); err != nil {
		return at, err
	}
	at = time.Now()
	err = restore(conn, lock, snap.keys, c.opts.Timeout)
	back := time.Now()
	if err != nil {
		return at, err
	}
	c.logf("lose: roll %s back %d acquisitions, %.0fms, to %v, under %d holds",
		lock, c.entered(lock)-snap.acquired, at.Sub(snap.taken).Seconds()*1000, snap.keys, len(open))
	l := loss{rollback: true, from: at.UnixNano(), back: back.UnixNano()}
	if slices.Contains(c.stored(), lock) {
		l.locks = []string{lock}
	}
	c.mu.Lock()
	c.rec.Losses = append(c.rec.Losses, l)
	for _, h := range open {
		c.rec.Targets[faultLose+" "+h.enter.Role]++
	}
	c.mu.Unlock()
	return at, nil
}

// rollbackTarget waits, up to a few timeouts, for a held lock on the lock
// server that has a snapshot to roll back to (see pickSnapshot), and
// returns both.
func (c *coordinator) rollbackTarget() (lock string, snap snapshot, err error) {
	wait := 3 * c.opts.Timeout
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(snapshotEvery) {
		h, err := c.holder(c.randomLock)
		if err != nil {
			return "", snap, err
		}
		if snap, ok := c.pickSnapshot(h.enter.Key); ok {
			return h.enter.Key, snap, nil
		}
	}
	return "", snap, fmt.Errorf("no held lock with a snapshot %d acquisitions old for %v", rollbackDepth, wait)
}

// randomLock picks a lock on the lock server at random among those of
// the open holds, and returns one of its holds; nil when none is on the
// lock server. A lock with many holders at once (a Semaphore, an
// RWMutex's readers) is no likelier than one with a single holder.
func (c *coordinator) randomLock(open []*hold) *hold {
	var locks []string
	for _, h := range open {
		if c.onLock[h.enter.Key] && !slices.Contains(locks, h.enter.Key) {
			locks = append(locks, h.enter.Key)
		}
	}
	if len(locks) == 0 {
		return nil
	}
	lock := locks[c.rng.IntN(len(locks))]
	i := slices.IndexFunc(open, func(h *hold) bool { return h.enter.Key == lock })
	return open[i]
}

// entered returns how many sections of lock have begun, as far as events
// tell.
func (c *coordinator) entered(lock string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rec.Entered[lock]
}

// A snapshot is the keys of one lock at one instant.
type snapshot struct {
	taken    time.Time // when it was read: its reply came
	acquired int       // the lock's sections begun by then (record.Entered)
	keys     []dumped
}

// A dumped is one key of a snapshot.
type dumped struct {
	key     string
	pttl    int64 // ms; -1: no TTL
	payload []byte
}

// String names d and its PTTL, for the log.
func (d dumped) String() string { return fmt.Sprintf("%s (PTTL %dms)", d.key, d.pttl) }

// snapshots are the rings of snapshots of the locks on the lock server.
type snapshots struct {
	mu    sync.Mutex
	rings map[string][]snapshot // lock name -> its snapshots, oldest first
}

// pickSnapshot returns the latest snapshot of lock taken at least
// rollbackDepth acquisitions ago and before every hold open on the lock
// called to lock: none of them is in it, so that the rollback takes the
// lock from each of them rather than give it back to one that lost it
// meanwhile.
func (c *coordinator) pickSnapshot(lock string) (snapshot, bool) {
	c.mu.Lock()
	now := c.rec.Entered[lock]
	before := time.Now()
	for id, h := range c.rec.Open {
		if w := c.rec.Waits[id]; h.enter.Key == lock && w != nil && w.from < before.UnixNano() {
			before = time.Unix(0, w.from)
		}
	}
	c.mu.Unlock()
	return c.snaps.pick(lock, now-rollbackDepth, before)
}

// pick returns the latest snapshot of lock taken before before, when the
// lock had had at most acquired acquisitions.
func (s *snapshots) pick(lock string, acquired int, before time.Time) (snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ring := s.rings[lock]
	for i := len(ring) - 1; i >= 0; i-- {
		if ring[i].acquired <= acquired && ring[i].taken.Before(before) {
			return ring[i], true
		}
	}
	return snapshot{}, false
}

// add appends snap to lock's ring, dropping the oldest past snapshotsKept.
func (s *snapshots) add(lock string, snap snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ring := append(s.rings[lock], snap)
	if len(ring) > snapshotsKept {
		ring = ring[len(ring)-snapshotsKept:]
	}
	s.rings[lock] = ring
}

// keepSnapshots snapshots every lock on the lock server every
// snapshotEvery, from a connection of its own, until the returned func is
// called; that func returns once it has stopped. A snapshot that fails, as
// while the server is down, is skipped.
func (c *coordinator) keepSnapshots() (stop func()) {
	c.snaps = &snapshots{rings: map[string][]snapshot{}}
	var locks []string
	for name := range c.onLock {
		locks = append(locks, name)
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var conn redis.Conn
		defer func() {
			if conn != nil {
				conn.Close()
			}
		}()
		tick := time.NewTicker(snapshotEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			if conn == nil {
				var err error
				if conn, err = dialLock(c.lock.Addr); err != nil {
					continue
				}
			}
			if err := c.snapshot(conn, locks); err != nil {
				conn.Close()
				conn = nil
			}
		}
	}()
	return func() { close(quit); <-done }
}

// dialLock connects to the lock server at addr directly, with timeouts so
// that a server down or stopped makes calls fail rather than hang.
func dialLock(addr string) (redis.Conn, error) {
	return redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(time.Second), redis.DialWriteTimeout(time.Second))
}

// snapshot reads the keys of each of locks on conn, each lock's at one
// instant, and adds them to their rings.
func (c *coordinator) snapshot(conn redis.Conn, locks []string) error {
	for _, lock := range locks {
		if err := snapshotScript.Send(conn, lock, otherKeys(lock)); err != nil {
			return err
		}
	}
	if err := conn.Flush(); err != nil {
		return err
	}
	var errs []error
	for _, lock := range locks {
		reply, err := redis.Values(conn.Receive())
		taken := time.Now()
		if err == nil {
			var keys []dumped
			if keys, err = parseDump(reply); err == nil {
				c.snaps.add(lock, snapshot{taken: taken, acquired: c.entered(lock), keys: keys})
			}
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// otherKeys is the pattern of the keys of lock besides the lock's name
// itself: the library names them <prefix>:<part>:{<name>} (lockname.go);
// a lock name holds no glob character.
func otherKeys(lock string) string { return "lock:*:{" + lock + "}" }

// snapshotScript returns, for the lock KEYS[1] whose other keys match
// ARGV[1], every key of it that exists, its PTTL and its DUMP, flat.
var snapshotScript = redis.NewScript(1, `
local keys = redis.call('KEYS', ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  table.insert(keys, KEYS[1])
end
local out = {}
for _, k in ipairs(keys) do
  table.insert(out, k)
  table.insert(out, redis.call('PTTL', k))
  table.insert(out, redis.call('DUMP', k))
end
return out
`)

// parseDump parses snapshotScript's reply.
func parseDump(reply []any) ([]dumped, error) {
	if len(reply)%3 != 0 {
		return nil, fmt.Errorf("snapshot: %d values, not triples", len(reply))
	}
	var keys []dumped
	for i := 0; i < len(reply); i += 3 {
		var d dumped
		if _, err := redis.Scan(reply[i:i+3], &d.key, &d.pttl, &d.payload); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		keys = append(keys, d)
	}
	return keys, nil
}

// rollbackScript deletes every key of the lock KEYS[1], whose other keys
// match ARGV[1], then RESTOREs those of a snapshot: ARGV[2..] are
// triples of a key, its TTL in ms and its DUMP.
var rollbackScript = redis.NewScript(1, `
local gone = redis.call('KEYS', ARGV[1])
table.insert(gone, KEYS[1])
redis.call('DEL', unpack(gone))
for i = 2, #ARGV, 3 do
  redis.call('RESTORE', ARGV[i], ARGV[i + 1], ARGV[i + 2], 'REPLACE')
end
return #ARGV / 3
`)

// restore makes the keys of lock on conn's server those of a snapshot,
// atomically: each with the TTL it had then, or ttl when it had none.
func restore(conn redis.Conn, lock string, keys []dumped, ttl time.Duration) error {
	args := []any{lock, otherKeys(lock)}
	for _, d := range keys {
		args = append(args, d.key, restoreTTL(d.pttl, ttl), d.payload)
	}
	_, err := rollbackScript.Do(conn, args...)
	return err
}

// restoreTTL is the TTL in ms RESTORE gives a key whose PTTL was pttl:
// pttl, or ttl when it had none; at least 1, as 0 would be none.
func restoreTTL(pttl int64, ttl time.Duration) int64 {
	if pttl < 0 {
		return ttl.Milliseconds()
	}
	return max(pttl, 1)
}
