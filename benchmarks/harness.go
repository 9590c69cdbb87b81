package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// lockTimeout bounds every Lock and Unlock call.
	lockTimeout = 10 * time.Second
	// warmUps is how many lock+unlock cycles each locker makes before a
	// measurement, so that dialing and script loading are not measured.
	warmUps = 3
)

// result is one row of the table. Durations are zero and counts -1 where
// nothing was measured.
type result struct {
	name      string
	steps     handOffSteps // where its hand-offs' time goes (-trace); zero without
	inProcess bool
	floor     bool   // the push floor: a bound, not a peer
	own       bool   // one of our RWMutex and Semaphore rows, not a peer
	ceiling   string // the in-process row it is compared with
	base      string // the row it is compared with, if it is our Mutex on another client or deployment
	cluster   bool   // ran on the Cluster
	capacity  int    // holders allowed at once in the contended run
	failed    error  // the row could not run; nothing below is set

	lockUnlock     time.Duration // uncontended lock+unlock p50
	interleaved    time.Duration // the same, timed in turn with other rows; 0 if not
	cmdsLockUnlock float64       // Redis commands per uncontended lock+unlock

	utilisation            float64 // share of the contended run the lock was held
	waitP99                time.Duration
	acqMin, acqMax         int // acquisitions per worker
	acquisitions           int
	cmdsPerAcq             float64
	cpuPerAcq              time.Duration // Redis CPU time per acquisition
	handoffP50, handoffP99 time.Duration
	handoffs               int
	overlaps               int64

	errors   int // failed Lock and Unlock calls, in both runs
	firstErr error
}

// runRow runs the uncontended and then the contended measurement of r.
func (e *env) runRow(r row, cfg config) result {
	res := result{name: r.name, inProcess: r.inProcess, floor: r.floor, own: r.own, ceiling: r.ceiling, base: r.base, cluster: r.cluster, capacity: r.capacity(cfg)}
	if err := e.uncontended(r, cfg, &res); err != nil {
		res.failed = err
		return res
	}
	if err := e.contended(r, cfg, &res); err != nil {
		res.failed = err
	}
	return res
}

// phase opens n lockers of r, warms them up, measures the Redis commands
// that fn sends to them and the server's CPU time meanwhile (see measure),
// and closes them.
func (e *env) phase(r row, cfg config, n int, fn func([]locker)) (cmds int64, cpu time.Duration, err error) {
	lockers, closeAll, err := r.open(e.addr, r.key(), n, cfg.semPermits())
	if err != nil {
		return 0, 0, err
	}
	defer closeAll()
	if err := warmUp(lockers); err != nil {
		return 0, 0, err
	}
	return e.measure(func() { fn(lockers) })
}

// warmUp makes warmUps lock+unlock cycles with each locker in turn.
func warmUp(lockers []locker) error {
	for _, l := range lockers {
		for range warmUps {
			if err := cycle(l); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	return nil
}

// cycle locks and unlocks l once.
func cycle(l locker) error {
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel() // after Unlock: rueidislock ties the hold to ctx
	if err := l.Lock(ctx); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if err := l.Unlock(ctx); err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

// uncontended times cfg.uncontended lock+unlock cycles of one locker.
func (e *env) uncontended(r row, cfg config, res *result) error {
	times := make([]time.Duration, 0, cfg.uncontended)
	cmds, _, err := e.phase(r, cfg, 1, func(ls []locker) {
		for range cfg.uncontended {
			start := time.Now()
			err := cycle(ls[0])
			if err != nil {
				res.fail(err)
				continue
			}
			times = append(times, time.Since(start))
		}
	})
	if err != nil {
		return err
	}
	res.lockUnlock = percentile(times, 0.5)
	res.cmdsLockUnlock = float64(cmds) / float64(cfg.uncontended)
	return nil
}

// interleave times the uncontended lock+unlock of rs in turn, each on its
// deployment: one locker each, one cycle of each row after the other,
// cfg.uncontended rounds, so that the machine's drift, which moves the
// separate runs of the rows by up to 2x, hits them alike. It returns the
// p50 of each row, in order: 0 for a row that failed, which leaves the
// loop, and whose error it joins to the others'.
func (d *deployments) interleave(rs []row, cfg config) ([]time.Duration, error) {
	lockers := make([]locker, len(rs))
	var errs []error
	for i, r := range rs {
		ls, closeAll, err := r.open(d.on(r.cluster).addr, r.key()+"-interleaved", 1, cfg.semPermits())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, err))
			continue
		}
		defer closeAll()
		if err := warmUp(ls); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, err))
			continue
		}
		lockers[i] = ls[0]
	}
	times := make([][]time.Duration, len(rs))
	for range cfg.uncontended {
		for i, l := range lockers {
			if l == nil {
				continue
			}
			start := time.Now()
			if err := cycle(l); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", rs[i].name, err))
				lockers[i], times[i] = nil, nil
				continue
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	p50s := make([]time.Duration, len(rs))
	for i := range rs {
		if lockers[i] != nil {
			p50s[i] = percentile(times[i], 0.5)
		}
	}
	return p50s, errors.Join(errs...)
}

func (res *result) fail(err error) {
	if res.errors == 0 {
		res.firstErr = err
	}
	res.errors++
}

// contended runs cfg.workers workers on one lock for cfg.duration.
func (e *env) contended(r row, cfg config, res *result) error {
	var stats []workerStats
	var run *contention
	cmds, cpu, err := e.phase(r, cfg, cfg.workers, func(ls []locker) {
		var stop func() *stepTrace
		if cfg.trace {
			stop = traceSteps()
		}
		run, stats = contend(ls, cfg, res.capacity)
		if stop != nil {
			res.steps = stop().steps()
		}
	})
	if err != nil {
		return err
	}
	res.merge(run, stats)
	res.cmdsPerAcq = float64(cmds) / float64(max(res.acquisitions, 1))
	res.cpuPerAcq = cpu / time.Duration(max(res.acquisitions, 1))
	return nil
}

// contention is the state the workers of one contended run share. Times
// are nanoseconds since start, on the monotonic clock.
type contention struct {
	start       time.Time
	end         int64 // acquisitions after end are not counted
	hold, think time.Duration
	capacity    int32        // holders allowed at once: 1 but for a Semaphore or readers
	holders     atomic.Int32 // workers between Lock's return and Unlock
	overlaps    atomic.Int64 // acquisitions that found capacity holders already in
	lastUnlock  atomic.Int64 // when the latest Unlock call began
}

// workerStats is what one worker measured.
type workerStats struct {
	acquisitions int
	held         int64 // ns the worker held the lock before the run's end
	waits        []time.Duration
	handoffs     []time.Duration
	errors       int
	firstErr     error
}

// contend runs one worker per locker, on a lock that lets capacity of them
// in at once, until cfg.duration has passed, and returns once every worker
// has stopped: Locks still waiting at the end are cancelled.
func contend(lockers []locker, cfg config, capacity int) (*contention, []workerStats) {
	c := &contention{start: time.Now(), end: int64(cfg.duration), hold: cfg.hold, think: cfg.think, capacity: int32(capacity)}
	c.lastUnlock.Store(-1)
	ctx, cancel := context.WithDeadline(context.Background(), c.start.Add(cfg.duration))
	defer cancel()
	stats := make([]workerStats, len(lockers))
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Go(func() { stats[i] = c.work(ctx, l) })
	}
	wg.Wait()
	return c, stats
}

