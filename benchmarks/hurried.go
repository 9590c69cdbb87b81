package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	"github.com/gomodule/redigo/redis"
	redisv9 "github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// The hurried workload (-workload hurried) is a web server's: callers
// with deadlines of milliseconds, each making a lock value of its own.
// hurriedGoroutines goroutines of one process share one client of the
// row's library; goroutine i locks lock i % hurriedLocks, again and again
// for -duration (default 4s here): a new lock value for every call (our
// Mutex from New, redsync's Mutex from NewMutex; redislock and rueidislock
// have none before the lock is taken), Lock under a ctx of a timeout drawn
// uniformly from [0, hurriedPatience), and, if it got the lock, Unlock at
// once under context.Background(). Each row runs the load twice, from a
// flushed Redis each time: hurried, and patient, with every Lock under a
// ctx of patientTimeout, the baseline that hurried ÷ patient divides by.

const (
	hurriedGoroutines = 100
	hurriedLocks      = 10
	// hurriedPatience bounds the hurried callers' timeouts: each draws one
	// uniformly from [0, hurriedPatience).
	hurriedPatience = 20 * time.Millisecond
	// patientTimeout is every Lock's timeout in the patient baseline.
	patientTimeout = 2 * time.Second
	// hurriedDuration is -duration's default for this workload.
	hurriedDuration = 4 * time.Second
	// hurriedWarmUp is how long the patient load runs, unmeasured, before
	// each measured run, so that the pools have dialled and the scripts
	// are loaded.
	hurriedWarmUp = 200 * time.Millisecond
	// settleWithin bounds the wait, after a run, for the process to be back
	// to its goroutines from before the run opened its client.
	settleWithin = 15 * time.Second
	// goroutineEvery and keysEvery are how often a run samples the
	// process's goroutines and Redis's keys (DBSIZE).
	goroutineEvery = 10 * time.Millisecond
	keysEvery      = 100 * time.Millisecond
)

// A hurriedRow is one lock library on the hurried workload.
type hurriedRow struct {
	name string
	peer bool
	// open returns the row's acquirer on the server at addr, and a
	// function that closes every client and pool it uses.
	open func(addr string) (acquirer, func(), error)
}

// An acquirer locks and at once unlocks the locks of the workload. It is
// safe for concurrent use.
type acquirer interface {
	// acquire makes a new lock value for lock k, locks it under ctx and,
	// if it got the lock, unlocks it under context.Background(). It
	// reports whether it got the lock, with Lock's error if not and
	// Unlock's if so.
	acquire(ctx context.Context, k int) (bool, error)
}

func allHurriedRows() []hurriedRow {
	return []hurriedRow{
		{name: "uncomplicated quick-start pool", open: hurriedRedigo(quickStartPool)},
		{name: "uncomplicated pool of 128", open: hurriedRedigo(pool128)},
		{name: ownGoredis, open: hurriedGoredis},
		{name: ownRueidis, open: hurriedOver(newRueidisClient)},
		{name: ownValkey, open: hurriedOver(newValkeyClient)},
		{name: "redsync 1ms", peer: true, open: hurriedRedsync},
		{name: "redislock 1ms", peer: true, open: hurriedRedislock},
		{name: "rueidislock", peer: true, open: hurriedCtxLocker(newRueidislock)},
		{name: "valkeylock", peer: true, open: hurriedCtxLocker(newValkeylock)},
	}
}

// selectedHurried returns the hurried rows -only asks for, in table order.
func (cfg config) selectedHurried() []hurriedRow {
	var rows []hurriedRow
	for _, r := range allHurriedRows() {
		if cfg.wants(r.name) {
			rows = append(rows, r)
		}
	}
	return rows
}

// hurriedResult is the measure of one row: its hurried run and its
// patient one.
type hurriedResult struct {
	name             string
	peer             bool
	hurried, patient hurriedRun
}

// hurriedRun is the measure of one run of the load.
type hurriedRun struct {
	calls, acquisitions int64         // Lock calls, and those that got the lock
	gaveUp              int64         // Lock calls that failed once their ctx had ended (see ended)
	errors              int64         // other failed Locks, and failed Unlocks
	firstErr            error         // the first of errors
	elapsed             time.Duration // from the start to the last caller's return
	cpuPerAcq           time.Duration // Redis CPU (INFO cpu) per acquisition
	maxGoroutines       int           // the process's, sampled every goroutineEvery
	maxKeys             int64         // Redis's (DBSIZE), sampled every keysEvery
	connections         int64         // total_connections_received, after less before
	// settled is how long after the last caller returned the process was
	// back to its goroutines from before the run opened its client (the
	// client closed meanwhile); -1 if it was not within settleWithin.
	settled time.Duration
	left    int // goroutines above that count when the wait gave up
	err     error
}

