// Command benchmarks compares uncomplicated with other Redis locks for Go
// (redsync, bsm/redislock, rueidislock, valkeylock) and with a sync.Mutex
// ceiling, all on one redis-server that it starts itself (redis-server must
// be on PATH), and measures our RWMutex and Semaphore beside our Mutex:
//
//	cd benchmarks && go run . [-workload fleet [-keys 10000] [-goroutines 64] [-rounds 3]]
//	    [-workload hurried] [-duration 3s] [-workers 8] [-hold 1ms] [-think 1ms]
//	    [-uncontended 2000] [-only 'uncomplicated,redsync 1ms'] [-scale 10000]
//	    [-scale-cluster 0] [-permits 4] [-reads 0.9] [-json]
//
// It prints a header describing the machine, one markdown table with a row
// per lock, the ratios of uncomplicated to the best other Redis lock, the
// ratios of our RWMutex and Semaphore rows to our Mutex, the ratios of our
// Mutex on go-redis and on a Cluster to their bases, the table of the
// read-mostly mix, and the results of the scale runs (-scale 0 skips the
// one on the server; -scale-cluster N runs one on a Cluster). Progress
// goes to stderr.
//
// With -workload fleet it runs instead the fleet workload (fleet.go): many
// objects, each rarely contended. -goroutines goroutines of one process
// share one client of each row's library and lock then unlock random keys
// of -keys, for -duration, every row once a round for -rounds rounds
// (each of ours next to its peer, first and second in turn); it prints
// each row's medians (Redis CPU and commands per pair, pairs per second)
// and each of ours against the peer on the same client, the median of
// the rounds' ratios: rueidis against rueidislock, valkey-go against
// valkeylock, redigo against redsync 1ms, go-redis against redislock 1ms.
// With -scale-client rueidis, the scale runs go over the rueidis module.
//
// With -workload hurried it runs instead the hurried workload (hurried.go),
// a web server's: 100 goroutines of one process share one client and lock
// 10 locks, goroutine i lock i % 10, with a new lock value for each call
// (our Mutex from New, redsync's from NewMutex) and each Lock under a
// timeout drawn uniformly from [0, 20ms); a caller that got the lock
// unlocks it at once under context.Background(). Every row runs it for
// -duration (default 4s for this workload), and again with every Lock under
// 2s, the patient baseline, each run from a flushed Redis after a 200ms
// warm-up. It prints for both runs each row's acquisitions and
// acquisitions per second (and hurried ÷ patient), Lock calls, the calls
// that gave up when their ctx ended, other errors, the most goroutines of
// the process (sampled every 10ms), the connections Redis accepted (INFO
// total_connections_received), the most keys in Redis (DBSIZE every
// 100ms), Redis CPU per acquisition, and how long after the run the
// process, its client closed, was back to its goroutines from before the
// run (waiting up to 15s); then our best row's acquisitions per second
// against the best peer's. Rows: our Mutex on redigo with the README's
// quick-start pool (128 idle connections, no cap) and with a pool of 128
// (MaxActive 128, Wait), on go-redis with default options but
// ContextTimeoutEnabled, and on rueidis and on valkey-go as the fleet
// workload builds them; redsync 1ms on a redigo pool of 128, redislock 1ms
// on a go-redis client of default options, rueidislock and valkeylock.
//
// Every peer runs at its best documented setting, as a user who tuned it
// would: rueidislock and valkeylock with KeyMajority 1 (one server) and
// NoLoopTracking, which needs Redis 7.0.5 or later (the run warns when the
// server is older); redsync and redislock with 1ms between tries (the
// contended workload also has redsync's default and redislock with 100ms, in
// rows of their own). Pools are sized for the goroutines that use them, ours
// and the peers' alike: every redigo pool keeps idle a connection for each
// of its users at once and 4 more, with no cap (a Client of ours counts
// twice: its calls and the connection that listens for hand-offs); the
// go-redis clients of the fleet workload, ours and redislock's, have a
// PoolSize of the goroutines and 4 more, as does ours on the contended one,
// where each redislock locker has a go-redis client of its own, whose
// default pool (10 connections a CPU) is room enough. The hurried workload
// keeps the pools it names above.
//
// Each row measures, in order:
//
//   - uncontended: one goroutine locks and unlocks -uncontended times; the
//     p50 of one lock+unlock, also in Redis round trips (PING p50), and the
//     Redis commands per lock+unlock (INFO total_commands_processed, which
//     counts each command a Lua script runs).
//   - contended: -workers goroutines, each a simulated process with its own
//     client, loop for -duration on one lock: Lock, hold, Unlock, think.
//     Utilisation is the share of the run during which a worker held the
//     lock; a hand-off is an acquisition whose wait began before the latest
//     Unlock call, timed from that call to Lock's return; an overlap is two
//     workers holding the lock at once and must never happen. Acquisitions
//     per worker are the fewest and the most of one worker; Redis CPU per
//     acquisition is the CPU time redis-server used over the run
//     (used_cpu_user + used_cpu_sys of INFO cpu, read just before and just
//     after it; its idle background work counts too) divided by the run's
//     acquisitions.
//
// The push floor row is no lock library but a bound: a lock whose state
// lives in the process and whose hand-off alone goes through Redis, one
// PUBLISH to the next waiter's own subscription (see floor.go). The
// hand-off p50 of our Mutex on each client is divided by its.
//
// After the rows, one locker of every Redis row makes one lock+unlock in
// turn, -uncontended rounds (the interleaved run), so that the drift of a
// noisy machine between the rows' own runs, up to 2x, hits them alike. The
// table against the best peer has its p50 on a line of its own, and a
// sentence divides the Mutex on each client library by the fastest peer's.
//
// Our RWMutex and Semaphore have rows of their own in that table, measured
// the same way; none of the peers has either, so they are compared with our
// Mutex and with an in-process ceiling:
//
//   - uncomplicated RWMutex writers only: an RWMutex used as a writer lock
//     only (Lock, Unlock), comparable with the Mutex row column by column;
//     its hand-off is the wake-up after a release. Ceiling: sync.Mutex.
//   - uncomplicated Semaphore(1): Acquire+Release of a Semaphore of 1
//     permit, whatever -permits says, measured exactly as the Mutex row:
//     one holder allowed, utilisation against -duration, hand-offs and
//     overlaps as for the Mutex. Ceiling: sync.Mutex.
//   - uncomplicated RW read: RLock+RUnlock; in the contended run every
//     worker is a reader, so nobody waits for a release and the lock lets
//     all of them in: utilisation is against -workers × -duration, and
//     there is no hand-off. Ceiling: sync.RWMutex read, every worker an RLock.
//   - uncomplicated Semaphore: Acquire+Release of a Semaphore of -permits
//     permits (default -workers/2, at least 1), the workers contending for
//     them. Utilisation is the holding time against permits × -duration; an
//     overlap is an acquisition that finds all permits held already (more
//     than permits holders at once) and must never happen; a hand-off is an
//     acquisition whose Acquire began while every permit was held, timed
//     from the latest Release call before it returned. Ceiling: chan
//     semaphore, a buffered channel of permits slots.
//
// Our Mutex also runs through goredis.NewClient, on go-redis v9, in two
// rows, each compared with its base:
//
//   - uncomplicated go-redis: on the same server, each locker a Client of
//     its own over one go-redis client, as the uncomplicated row has one
//     redigo pool. Base: uncomplicated (redigo).
//   - uncomplicated cluster: on a Redis Cluster of 3 masters without
//     replicas, which the run starts on loopback only when this row or the
//     cluster scale run is asked for, over one *redis.ClusterClient. The
//     one lock lives on one master. Commands and Redis CPU are summed over
//     the masters (INFO of each), so the other two masters' idle work and
//     the gossip between all three count too. Base: uncomplicated go-redis.
//
// The ratio table that follows the table of peers divides each of our
// RWMutex and Semaphore rows by the Mutex row: the uncontended lock+unlock and the hand-off for all of them; the
// p99 wait, the utilisation, the Redis CPU per acquisition and the spread
// of acquisitions per worker (the most less the fewest) only for the two
// rows that let one holder in, RWMutex writers only and Semaphore(1); and
// each row's utilisation by its ceiling's. The uncontended lock+unlock is
// divided twice: as the table has it, each row timed on its own, and
// interleaved: one locker of the Mutex and of each of these rows make one
// lock+unlock each in turn, -uncontended rounds, so that the drift of a
// noisy machine between the rows' runs, up to 2x, hits them alike.
//
// The next table divides each of the go-redis and cluster rows by its
// base, in the same columns; those rows are interleaved too, so that the
// interleaved lock+unlock of go-redis and of redigo, and of the Cluster
// and of go-redis, come from one loop.
//
// The read-mostly mix then runs -workers workers, each with its own
// client, on one lock for -duration: each acquisition is a read (RLock,
// hold, RUnlock) with probability -reads and a write (Lock, hold, Unlock)
// otherwise, then think; worker i draws from a generator seeded with i, so
// each row sees the same sequence. Rows: our RWMutex; our Mutex, which
// reads under the exclusive lock, to show what the RWMutex gains; and a
// sync.RWMutex ceiling. It reports reads and writes per second of the run
// (acquisitions before its end), the p99 wait of reads, the p50, p99 and
// max wait of writes (Lock call to return), the Redis commands per
// acquisition, and overlaps: a writer holding with anyone or a reader with
// a writer, which must never happen.
//
// The scale run has one Client hold -scale locks while a second waits for
// each in a goroutine of its own, then releases them all, over redigo on
// the server. With -scale-cluster N it runs again with N locks on the
// Cluster, over go-redis, the locks spread over the masters by slot. Both
// report, taken while the waiters wait, the connections of each node that
// have a subscription and of those the sharded ones (CLIENT LIST, ssub >
// 0): one per node for the waiting Client, and one for the holder once
// its holds are a second old, which its restart watch keeps.
//
// With -json, it prints each row of the contended table as one line of
// JSON instead of the header and the tables, in the table's units, and
// skips the interleaved, mix and scale runs; on the fleet and hurried
// workloads, each of their rows (a hurried row's two runs as the objects
// hurried and patient, which compare.sh does not read). compare.sh uses
// it to compare one of our rows (the Mutex's unless ROW names another) of
// an older commit with the library as it is in the working tree, built
// into two binaries of this program and run alternately with -only ROW
// -scale 0 -json:
//
//	bash benchmarks/compare.sh OLD_COMMIT [flags of both binaries]
//	ROW="uncomplicated RWMutex writers only" bash benchmarks/compare.sh OLD_COMMIT
//
// It prints the median over the rounds (ROUNDS, default 3 runs of each) of
// the p99 wait, hand-off p50, uncontended lock+unlock p50 and Redis CPU
// per acquisition of both, and new ÷ old.
//
// For per-operation costs with allocations, run the testing benchmarks
// (RLock+RUnlock and Acquire+Release too, also with context.Background()):
//
//	go test -run x -bench . -benchtime 2000x
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
)