func (c *contention) now() int64 { return int64(time.Since(c.start)) }

// work loops Lock, hold, Unlock, think until the run is over.
func (c *contention) work(ctx context.Context, l locker) workerStats {
	var s workerStats
	for !c.over(ctx) {
		c.cycle(ctx, l, &s)
	}
	return s
}

// cycle makes one acquisition and records it in s. Errors once the run is
// over are those of Locks cut short by its end and not counted.
func (c *contention) cycle(ctx context.Context, l locker, s *workerStats) {
	lockCtx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel() // after Unlock: rueidislock ties the hold to lockCtx
	begin := c.now()
	full := c.holders.Load() >= c.capacity // every permit taken as Lock begins
	if err := l.Lock(lockCtx); err != nil {
		if !c.over(ctx) {
			s.fail(err)
			time.Sleep(c.think)
		}
		return
	}
	acquired := c.now()
	prevUnlock := c.lastUnlock.Load() // the previous holder's Unlock call
	if c.holders.Add(1) > c.capacity {
		c.overlaps.Add(1)
	}
	time.Sleep(c.hold)
	c.holders.Add(-1)
	unlocking := c.now()
	c.lastUnlock.Store(unlocking)
	if err := unlock(l); err != nil {
		s.fail(err)
	}
	if acquired < c.end {
		s.record(begin, acquired, min(unlocking, c.end), prevUnlock, c.capacity == 1 || full)
	}
	if !c.over(ctx) {
		time.Sleep(c.think)
	}
}

// over reports whether the run has ended. The clock can pass ctx's deadline
// a moment before ctx's timer fires, and a Lock may notice first.
func (c *contention) over(ctx context.Context) bool {
	return ctx.Err() != nil || c.now() >= c.end
}

// unlock unlocks l with a ctx of its own, as the run's may have ended.
func unlock(l locker) error {
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	return l.Unlock(ctx)
}

// record adds an acquisition: Lock called at begin and returned at
// acquired, Unlock called at released; prevUnlock is the latest Unlock call
// before acquired. It counts as a hand-off when Lock began before
// prevUnlock and, on a lock of several holders, blocked: it began while
// every permit was taken.
func (s *workerStats) record(begin, acquired, released, prevUnlock int64, blocked bool) {
	s.acquisitions++
	s.held += released - acquired
	s.waits = append(s.waits, time.Duration(acquired-begin))
	if blocked && prevUnlock > begin {
		s.handoffs = append(s.handoffs, time.Duration(acquired-prevUnlock))
	}
}

func (s *workerStats) fail(err error) {
	if s.errors == 0 {
		s.firstErr = err
	}
	s.errors++
}

// merge sums up the workers' stats of run c.
func (res *result) merge(c *contention, stats []workerStats) {
	var held int64
	var waits, handoffs []time.Duration
	res.acqMin = stats[0].acquisitions
	for _, s := range stats {
		held += s.held
		waits = append(waits, s.waits...)
		handoffs = append(handoffs, s.handoffs...)
		res.acquisitions += s.acquisitions
		res.acqMin = min(res.acqMin, s.acquisitions)
		res.acqMax = max(res.acqMax, s.acquisitions)
		if res.errors == 0 {
			res.firstErr = s.firstErr
		}
		res.errors += s.errors
	}
	res.utilisation = float64(held) / (float64(c.capacity) * float64(c.end))
	res.waitP99 = percentile(waits, 0.99)
	res.handoffP50 = percentile(handoffs, 0.5)
	res.handoffP99 = percentile(handoffs, 0.99)
	res.handoffs = len(handoffs)
	res.overlaps = c.overlaps.Load()
}

// percentile returns the p quantile of ds (nearest rank), 0 if ds is empty.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(float64(len(s))*p)) - 1
	return s[min(max(i, 0), len(s)-1)]
}