// rate is the acquisitions per second of the run.
func (r hurriedRun) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.acquisitions) / r.elapsed.Seconds()
}

// runHurried runs r hurried, then patient.
func (e *env) runHurried(r hurriedRow, cfg config) hurriedResult {
	return hurriedResult{name: r.name, peer: r.peer,
		hurried: e.hurriedRun(r, cfg.duration, hurriedTimeout),
		patient: e.hurriedRun(r, cfg.duration, patient)}
}

// A timeout draws the timeout of one Lock call.
type timeout func(*rand.Rand) time.Duration

func hurriedTimeout(rnd *rand.Rand) time.Duration {
	return time.Duration(rnd.Int64N(int64(hurriedPatience)))
}

func patient(*rand.Rand) time.Duration { return patientTimeout }

// hurriedRun flushes the server, opens r's client, warms it up, runs the
// load for d with each Lock's timeout drawn by t, closes the client and
// waits for the process's goroutines to settle.
func (e *env) hurriedRun(r hurriedRow, d time.Duration, t timeout) hurriedRun {
	var run hurriedRun
	if err := e.flush(); err != nil {
		run.err = err
		return run
	}
	before := runtime.NumGoroutine()
	a, closeAll, err := r.open(e.addr)
	if err != nil {
		run.err = err
		return run
	}
	closed := false
	defer func() {
		if !closed {
			closeAll()
		}
	}()
	var warm hurriedRun
	if hurry(a, hurriedWarmUp, patient, &warm); warm.errors > 0 || warm.acquisitions == 0 {
		run.err = fmt.Errorf("warm-up: %d acquisitions, %d errors, the first: %v", warm.acquisitions, warm.errors, warm.firstErr)
		return run
	}
	conns, err := e.infoSum("stats", "total_connections_received")
	if err != nil {
		run.err = err
		return run
	}
	var start, returned time.Time
	_, cpu, err := e.measure(func() {
		stop := e.watchPeaks(&run)
		start = time.Now()
		hurry(a, d, t, &run)
		returned = time.Now()
		run.elapsed = returned.Sub(start)
		if err := stop(); err != nil {
			run.err = err
		}
	})
	if err == nil {
		var after int64
		after, err = e.infoSum("stats", "total_connections_received")
		run.connections = after - conns
	}
	run.err = errors.Join(run.err, err)
	run.cpuPerAcq = cpu / time.Duration(max(run.acquisitions, 1))
	closeAll()
	closed = true
	run.settled, run.left = settle(before, returned)
	return run
}

// flush deletes every key of every node.
func (e *env) flush() error {
	for _, n := range e.nodes {
		if _, err := n.stats.Do("FLUSHALL"); err != nil {
			return fmt.Errorf("%s: FLUSHALL: %w", n.addr, err)
		}
	}
	return nil
}