// config is what the flags set.
type config struct {
	duration       time.Duration // per contended run
	workers        int
	hold, think    time.Duration
	uncontended    int      // lock+unlock iterations
	only           []string // row names; empty means all
	scale          int      // waiters in the scale run; 0 skips it
	scaleOnCluster int      // waiters in the scale run on the Cluster; 0 skips it
	permits        int      // of the semaphore rows; 0 means half the workers
	reads          float64  // the share of reads in the mix
	json           bool     // print the contended rows as JSON lines, and nothing else
	workload       string   // "contended" (the tables above), "fleet" or "hurried"
	keys           int      // the fleet workload's keys
	goroutines     int      // the fleet workload's goroutines
	rounds         int      // the fleet workload's rounds, of which each row reports its medians
	scaleClient    string   // the scale runs' client: "" (redigo, go-redis on the Cluster) or "rueidis"
	cpuProfile     string   // where to write a CPU profile of the whole run; empty for none
	trace          bool     // time each step of the contended runs' hand-offs (see steps.go)
}

// semPermits returns the permits of the semaphore rows.
func (cfg config) semPermits() int {
	if cfg.permits > 0 {
		return cfg.permits
	}
	return max(cfg.workers/2, 1)
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	stop, err := profileCPU(cfg.cpuProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(1)
	}
	err = run(cfg, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("benchmarks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "length of each contended run (of each hurried run: default 4s)")
	fs.IntVar(&cfg.workers, "workers", 8, "workers (simulated processes) in the contended runs")
	fs.DurationVar(&cfg.hold, "hold", time.Millisecond, "how long a worker holds the lock")
	fs.DurationVar(&cfg.think, "think", time.Millisecond, "how long a worker pauses after Unlock")
	fs.IntVar(&cfg.uncontended, "uncontended", 2000, "lock+unlock iterations of the uncontended run")
	only := fs.String("only", "", "comma-separated row names to run (default all)")
	fs.IntVar(&cfg.scale, "scale", 10000, "waiting goroutines in the scale run; 0 skips it")
	fs.IntVar(&cfg.scaleOnCluster, "scale-cluster", 0, "waiting goroutines in the scale run on a Cluster of 3 masters; 0 skips it")
	fs.IntVar(&cfg.permits, "permits", 0, "permits of the semaphore rows (default half the workers, at least 1)")
	fs.Float64Var(&cfg.reads, "reads", 0.9, "share of reads in the read-mostly mix")
	fs.StringVar(&cfg.workload, "workload", "contended", "contended: one lock, the tables above; fleet: many keys, each rarely contended; hurried: callers with deadlines of milliseconds")
	fs.IntVar(&cfg.keys, "keys", 10000, "keys of the fleet workload")
	fs.IntVar(&cfg.goroutines, "goroutines", 64, "goroutines of the fleet workload, sharing one client")
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds of the fleet workload: every row once a round, each reporting its medians")
	fs.StringVar(&cfg.scaleClient, "scale-client", "", "the scale runs' client: rueidis, or empty for redigo on the server and go-redis on the Cluster")
	fs.BoolVar(&cfg.json, "json", false, "print each row of the contended table as one JSON line instead of the tables; skips the interleaved, mix and scale runs")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (this process's side only) to this file")
	fs.BoolVar(&cfg.trace, "trace", false, "time each step of the contended runs' hand-offs, and print where their time goes")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.workload == "hurried" && !isSet(fs, "duration") {
		cfg.duration = hurriedDuration
	}
	if *only != "" {
		for name := range strings.SplitSeq(*only, ",") {
			cfg.only = append(cfg.only, strings.TrimSpace(name))
		}
	}
	return cfg, cfg.check()
}

func (cfg config) check() error {
	var errs []error
	if cfg.duration <= 0 || cfg.workers < 1 || cfg.uncontended < 1 || cfg.scale < 0 || cfg.scaleOnCluster < 0 || cfg.permits < 0 {
		errs = append(errs, errors.New("-duration, -workers and -uncontended must be positive, -scale, -scale-cluster and -permits not negative"))
	}
	if cfg.permits > limits.Permits {
		errs = append(errs, fmt.Errorf("-permits must be at most %d", limits.Permits))
	}
	if !(cfg.reads >= 0 && cfg.reads <= 1) {
		errs = append(errs, errors.New("-reads must be between 0 and 1"))
	}
	if !slices.Contains([]string{"contended", "fleet", "hurried"}, cfg.workload) {
		errs = append(errs, fmt.Errorf("-workload must be contended, fleet or hurried, not %q", cfg.workload))
	}
	if cfg.scaleClient != "" && cfg.scaleClient != "rueidis" {
		errs = append(errs, fmt.Errorf("-scale-client must be rueidis or empty, not %q", cfg.scaleClient))
	}
	if cfg.keys < 1 || cfg.goroutines < 1 || cfg.rounds < 1 {
		errs = append(errs, errors.New("-keys, -goroutines and -rounds must be positive"))
	}
	if cfg.hold < 0 || cfg.think < 0 {
		errs = append(errs, errors.New("-hold and -think must not be negative"))
	}
	for _, name := range cfg.only {
		if !slices.ContainsFunc(allRows(), func(r row) bool { return r.name == name }) &&
			!slices.ContainsFunc(allMixRows(), func(r mixRow) bool { return r.name == name }) &&
			!slices.ContainsFunc(allFleetRows(), func(r fleetRow) bool { return r.name == name }) &&
			!slices.ContainsFunc(allHurriedRows(), func(r hurriedRow) bool { return r.name == name }) {
			errs = append(errs, fmt.Errorf("-only: no row %q", name))
		}
	}
	return errors.Join(errs...)
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// selected returns the rows -only asks for, in table order.
func (cfg config) selected() []row {
	var rows []row
	for _, r := range allRows() {
		if cfg.wants(r.name) {
			rows = append(rows, r)
		}
	}
	return rows
}

// selectedMix returns the mix rows -only asks for, in table order.
func (cfg config) selectedMix() []mixRow {
	var rows []mixRow
	for _, r := range allMixRows() {
		if cfg.wants(r.name) {
			rows = append(rows, r)
		}
	}
	return rows
}

func (cfg config) wants(name string) bool {
	return len(cfg.only) == 0 || slices.Contains(cfg.only, name)
}

// needsCluster reports whether the run needs the Cluster: for a row, or
// for the scale run on it, which -json skips.
func (cfg config) needsCluster() bool {
	return cfg.workload == "contended" && (slices.ContainsFunc(cfg.selected(), func(r row) bool { return r.cluster }) ||
		!cfg.json && cfg.scaleOnCluster > 0)
}

// selectedFleet returns the fleet rows -only asks for, in table order.
func (cfg config) selectedFleet() []fleetRow {
	var rows []fleetRow
	for _, r := range allFleetRows() {
		if cfg.wants(r.name) {
			rows = append(rows, r)
		}
	}
	return rows
}

// runFleet runs the fleet workload's rows on the server.
func runFleet(d *deployments, cfg config, stdout, stderr io.Writer) error {
	rows := cfg.selectedFleet()
	runs := map[string][]fleetResult{}
	for round := range cfg.rounds {
		for _, r := range fleetOrder(rows, round) {
			fmt.Fprintf(stderr, "round %d: running %s on the fleet workload\n", round+1, r.name)
			runs[r.name] = append(runs[r.name], d.server.runFleet(r, cfg))
		}
	}
	results := make([]fleetResult, len(rows))
	for i, r := range rows {
		results[i] = medianFleet(runs[r.name])
	}
	return report(stdout, d, cfg, results, fleetResult.json, printFleet)
}

// report prints a workload's results: with -json one line of JSON a row
// (asJSON), else the header and the tables (print).
func report[R, J any](stdout io.Writer, d *deployments, cfg config, results []R, asJSON func(R) J, print func(io.Writer, config, []R)) error {
	if cfg.json {
		enc := json.NewEncoder(stdout)
		for _, r := range results {
			if err := enc.Encode(asJSON(r)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := printHeader(stdout, d, cfg); err != nil {
		return err
	}
	print(stdout, cfg, results)
	return nil
}

func run(cfg config, stdout, stderr io.Writer) error {
	d, err := launch(cfg, stderr)
	if err != nil {
		return err
	}
	defer d.close()
	switch cfg.workload {
	case "fleet":
		return runFleet(d, cfg, stdout, stderr)
	case "hurried":
		return runHurriedWorkload(d, cfg, stdout, stderr)
	}
	if !cfg.json {
		if err := printHeader(stdout, d, cfg); err != nil {
			return err
		}
	}
	var results []result
	for _, r := range cfg.selected() {
		fmt.Fprintf(stderr, "running %s\n", r.name)
		results = append(results, d.on(r.cluster).runRow(r, cfg))
	}
	if cfg.json {
		return printJSON(stdout, results)
	}
	fmt.Fprintln(stderr, "running the interleaved uncontended run")
	if err := d.interleaveRows(cfg, results); err != nil {
		fmt.Fprintf(stderr, "interleaved run: %v\n", err)
	}
	var mixes []mixResult
	for _, r := range cfg.selectedMix() {
		fmt.Fprintf(stderr, "running %s\n", r.name)
		mixes = append(mixes, d.server.runMix(r, cfg))
	}
	if len(results) > 0 {
		printTable(stdout, d, results)
		printRatios(stdout, results)
		printOwnRatios(stdout, results)
		printBaseRatios(stdout, results)
	}
	printMix(stdout, cfg, mixes)
	for _, s := range []struct {
		e *env
		n int
	}{{d.server, cfg.scale}, {d.cluster, cfg.scaleOnCluster}} {
		if s.n == 0 {
			continue
		}
		fmt.Fprintf(stderr, "running the scale run (%d waiters) on %s\n", s.n, s.e.name())
		res, err := s.e.scaleRun(s.n, cfg.scaleClient)
		if err != nil {
			return fmt.Errorf("scale run on %s: %w", s.e.name(), err)
		}
		res.print(stdout)
	}
	return nil
}

// profileCPU starts a CPU profile written to path, unless path is empty,
// and returns the function that stops it.
func profileCPU(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
