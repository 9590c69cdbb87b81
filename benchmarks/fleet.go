package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	redisv9 "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedrueidis"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey"
)

// The fleet workload (-workload fleet) is where most locking happens: many
// objects, each rarely contended. One process shares one client among
// -goroutines goroutines; each locks a random key of -keys and unlocks it
// at once, for -duration. A row reports the lock+unlock pairs per second,
// and the Redis CPU and commands per pair (INFO cpu and INFO stats, read
// before and after the run), and what the row left in Redis once its
// client closed: the keys (DBSIZE) and used_memory, against before its
// warm-up.

// A fleetRow is one lock library on the fleet workload.
type fleetRow struct {
	name string
	// peer names the row this one is compared with; "" for a peer.
	peer string
	// open returns the row's pairer on the server at addr for goroutines
	// goroutines, and a function that closes what it uses.
	open func(addr string, goroutines int) (pairer, func(), error)
}

// A pairer locks a key and unlocks it at once. It is safe for concurrent
// use.
type pairer interface {
	pair(ctx context.Context, key string) error
}

func allFleetRows() []fleetRow {
	return []fleetRow{
		{name: ownRueidis, peer: "rueidislock", open: fleetOver(newRueidisClient)},
		{name: ownValkey, peer: "valkeylock", open: fleetOver(newValkeyClient)},
		{name: "uncomplicated", peer: "redsync 1ms", open: fleetRedigo},
		{name: "uncomplicated go-redis", peer: "redislock 1ms", open: fleetGoredis},
		{name: "rueidislock", open: fleetCtxLocker(newRueidislock)},
		{name: "valkeylock", open: fleetCtxLocker(newValkeylock)},
		{name: "redsync 1ms", open: fleetRedsync},
		{name: "redislock 1ms", open: fleetRedislock},
	}
}

// fleetResult is the measure of one fleet row.
type fleetResult struct {
	name, peer  string
	pairs       int64
	elapsed     time.Duration
	cmdsPerPair float64
	cpuPerPair  time.Duration
	keysLeft    int64 // DBSIZE after, less before
	memoryLeft  int64 // used_memory after, less before, in bytes
	errors      int64
	err         error
	// rounds are the runs this result is the median of (see medianFleet),
	// one a round, for the per-round ratios of ours to its peer.
	rounds []fleetResult
}

// runFleet runs r on e for cfg.duration.
func (e *env) runFleet(r fleetRow, cfg config) fleetResult {
	res := fleetResult{name: r.name, peer: r.peer}
	keys0, mem0, err := e.stored()
	if err != nil {
		res.err = err
		return res
	}
	p, closeAll, err := r.open(e.addr, cfg.goroutines)
	if err != nil {
		res.err = err
		return res
	}
	closed := false
	defer func() {
		if !closed {
			closeAll()
		}
	}()
	keys := make([]string, cfg.keys)
	for i := range keys {
		keys[i] = "fleet-" + strconv.Itoa(i)
	}
	// Warm-up: every goroutine's connection dialled, every script loaded.
	if err := fleetLoop(p, keys, cfg.goroutines, 200*time.Millisecond, nil, nil); err != nil {
		res.err = fmt.Errorf("warm-up: %w", err)
		return res
	}
	var pairs, fails atomic.Int64
	start := time.Now()
	cmds, cpu, err := e.measure(func() {
		res.err = fleetLoop(p, keys, cfg.goroutines, cfg.duration, &pairs, &fails)
	})
	res.elapsed = time.Since(start)
	if err != nil {
		res.err = err
	}
	res.pairs, res.errors = pairs.Load(), fails.Load()
	if res.pairs > 0 {
		res.cmdsPerPair = float64(cmds) / float64(res.pairs)
		res.cpuPerPair = cpu / time.Duration(res.pairs)
	}
	closeAll()
	closed = true
	keys1, mem1, err := e.stored()
	if err != nil && res.err == nil {
		res.err = err
	}
	res.keysLeft, res.memoryLeft = keys1-keys0, mem1-mem0
	return res
}

