package main

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	redisv9 "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/valkey-io/valkey-go"
	"github.com/valkey-io/valkey-go/valkeylock"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A locker is one simulated process's handle on the benchmark lock. It is
// used by one goroutine at a time.
type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// A row is one lock implementation of the table.
type row struct {
	name      string
	inProcess bool // no Redis: the sync.Mutex ceiling
	floor     bool // the push floor (see floor.go): not a peer, a bound
	// own marks our RWMutex and Semaphore rows: not peers of our Mutex but
	// compared with it, and with the in-process row named ceiling.
	own     bool
	ceiling string
	// base names the row that this one, our Mutex through another client
	// or on another deployment, is compared with.
	base    string
	cluster bool    // runs on the Cluster, not on the server
	holders holders // how many workers the lock lets in at once
	// open returns n lockers of one lock named key, each standing for a
	// process of its own, and a function that closes every client and pool
	// they use. addr is the server's address, or on the Cluster the first
	// master's, from which a client learns the other nodes. A semaphore
	// has permits permits; other locks ignore it.
	open func(addr, key string, n, permits int) (lockers []locker, closeAll func(), err error)
}

// holders is how many holders a row's lock allows at once.
type holders int

const (
	exclusive holders = iota // one: a mutex, or an RWMutex's writers
	shared                   // any number: an RWMutex's readers
	permitted                // a semaphore's permits
)

// capacity returns how many of cfg's workers the lock of r lets in at once.
func (r row) capacity(cfg config) int {
	switch r.holders {
	case shared:
		return cfg.workers
	case permitted:
		return cfg.semPermits()
	}
	return 1
}

// key returns the row's lock name, distinct from every other row's.
func (r row) key() string { return "bench-" + strings.ReplaceAll(r.name, " ", "-") }

// lockTTL is the lease of the peers that need one.
const lockTTL = 10 * time.Second

func allRows() []row {
	return []row{
		{name: "uncomplicated", open: openUncomplicated},
		{name: ownGoredis, base: ours, open: openGoredis},
		{name: ownRueidis, base: ours, open: openRueidis},
		{name: ownValkey, base: ours, open: openValkey},
		{name: ownCluster, base: ownGoredis, cluster: true, open: openCluster},
		{name: "redsync default", open: openRedsync()},
		{name: "redsync 1ms", open: openRedsync(redsync.WithRetryDelay(time.Millisecond), redsync.WithTries(math.MaxInt32))},
		{name: "redislock 100ms", open: openRedislock(100 * time.Millisecond)},
		{name: "redislock 1ms", open: openRedislock(time.Millisecond)},
		{name: "rueidislock", open: openCtxLockers(newRueidislock)},
		{name: "valkeylock", open: openCtxLockers(newValkeylock)},
		{name: pushFloor, floor: true, open: openPushFloor},
		{name: "sync.Mutex", inProcess: true, open: openSyncMutex},
		{name: ownRWWriters, own: true, ceiling: ceiling, open: openRW(writer)},
		{name: ownSemaphore1, own: true, ceiling: ceiling, open: openSemaphore1},
		{name: ownRW + " read", own: true, ceiling: syncRead, holders: shared, open: openRW(reader)},
		{name: ownSemaphore, own: true, ceiling: chanSemaphore, holders: permitted, open: openSemaphore},
		{name: syncRead, inProcess: true, holders: shared, open: openSyncRead},
		{name: chanSemaphore, inProcess: true, holders: permitted, open: openChanSemaphore},
	}
}

// openUncomplicated gives each locker a Client of its own over one pool.
func openUncomplicated(addr, key string, n, _ int) ([]locker, func(), error) {
	return openClients(addr, n, func(c *uncomplicated.Client) (locker, error) { return uncomplicated.New(c, uncomplicated.Named(key)) })
}

// openClients gives each of n lockers, made by mk, a Client of its own
// over one redigo pool of the server at addr, which keeps two connections
// for each: one for its calls, one that listens.
func openClients[L any](addr string, n int, mk func(*uncomplicated.Client) (L, error)) ([]L, func(), error) {
	pool := newPool(addr, 2*n)
	newClient := func() *uncomplicated.Client { return uncomplicated.NewClient(redigo.New(pool)) }
	return openClientsOver(n, newClient, func() { _ = pool.Close() }, mk)
}

// openClientsOver gives each of n lockers, made by mk, a Client of its own
// made by newClient. Its closeAll closes the Clients and then calls
// closeShared, which closes what they share.
func openClientsOver[L any](n int, newClient func() *uncomplicated.Client, closeShared func(), mk func(*uncomplicated.Client) (L, error)) ([]L, func(), error) {
	clients := make([]*uncomplicated.Client, 0, n)
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
		closeShared()
	}
	lockers := make([]L, 0, n)
	for range n {
		c := newClient()
		clients = append(clients, c)
		l, err := mk(c)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		lockers = append(lockers, l)
	}
	return lockers, closeAll, nil
}