// watchPeaks records into run the most goroutines of the process and keys of
// e until the returned stop is called, which returns the first error of
// reading the keys. Until then it has e's stats connections to itself.
func (e *env) watchPeaks(run *hurriedRun) (stop func() error) {
	done := make(chan struct{})
	var err error
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(goroutineEvery)
		defer tick.Stop()
		lastKeys := time.Time{}
		for {
			run.maxGoroutines = max(run.maxGoroutines, runtime.NumGoroutine())
			if now := time.Now(); err == nil && now.Sub(lastKeys) >= keysEvery {
				lastKeys = now
				var counts []int64
				if counts, err = e.keys(); err == nil {
					run.maxKeys = max(run.maxKeys, sum(counts))
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() error {
		close(done)
		wg.Wait()
		return err
	}
}

func sum(ns []int64) int64 {
	var s int64
	for _, n := range ns {
		s += n
	}
	return s
}

// settle waits until the process has at most want goroutines, up to
// settleWithin after since, and returns how long after since that was,
// or -1 and how many more it still had.
func settle(want int, since time.Time) (time.Duration, int) {
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return time.Since(since), 0
		}
		if time.Since(since) >= settleWithin {
			return -1, n - want
		}
		time.Sleep(goroutineEvery)
	}
}

// hurry runs hurriedGoroutines callers on a for d, goroutine i on lock
// i % hurriedLocks, each Lock under a ctx of a timeout drawn by t, and
// adds their counts to run. A Lock that fails once its ctx has ended, or
// its deadline passed, gave up; any other failure is an error.
func hurry(a acquirer, d time.Duration, t timeout, run *hurriedRun) {
	end := time.Now().Add(d)
	var calls, acquisitions, gaveUp, errs atomic.Int64
	var mu sync.Mutex // guards run.firstErr
	var wg sync.WaitGroup
	for g := range hurriedGoroutines {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(g), 2))
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), t(rnd))
				got, err := a.acquire(ctx, g%hurriedLocks)
				calls.Add(1)
				switch {
				case got:
					acquisitions.Add(1)
				case ended(ctx):
					gaveUp.Add(1)
					err = nil
				}
				cancel() // after the unlock: rueidislock ties the hold to ctx
				if err != nil {
					errs.Add(1)
					mu.Lock()
					if run.firstErr == nil {
						run.firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	run.calls += calls.Load()
	run.acquisitions += acquisitions.Load()
	run.gaveUp += gaveUp.Load()
	run.errors += errs.Load()
}

// ended reports whether ctx has ended or its deadline passed: a lock may
// see the deadline pass a moment before ctx's timer ends it.
func ended(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(deadline)
}

// runHurriedWorkload runs the hurried workload's rows on the server and
// prints them.
func runHurriedWorkload(d *deployments, cfg config, stdout, stderr io.Writer) error {
	var results []hurriedResult
	for _, r := range cfg.selectedHurried() {
		fmt.Fprintf(stderr, "running %s on the hurried workload\n", r.name)
		results = append(results, d.server.runHurried(r, cfg))
	}
	return report(stdout, d, cfg, results, hurriedResult.json, printHurried)
}

// printHurried prints the hurried runs, the patient ones, and our best
// row's acquisitions per second against the best peer's.
func printHurried(w io.Writer, cfg config, results []hurriedResult) {
	fmt.Fprintf(w, "\nHurried callers: %d goroutines of one process sharing one client, goroutine i locking lock i %% %d with a new lock value each call, "+
		"under a timeout drawn uniformly from [0, %v), and unlocking at once under context.Background(), for %v; "+
		"each row from a flushed Redis, after a %v warm-up of the patient load.\n\n",
		hurriedGoroutines, hurriedLocks, hurriedPatience, cfg.duration, hurriedWarmUp)
	header := []string{"row", "acquisitions", "acquisitions/s", "hurried ÷ patient", "Lock calls", "gave up", "errors",
		"most goroutines", "new connections", "most keys", "Redis CPU µs/acq", "goroutines back after"}
	rows := [][]string{header}
	for _, r := range results {
		rows = append(rows, r.hurried.cells(r.name, ratio(r.hurried.rate(), r.patient.rate())))
	}
	writeMarkdown(w, rows)
	fmt.Fprintf(w, "\nThe patient baseline: the same load, every Lock under a timeout of %v.\n\n", patientTimeout)
	rows = [][]string{append(header[:3:3], header[4:]...)}
	for _, r := range results {
		c := r.patient.cells(r.name, "")
		rows = append(rows, append(c[:3:3], c[4:]...))
	}
	writeMarkdown(w, rows)
	fmt.Fprintln(w, "\nGave up: Lock calls that failed once their ctx had ended or its deadline passed; errors: other failures, of Lock or Unlock. "+
		"Most goroutines: the process's, every 10 ms; most keys: DBSIZE every 100 ms; new connections: INFO total_connections_received over the run. "+
		"Goroutines back after: from the last caller's return, the client closed meanwhile, until the process has no more goroutines than before the run opened its client (given up after 15 s).")
	for _, which := range []struct {
		name string
		run  func(hurriedResult) hurriedRun
	}{{"hurried", func(r hurriedResult) hurriedRun { return r.hurried }}, {"patient", func(r hurriedResult) hurriedRun { return r.patient }}} {
		if line := bestAgainstPeers(results, which.run); line != "" {
			fmt.Fprintf(w, "%s: %s\n", which.name, line)
		}
	}
	for _, r := range results {
		for _, run := range []struct {
			name string
			r    hurriedRun
		}{{"hurried", r.hurried}, {"patient", r.patient}} {
			switch {
			case run.r.err != nil:
				fmt.Fprintf(w, "- %s, %s: failed: %v\n", r.name, run.name, run.r.err)
			case run.r.errors > 0:
				fmt.Fprintf(w, "- %s, %s: %d errors, the first: %v\n", r.name, run.name, run.r.errors, run.r.firstErr)
			}
		}
	}
}

// bestAgainstPeers says how our row of the most acquisitions per second
// compares with the peer of the most, in the runs that run picks; "" when
// either side has no row that ran.
func bestAgainstPeers(results []hurriedResult, run func(hurriedResult) hurriedRun) string {
	var ours, peer *hurriedResult
	for i, r := range results {
		if run(r).err != nil {
			continue
		}
		best := &ours
		if r.peer {
			best = &peer
		}
		if *best == nil || run(r).rate() > run(**best).rate() {
			*best = &results[i]
		}
	}
	if ours == nil || peer == nil {
		return ""
	}
	return fmt.Sprintf("our best row, %s, makes %.0f acquisitions/s, %s the best peer's, %s (%.0f/s).",
		ours.name, run(*ours).rate(), ratio(run(*ours).rate(), run(*peer).rate()), peer.name, run(*peer).rate())
}

// cells returns the run's cells of the table, vsPatient its hurried ÷
// patient.
func (r hurriedRun) cells(name, vsPatient string) []string {
	if r.err != nil {
		return []string{name, "failed", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"}
	}
	back := "> 15 s (" + strconv.Itoa(r.left) + " more)"
	if r.settled >= 0 {
		back = millis(r.settled) + " ms"
	}
	return []string{name, strconv.FormatInt(r.acquisitions, 10), fmt.Sprintf("%.0f", r.rate()), vsPatient,
		strconv.FormatInt(r.calls, 10), strconv.FormatInt(r.gaveUp, 10), strconv.FormatInt(r.errors, 10),
		strconv.Itoa(r.maxGoroutines), strconv.FormatInt(r.connections, 10), strconv.FormatInt(r.maxKeys, 10),
		micros(r.cpuPerAcq), back}
}

// hurriedJSON is a row of the hurried workload as one line of JSON: its
// hurried run, its patient one, and hurried ÷ patient acquisitions per
// second.
type hurriedJSON struct {
	Name              string         `json:"name"`
	Hurried           hurriedRunJSON `json:"hurried"`
	Patient           hurriedRunJSON `json:"patient"`
	HurriedPerPatient float64        `json:"hurried_per_patient"` // 0 when the patient run made none
}

type hurriedRunJSON struct {
	Acquisitions       int64   `json:"acquisitions"`
	AcquisitionsPerSec float64 `json:"acquisitions_per_second"`
	LockCalls          int64   `json:"lock_calls"`
	GaveUp             int64   `json:"gave_up"`
	Errors             int64   `json:"errors"`
	MaxGoroutines      int     `json:"max_goroutines"`
	NewConnections     int64   `json:"new_connections"`
	MaxKeys            int64   `json:"max_keys"`
	CPUPerAcq          float64 `json:"redis_cpu_us_per_acquisition"`
	GoroutinesBackMs   float64 `json:"goroutines_back_after_ms"` // -1 when not within 15 s
	GoroutinesLeft     int     `json:"goroutines_left"`
	Failed             string  `json:"failed,omitempty"`
}

func (r hurriedResult) json() hurriedJSON {
	j := hurriedJSON{Name: r.name, Hurried: r.hurried.json(), Patient: r.patient.json()}
	if p := r.patient.rate(); p > 0 {
		j.HurriedPerPatient = r.hurried.rate() / p
	}
	return j
}

func (r hurriedRun) json() hurriedRunJSON {
	if r.err != nil {
		return hurriedRunJSON{Failed: r.err.Error()}
	}
	back := -1.0
	if r.settled >= 0 {
		back = float64(r.settled) / float64(time.Millisecond)
	}
	return hurriedRunJSON{Acquisitions: r.acquisitions, AcquisitionsPerSec: r.rate(), LockCalls: r.calls, GaveUp: r.gaveUp,
		Errors: r.errors, MaxGoroutines: r.maxGoroutines, NewConnections: r.connections, MaxKeys: r.maxKeys,
		CPUPerAcq: float64(r.cpuPerAcq) / float64(time.Microsecond), GoroutinesBackMs: back, GoroutinesLeft: r.left}
}

// Our rows: one Client, a Mutex made with New for each call, as a handler
// of requests makes one for the object of each.

// account is the object whose lock the callers take: lock:main.account:<k>.
type account int

func (a account) ID() int { return int(a) }

type mutexAcquirer struct{ c *uncomplicated.Client }

func (a mutexAcquirer) acquire(ctx context.Context, k int) (bool, error) {
	m, err := uncomplicated.New(a.c, account(k))
	if err != nil {
		return false, err
	}
	if err := m.Lock(ctx); err != nil {
		return false, err
	}
	return true, m.Unlock(context.Background())
}

// quickStartPool is the README's: 128 idle connections, no cap.
func quickStartPool(addr string) *redis.Pool {
	return &redis.Pool{MaxIdle: 128, IdleTimeout: 5 * time.Minute, DialContext: dialer(addr)}
}

// pool128 has room for every goroutine of the workload, and a few more.
func pool128(addr string) *redis.Pool {
	return &redis.Pool{MaxIdle: 128, MaxActive: 128, Wait: true, DialContext: dialer(addr)}
}

func hurriedRedigo(newPool func(addr string) *redis.Pool) func(addr string) (acquirer, func(), error) {
	return func(addr string) (acquirer, func(), error) {
		pool := newPool(addr)
		c := uncomplicated.NewClient(redigo.New(pool))
		return mutexAcquirer{c}, func() { _ = c.Close(); _ = pool.Close() }, nil
	}
}

// hurriedGoredis has go-redis's default options but for
// ContextTimeoutEnabled, as the README advises.
func hurriedGoredis(addr string) (acquirer, func(), error) {
	rdb := redisv9.NewClient(&redisv9.Options{Addr: addr, ContextTimeoutEnabled: true})
	c := goredis.NewClient(rdb)
	return mutexAcquirer{c}, func() { _ = c.Close(); _ = rdb.Close() }, nil
}

// hurriedOver builds the client with newClient, as the fleet workload's
// rueidis and valkey-go rows do.
func hurriedOver(newClient func(addr string) (*uncomplicated.Client, func(), error)) func(addr string) (acquirer, func(), error) {
	return func(addr string) (acquirer, func(), error) {
		c, closeAll, err := newClient(addr)
		if err != nil {
			return nil, nil, err
		}
		return mutexAcquirer{c}, closeAll, nil
	}
}

// The peers, with the settings of their contended and fleet rows.

type redsyncAcquirer struct{ rs *redsync.Redsync }

func (a redsyncAcquirer) acquire(ctx context.Context, k int) (bool, error) {
	m := a.rs.NewMutex("hurried-"+strconv.Itoa(k), redsync.WithRetryDelay(time.Millisecond), redsync.WithTries(math.MaxInt32), redsync.WithExpiry(lockTTL))
	if err := m.LockContext(ctx); err != nil {
		return false, err
	}
	ok, err := m.UnlockContext(context.Background())
	if err == nil && !ok {
		err = errors.New("redsync: unlock: lock not held")
	}
	return true, err
}

func hurriedRedsync(addr string) (acquirer, func(), error) {
	pool := pool128(addr)
	return redsyncAcquirer{redsync.New(redsyncredigo.NewPool(pool))}, func() { _ = pool.Close() }, nil
}

type redislockAcquirer struct{ c *redislock.Client }

func (a redislockAcquirer) acquire(ctx context.Context, k int) (bool, error) {
	l, err := a.c.Obtain(ctx, "hurried-"+strconv.Itoa(k), lockTTL, &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)})
	if err != nil {
		return false, err
	}
	return true, l.Release(context.Background())
}

// hurriedRedislock has go-redis's default options.
func hurriedRedislock(addr string) (acquirer, func(), error) {
	rdb := redisv9.NewClient(&redisv9.Options{Addr: addr})
	return redislockAcquirer{redislock.New(rdb)}, func() { _ = rdb.Close() }, nil
}

type ctxLockerAcquirer struct{ l ctxLocker }

func (a ctxLockerAcquirer) acquire(ctx context.Context, k int) (bool, error) {
	_, release, err := a.l.WithContext(ctx, "hurried-"+strconv.Itoa(k))
	if err != nil {
		return false, err
	}
	release()
	return true, nil
}

// hurriedCtxLocker has one Locker from newLocker: rueidislock's or
// valkeylock's.
func hurriedCtxLocker[L ctxLocker](newLocker func(addr string) (L, error)) func(addr string) (acquirer, func(), error) {
	return func(addr string) (acquirer, func(), error) {
		l, err := newLocker(addr)
		if err != nil {
			return nil, nil, err
		}
		return ctxLockerAcquirer{l}, l.Close, nil
	}
}