// stored returns the keys (DBSIZE) and used_memory of the nodes, summed.
func (e *env) stored() (keys, memory int64, err error) {
	counts, err := e.keys()
	if err != nil {
		return 0, 0, err
	}
	for _, n := range counts {
		keys += n
	}
	memory, err = e.usedMemory()
	return keys, memory, err
}

// fleetLoop runs n goroutines for d, each pairing random keys; it counts
// the pairs done and failed, when given counters. Without counters, a
// failure ends it with that error.
func fleetLoop(p pairer, keys []string, n int, d time.Duration, pairs, fails *atomic.Int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 1))
			for ctx.Err() == nil {
				err := p.pair(context.Background(), keys[rnd.IntN(len(keys))])
				switch {
				case err == nil && pairs != nil:
					pairs.Add(1)
				case err != nil && fails != nil:
					fails.Add(1)
				case err != nil:
					errs[g] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// printFleet prints the fleet rows and each of ours against its peer.
func printFleet(w io.Writer, cfg config, results []fleetResult) {
	fmt.Fprintf(w, "\nFleet workload: %d goroutines of one process sharing one client, each locking a random key of %d and unlocking it at once, for %v; medians of %d rounds.\n\n",
		cfg.goroutines, cfg.keys, cfg.duration, cfg.rounds)
	rows := [][]string{{"row", "Redis CPU per pair", "pairs/s", "Redis commands per pair", "keys left", "memory left", "errors"}}
	byName := map[string]fleetResult{}
	for _, r := range results {
		byName[r.name] = r
		if r.err != nil {
			rows = append(rows, []string{r.name, "failed: " + r.err.Error(), "", "", "", "", ""})
			continue
		}
		rows = append(rows, []string{r.name, fmt.Sprintf("%.1f µs", float64(r.cpuPerPair)/float64(time.Microsecond)), fmt.Sprintf("%.0f", r.rate()),
			fmt.Sprintf("%.2f", r.cmdsPerPair), strconv.FormatInt(r.keysLeft, 10), fmt.Sprintf("%.1f KiB", float64(r.memoryLeft)/1024),
			strconv.FormatInt(r.errors, 10)})
	}
	writeMarkdown(w, rows)
	ratios := [][]string{{"ours ÷ peer, median of the rounds' ratios", "Redis CPU per pair", "pairs/s"}}
	for _, r := range results {
		p, ok := byName[r.peer]
		if r.peer == "" || !ok || r.err != nil || p.err != nil {
			continue
		}
		cpu, rate, ok := pairedRatios(r.rounds, p.rounds)
		if !ok {
			continue
		}
		ratios = append(ratios, []string{r.name + " ÷ " + p.name, fmt.Sprintf("%.2f×", cpu), fmt.Sprintf("%.2f×", rate)})
	}
	if len(ratios) > 1 {
		fmt.Fprintln(w)
		writeMarkdown(w, ratios)
	}
}

// pairedRatios returns the medians, over the rounds, of ours's Redis CPU
// per pair and pairs per second each divided by its peer's of the same
// round; false unless both ran every round with pairs. A row's median
// against its peer's would carry whatever the machine did in between;
// fleetOrder runs the two of a round one after the other, each in turn
// first.
func pairedRatios(ours, peer []fleetResult) (cpu, rate float64, ok bool) {
	if len(ours) == 0 || len(ours) != len(peer) {
		return 0, 0, false
	}
	cpus := make([]float64, len(ours))
	rates := make([]float64, len(ours))
	for i, o := range ours {
		p := peer[i]
		if o.pairs == 0 || p.pairs == 0 || p.cpuPerPair == 0 {
			return 0, 0, false
		}
		cpus[i] = float64(o.cpuPerPair) / float64(p.cpuPerPair)
		rates[i] = o.rate() / p.rate()
	}
	return median(cpus), median(rates), true
}

// median returns the median of xs, the mean of the middle two when even;
// it sorts xs.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// fleetOrder returns the rows in the order round runs them: each of ours
// with its peer right after it, then the rest, as the table has them; in
// odd rounds all of that reversed. Each of ours thus runs next to its
// peer, as often before it as after, and over two rounds every row's
// place sums to the same.
func fleetOrder(rows []fleetRow, round int) []fleetRow {
	var order []fleetRow
	placed := map[string]bool{}
	for _, r := range rows {
		if placed[r.name] || r.peer == "" {
			continue
		}
		order, placed[r.name] = append(order, r), true
		if i := slices.IndexFunc(rows, func(p fleetRow) bool { return p.name == r.peer }); i >= 0 && !placed[r.peer] {
			order, placed[r.peer] = append(order, rows[i]), true
		}
	}
	for _, r := range rows {
		if !placed[r.name] {
			order = append(order, r)
		}
	}
	if round%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// medianFleet returns the run of rs whose Redis CPU per pair is the
// median, with the median pairs per second of rs, their errors summed and
// the most any left in Redis, and rs as its rounds; the first failure when
// one failed.
func medianFleet(rs []fleetResult) fleetResult {
	for _, r := range rs {
		if r.err != nil {
			return r
		}
	}
	byCPU := slices.Clone(rs)
	slices.SortFunc(byCPU, func(a, b fleetResult) int { return cmp.Compare(a.cpuPerPair, b.cpuPerPair) })
	byRate := slices.Clone(rs)
	slices.SortFunc(byRate, func(a, b fleetResult) int { return cmp.Compare(a.rate(), b.rate()) })
	m := byCPU[(len(rs)-1)/2]
	rate := byRate[(len(rs)-1)/2]
	m.pairs, m.elapsed = rate.pairs, rate.elapsed
	m.errors, m.rounds = 0, rs
	for _, r := range rs {
		m.errors += r.errors
		m.keysLeft, m.memoryLeft = max(m.keysLeft, r.keysLeft), max(m.memoryLeft, r.memoryLeft)
	}
	return m
}

// rate is the pairs per second of the run.
func (r fleetResult) rate() float64 { return float64(r.pairs) / r.elapsed.Seconds() }

// fleetJSON is a fleet row as one line of JSON.
type fleetJSON struct {
	Name           string  `json:"name"`
	CPUPerPairUs   float64 `json:"redis_cpu_us_per_pair"`
	PairsPerSecond float64 `json:"pairs_per_second"`
	CmdsPerPair    float64 `json:"cmds_per_pair"`
	KeysLeft       int64   `json:"keys_left"`
	MemoryLeft     int64   `json:"memory_left_bytes"`
	Errors         int64   `json:"errors"`
	Failed         string  `json:"failed,omitempty"`
}

func (r fleetResult) json() fleetJSON {
	j := fleetJSON{Name: r.name, CmdsPerPair: r.cmdsPerPair, KeysLeft: r.keysLeft, MemoryLeft: r.memoryLeft, Errors: r.errors}
	if r.err != nil {
		j.Failed = r.err.Error()
		return j
	}
	j.CPUPerPairUs = float64(r.cpuPerPair) / float64(time.Microsecond)
	j.PairsPerSecond = r.rate()
	return j
}

// Our rows: one Client, a Mutex made for each pair, as a server handling
// requests makes one for the object of each. Every row's pool or client
// has room for all the goroutines, and a few more (see connsFor): a user
// who tuned it would size it so.

// mutexPairer pairs keys with the Mutexes of its Client.
type mutexPairer struct{ c *uncomplicated.Client }

func (p mutexPairer) pair(ctx context.Context, key string) error {
	m, err := uncomplicated.New(p.c, uncomplicated.Named(key))
	if err != nil {
		return err
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	return m.Unlock(ctx)
}

// fleetRedigo's pool keeps a connection for each goroutine and the
// Client's listening one.
func fleetRedigo(addr string, goroutines int) (pairer, func(), error) {
	pool := newPool(addr, goroutines+1)
	c := uncomplicated.NewClient(redigo.New(pool))
	return mutexPairer{c}, func() { _ = c.Close(); _ = pool.Close() }, nil
}

func fleetGoredis(addr string, goroutines int) (pairer, func(), error) {
	rdb := redisv9.NewClient(&redisv9.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: connsFor(goroutines)})
	c := goredis.NewClient(rdb)
	return mutexPairer{c}, func() { _ = c.Close(); _ = rdb.Close() }, nil
}

// fleetOver's one Client, from newClient (newRueidisClient or
// newValkeyClient: one pipelining connection), serves every goroutine.
func fleetOver(newClient func(addr string) (*uncomplicated.Client, func(), error)) func(addr string, goroutines int) (pairer, func(), error) {
	return func(addr string, _ int) (pairer, func(), error) {
		c, closeAll, err := newClient(addr)
		if err != nil {
			return nil, nil, err
		}
		return mutexPairer{c}, closeAll, nil
	}
}

// newRueidisClient returns a Client over a rueidis client of the server at
// addr, built as the README advises for locks: one pipelining connection,
// as rueidislock builds its own; and a function that closes both.
func newRueidisClient(addr string) (*uncomplicated.Client, func(), error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, PipelineMultiplex: -1})
	if err != nil {
		return nil, nil, err
	}
	c := uncomplicatedrueidis.NewClient(rc)
	return c, func() { _ = c.Close(); rc.Close() }, nil
}

// newValkeyClient is newRueidisClient over a valkey-go client.
func newValkeyClient(addr string) (*uncomplicated.Client, func(), error) {
	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, PipelineMultiplex: -1})
	if err != nil {
		return nil, nil, err
	}
	c := uncomplicatedvalkey.NewClient(vc)
	return c, func() { _ = c.Close(); vc.Close() }, nil
}

