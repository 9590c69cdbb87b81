package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// The read-mostly mix: -workers workers, each a simulated process with its
// own client, loop on one lock for -duration, each time reading (RLock,
// hold, RUnlock) with probability -reads and writing (Lock, hold, Unlock)
// otherwise, then thinking.

// An rwLocker is one simulated process's handle on the mix's lock, used by
// one goroutine at a time.
type rwLocker interface {
	locker // the writer's side
	RLock(ctx context.Context) error
	RUnlock(ctx context.Context) error
}

// A mixRow is one lock of the mix table.
type mixRow struct {
	name      string
	inProcess bool
	open      func(addr, key string, n int) (lockers []rwLocker, closeAll func(), err error)
}

func (r mixRow) key() string { return row{name: r.name}.key() }

const (
	mixRW    = "mix " + ownRW + "Mutex"
	mixMutex = "mix uncomplicated Mutex"
	mixSync  = "mix sync.RWMutex"
)

func allMixRows() []mixRow {
	return []mixRow{
		{name: mixRW, open: openMixRW},
		{name: mixMutex, open: openMixMutex},
		{name: mixSync, inProcess: true, open: openMixSync},
	}
}

// openMixRW gives each locker an RWMutex on a Client of its own.
func openMixRW(addr, key string, n int) ([]rwLocker, func(), error) {
	return openClients(addr, n, func(c *uncomplicated.Client) (rwLocker, error) {
		return uncomplicated.NewRW(c, uncomplicated.Named(key))
	})
}

// openMixMutex gives each locker a Mutex on a Client of its own, which
// readers lock too: what the mix costs without a read/write lock.
func openMixMutex(addr, key string, n int) ([]rwLocker, func(), error) {
	return openClients(addr, n, func(c *uncomplicated.Client) (rwLocker, error) {
		m, err := uncomplicated.New(c, uncomplicated.Named(key))
		return exclusiveLocker{m}, err
	})
}

// exclusiveLocker reads under the write lock.
type exclusiveLocker struct{ locker }

func (l exclusiveLocker) RLock(ctx context.Context) error   { return l.Lock(ctx) }
func (l exclusiveLocker) RUnlock(ctx context.Context) error { return l.Unlock(ctx) }

// openMixSync shares one sync.RWMutex among the lockers: the ceiling.
func openMixSync(_, _ string, n int) ([]rwLocker, func(), error) {
	mu := new(sync.RWMutex)
	lockers := make([]rwLocker, n)
	for i := range lockers {
		lockers[i] = syncRWLocker{mu}
	}
	return lockers, func() {}, nil
}

// syncRWLocker ignores ctx.
type syncRWLocker struct{ mu *sync.RWMutex }

func (l syncRWLocker) Lock(context.Context) error    { l.mu.Lock(); return nil }
func (l syncRWLocker) Unlock(context.Context) error  { l.mu.Unlock(); return nil }
func (l syncRWLocker) RLock(context.Context) error   { l.mu.RLock(); return nil }
func (l syncRWLocker) RUnlock(context.Context) error { l.mu.RUnlock(); return nil }

// mixResult is one row of the mix table.
type mixResult struct {
	name      string
	inProcess bool
	failed    error
	duration  time.Duration
	reads     workerStats // every worker's reads, merged
	writes    workerStats
	cmds      int64
	overlaps  int64
}

func (m *mixResult) errors() (int, error) {
	if m.reads.errors > 0 {
		return m.reads.errors + m.writes.errors, m.reads.firstErr
	}
	return m.writes.errors, m.writes.firstErr
}

// perSecond returns acquisitions per second of the run.
func (m *mixResult) perSecond(s workerStats) float64 {
	return float64(s.acquisitions) / m.duration.Seconds()
}

// runMix opens cfg.workers lockers of r, warms them up on both sides and
// runs the mix on them.
func (e *env) runMix(r mixRow, cfg config) mixResult {
	res := mixResult{name: r.name, inProcess: r.inProcess, duration: cfg.duration}
	lockers, closeAll, err := r.open(e.addr, r.key(), cfg.workers)
	if err != nil {
		res.failed = err
		return res
	}
	defer closeAll()
	if err := warmUpMix(lockers); err != nil {
		res.failed = err
		return res
	}
	var m *mixing
	var stats []mixStats
	res.cmds, err = e.count(func() { m, stats = mix(lockers, cfg) })
	if err != nil {
		res.failed = err
		return res
	}
	for _, s := range stats {
		res.reads.merge(s.reads)
		res.writes.merge(s.writes)
	}
	res.overlaps = m.overlaps.Load()
	return res
}

func warmUpMix(lockers []rwLocker) error {
	ls := make([]locker, 0, 2*len(lockers))
	for _, l := range lockers {
		ls = append(ls, l, readSide{l})
	}
	return warmUp(ls)
}

// readSide locks the reader's side of l.
type readSide struct{ l rwLocker }

func (r readSide) Lock(ctx context.Context) error   { return r.l.RLock(ctx) }
func (r readSide) Unlock(ctx context.Context) error { return r.l.RUnlock(ctx) }

// writerUnit is one writer in mixing.state; readers count in the low bits.
const writerUnit = 1 << 32

// mixing is the state the workers of one mix share: the contention's
// clock, and who holds the lock.
// contention.overlaps counts the acquisitions that found a writer in, and
// those of writers that found anyone.
type mixing struct {
	contention
	reads float64      // the share of reads
	state atomic.Int64 // writers × writerUnit + readers, between acquisition and release
}

// enter records a holder that has just acquired, and reports whether it
// overlaps another: a writer with anyone, a reader with a writer. One
// atomic add decides it, so no interleaving of two holders hides an
// overlap.
func (m *mixing) enter(write bool) (overlap bool) {
	if write {
		return m.state.Add(writerUnit) != writerUnit
	}
	return m.state.Add(1) >= writerUnit
}