// openRedsync gives each locker a Redsync and Mutex of its own over one
// pool, which keeps a connection for each.
func openRedsync(opts ...redsync.Option) func(addr, key string, n, permits int) ([]locker, func(), error) {
	return func(addr, key string, n, _ int) ([]locker, func(), error) {
		pool := newPool(addr, n)
		lockers := make([]locker, n)
		for i := range lockers {
			rs := redsync.New(redsyncredigo.NewPool(pool))
			lockers[i] = redsyncLocker{rs.NewMutex(key, opts...)}
		}
		return lockers, func() { _ = pool.Close() }, nil
	}
}

type redsyncLocker struct{ m *redsync.Mutex }

func (l redsyncLocker) Lock(ctx context.Context) error { return l.m.LockContext(ctx) }

func (l redsyncLocker) Unlock(ctx context.Context) error {
	ok, err := l.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock: lock not held")
	}
	return err
}

// openRedislock gives each locker a go-redis client of its own, so that no
// locker dials (and sends HELLO) during a measurement after its warm-up.
// Its default pool (10 connections a CPU) has room for its one user.
func openRedislock(backoff time.Duration) func(addr, key string, n, permits int) ([]locker, func(), error) {
	return func(addr, key string, n, _ int) ([]locker, func(), error) {
		opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(backoff)}
		lockers := make([]locker, n)
		clients := make([]*redisv9.Client, n)
		for i := range lockers {
			clients[i] = redisv9.NewClient(&redisv9.Options{Addr: addr})
			lockers[i] = &redislockLocker{c: redislock.New(clients[i]), key: key, opt: opt}
		}
		closeAll := func() {
			for _, c := range clients {
				_ = c.Close()
			}
		}
		return lockers, closeAll, nil
	}
}

type redislockLocker struct {
	c    *redislock.Client
	key  string
	opt  *redislock.Options
	held *redislock.Lock
}

func (l *redislockLocker) Lock(ctx context.Context) (err error) {
	l.held, err = l.c.Obtain(ctx, l.key, lockTTL, l.opt)
	return err
}

func (l *redislockLocker) Unlock(ctx context.Context) error {
	held := l.held
	l.held = nil
	return held.Release(ctx)
}

// A ctxLocker is a Locker of rueidislock or of valkeylock: one interface
// but for the type of the client that Client returns.
type ctxLocker interface {
	WithContext(ctx context.Context, name string) (context.Context, context.CancelFunc, error)
	Close()
}

// openCtxLockers gives each locker a Locker from newLocker, and so a
// client, of its own: a Locker queues its own callers in process.
func openCtxLockers[L ctxLocker](newLocker func(addr string) (L, error)) func(addr, key string, n, permits int) ([]locker, func(), error) {
	return func(addr, key string, n, _ int) ([]locker, func(), error) {
		lockers := make([]locker, 0, n)
		closeAll := func() {
			for _, l := range lockers {
				l.(*ctxLockerHold).l.Close()
			}
		}
		for range n {
			l, err := newLocker(addr)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			lockers = append(lockers, &ctxLockerHold{l: l, key: key})
		}
		return lockers, closeAll, nil
	}
}

// newRueidislock returns a Locker of the server at addr as rueidislock's
// README sets one up for a single server at its best: KeyMajority 1, and
// NoLoopTracking, which needs Redis 7.0.5 or later (launch warns when the
// server is older).
func newRueidislock(addr string) (rueidislock.Locker, error) {
	return rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		NoLoopTracking: true,
	})
}

// newValkeylock is newRueidislock with valkeylock, whose options are
// rueidislock's.
func newValkeylock(addr string) (valkeylock.Locker, error) {
	return valkeylock.NewLocker(valkeylock.LockerOption{
		ClientOption:   valkey.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		NoLoopTracking: true,
	})
}

// ctxLockerHold holds the lock until release is called or the ctx given
// to Lock ends, whichever comes first.
type ctxLockerHold struct {
	l       ctxLocker
	key     string
	release context.CancelFunc
}

func (l *ctxLockerHold) Lock(ctx context.Context) (err error) {
	_, l.release, err = l.l.WithContext(ctx, l.key)
	return err
}

func (l *ctxLockerHold) Unlock(context.Context) error {
	release := l.release
	l.release = nil
	release() // returns once the key is deleted
	return nil
}

// openSyncMutex shares one sync.Mutex among the lockers: the ceiling.
func openSyncMutex(_, _ string, n, _ int) ([]locker, func(), error) {
	mu := new(sync.Mutex)
	lockers := make([]locker, n)
	for i := range lockers {
		lockers[i] = syncLocker{mu}
	}
	return lockers, func() {}, nil
}

// syncLocker ignores ctx: a waiter returns only with the lock.
type syncLocker struct{ mu *sync.Mutex }

func (l syncLocker) Lock(context.Context) error   { l.mu.Lock(); return nil }
func (l syncLocker) Unlock(context.Context) error { l.mu.Unlock(); return nil }