// The peers, each on one client of its own library, as their READMEs
// show, tuned as their docs advise: rueidislock and valkeylock with
// NoLoopTracking, the pools of redsync and redislock sized for the
// goroutines.

type ctxLockerPairer struct{ l ctxLocker }

func (p ctxLockerPairer) pair(ctx context.Context, key string) error {
	_, release, err := p.l.WithContext(ctx, key)
	if err != nil {
		return err
	}
	release()
	return nil
}

// fleetCtxLocker's one Locker, from newLocker, serves every goroutine.
func fleetCtxLocker[L ctxLocker](newLocker func(addr string) (L, error)) func(addr string, goroutines int) (pairer, func(), error) {
	return func(addr string, _ int) (pairer, func(), error) {
		l, err := newLocker(addr)
		if err != nil {
			return nil, nil, err
		}
		return ctxLockerPairer{l}, l.Close, nil
	}
}

type redsyncPairer struct{ rs *redsync.Redsync }

func (p redsyncPairer) pair(ctx context.Context, key string) error {
	m := p.rs.NewMutex(key, redsync.WithRetryDelay(time.Millisecond), redsync.WithTries(1<<30), redsync.WithExpiry(lockTTL))
	if err := m.LockContext(ctx); err != nil {
		return err
	}
	if ok, err := m.UnlockContext(ctx); err != nil || !ok {
		return errors.Join(err, errors.New("redsync: unlock: lock not held"))
	}
	return nil
}

func fleetRedsync(addr string, goroutines int) (pairer, func(), error) {
	pool := newPool(addr, goroutines)
	return redsyncPairer{redsync.New(redsyncredigo.NewPool(pool))}, func() { _ = pool.Close() }, nil
}

type redislockPairer struct{ c *redislock.Client }

func (p redislockPairer) pair(ctx context.Context, key string) error {
	l, err := p.c.Obtain(ctx, key, lockTTL, &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)})
	if err != nil {
		return err
	}
	return l.Release(ctx)
}

func fleetRedislock(addr string, goroutines int) (pairer, func(), error) {
	rdb := redisv9.NewClient(&redisv9.Options{Addr: addr, PoolSize: connsFor(goroutines)})
	return redislockPairer{redislock.New(rdb)}, func() { _ = rdb.Close() }, nil
}