// leave records a holder about to release.
func (m *mixing) leave(write bool) {
	if write {
		m.state.Add(-writerUnit)
	} else {
		m.state.Add(-1)
	}
}

type mixStats struct{ reads, writes workerStats }

// mix runs one worker per locker until cfg.duration has passed. Worker i
// draws its reads and writes from a generator seeded with i, so every row
// of a run sees the same sequences.
func mix(lockers []rwLocker, cfg config) (*mixing, []mixStats) {
	m := &mixing{contention: contention{start: time.Now(), end: int64(cfg.duration), hold: cfg.hold, think: cfg.think}, reads: cfg.reads}
	ctx, cancel := context.WithDeadline(context.Background(), m.start.Add(cfg.duration))
	defer cancel()
	stats := make([]mixStats, len(lockers))
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 0x5eed))
			for !m.over(ctx) {
				if rng.Float64() < m.reads {
					m.cycle(ctx, readSide{l}, false, &stats[i].reads)
				} else {
					m.cycle(ctx, l, true, &stats[i].writes)
				}
			}
		})
	}
	wg.Wait()
	return m, stats
}

// cycle makes one acquisition of l, a writer's or a reader's, and records
// it in s, as contention.cycle does.
func (m *mixing) cycle(ctx context.Context, l locker, write bool, s *workerStats) {
	lockCtx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	begin := m.now()
	if err := l.Lock(lockCtx); err != nil {
		if !m.over(ctx) {
			s.fail(err)
			time.Sleep(m.think)
		}
		return
	}
	acquired := m.now()
	if m.enter(write) {
		m.overlaps.Add(1)
	}
	time.Sleep(m.hold)
	m.leave(write)
	released := m.now()
	if err := unlock(l); err != nil {
		s.fail(err)
	}
	if acquired < m.end {
		s.record(begin, acquired, min(released, m.end), 0, false)
	}
	if !m.over(ctx) {
		time.Sleep(m.think)
	}
}

// merge adds the acquisitions and errors of o to s.
func (s *workerStats) merge(o workerStats) {
	s.acquisitions += o.acquisitions
	s.held += o.held
	s.waits = append(s.waits, o.waits...)
	s.handoffs = append(s.handoffs, o.handoffs...)
	if s.errors == 0 {
		s.firstErr = o.firstErr
	}
	s.errors += o.errors
}

var mixColumns = []string{
	"lock", "reads / s", "writes / s", "read p99 wait ms", "write p50 wait ms", "write p99 wait ms", "write max wait ms",
	"cmds / acquisition", "errors", "overlaps",
}

func printMix(w io.Writer, cfg config, results []mixResult) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintf(w, "\nRead-mostly mix: %d workers (one client each) for %v, each acquisition a read with probability %.2f, else a write; hold %v, think %v\n\n",
		cfg.workers, cfg.duration, cfg.reads, cfg.hold, cfg.think)
	rows := [][]string{mixColumns}
	var notes []string
	for _, r := range results {
		rows = append(rows, r.cells())
		if r.failed != nil {
			notes = append(notes, fmt.Sprintf("%s: could not run: %v", r.name, r.failed))
		} else if n, first := r.errors(); n > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d errors, the first: %v", r.name, n, first))
		}
	}
	writeMarkdown(w, rows)
	fmt.Fprintln(w, "\nThe Mutex row reads under the exclusive lock. An overlap is a writer holding with anyone, or a reader with a writer.")
	for _, n := range notes {
		fmt.Fprintln(w, "- "+n)
	}
	printMixRatios(w, results)
}

func (r mixResult) cells() []string {
	if r.failed != nil {
		c := []string{r.name}
		for range mixColumns[1:] {
			c = append(c, "-")
		}
		return c
	}
	cmds := "-"
	if !r.inProcess {
		cmds = fmt.Sprintf("%.2f", float64(r.cmds)/float64(max(r.reads.acquisitions+r.writes.acquisitions, 1)))
	}
	n, _ := r.errors()
	return []string{
		r.name,
		fmt.Sprintf("%.0f", r.perSecond(r.reads)),
		fmt.Sprintf("%.0f", r.perSecond(r.writes)),
		millis(percentile(r.reads.waits, 0.99)),
		millis(percentile(r.writes.waits, 0.5)),
		millis(percentile(r.writes.waits, 0.99)),
		millis(percentile(r.writes.waits, 1)),
		cmds,
		fmt.Sprint(n),
		fmt.Sprint(r.overlaps),
	}
}

// printMixRatios compares the RWMutex's throughput with the Mutex's and
// the ceiling's.
func printMixRatios(w io.Writer, results []mixResult) {
	us, ok := findMix(results, mixRW)
	if !ok {
		return
	}
	for _, other := range []string{mixMutex, mixSync} {
		o, found := findMix(results, other)
		if !found || o.reads.acquisitions == 0 || o.writes.acquisitions == 0 {
			continue
		}
		fmt.Fprintf(w, "- %s ÷ %s: reads/s %.2f×, writes/s %.2f×, write p99 wait %s\n", mixRW, other,
			float64(us.reads.acquisitions)/float64(o.reads.acquisitions),
			float64(us.writes.acquisitions)/float64(o.writes.acquisitions),
			ratio(percentile(us.writes.waits, 0.99), percentile(o.writes.waits, 0.99)))
	}
}

func findMix(results []mixResult, name string) (mixResult, bool) {
	for _, r := range results {
		if r.name == name && r.failed == nil {
			return r, true
		}
	}
	return mixResult{}, false
}

// ratio returns a ÷ b as "1.23×", or "-" when b is 0.
func ratio[T time.Duration | float64](a, b T) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}
