// Command benchmarks compares uncomplicated with other Redis locks for Go
// (redsync, bsm/redislock, rueidislock) and with a sync.Mutex ceiling, all
// on one redis-server that it starts itself (redis-server must be on PATH):
//
//	cd benchmarks && go run . [-duration 3s] [-workers 8] [-hold 1ms] [-think 1ms]
//	    [-uncontended 2000] [-only 'uncomplicated,redsync 1ms'] [-scale 10000]
//
// It prints a header describing the machine, one markdown table with a row
// per lock, the ratios of uncomplicated to the best other Redis lock, and
// the result of the scale run (-scale 0 skips it). Progress goes to stderr.
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
//     workers holding the lock at once and must never happen.
//
// For per-operation costs with allocations, run the testing benchmarks:
//
//	go test -run x -bench . -benchtime 2000x
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

// config is what the flags set.
type config struct {
	duration    time.Duration // per contended run
	workers     int
	hold, think time.Duration
	uncontended int      // lock+unlock iterations
	only        []string // row names; empty means all
	scale       int      // waiters in the scale run; 0 skips it
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	if err := run(cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("benchmarks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "length of each contended run")
	fs.IntVar(&cfg.workers, "workers", 8, "workers (simulated processes) in the contended runs")
	fs.DurationVar(&cfg.hold, "hold", time.Millisecond, "how long a worker holds the lock")
	fs.DurationVar(&cfg.think, "think", time.Millisecond, "how long a worker pauses after Unlock")
	fs.IntVar(&cfg.uncontended, "uncontended", 2000, "lock+unlock iterations of the uncontended run")
	only := fs.String("only", "", "comma-separated row names to run (default all)")
	fs.IntVar(&cfg.scale, "scale", 10000, "waiting goroutines in the scale run; 0 skips it")
	if err := fs.Parse(args); err != nil {
		return cfg, err
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
	if cfg.duration <= 0 || cfg.workers < 1 || cfg.uncontended < 1 || cfg.scale < 0 {
		errs = append(errs, errors.New("-duration, -workers and -uncontended must be positive, -scale not negative"))
	}
	if cfg.hold < 0 || cfg.think < 0 {
		errs = append(errs, errors.New("-hold and -think must not be negative"))
	}
	for _, name := range cfg.only {
		if !slices.ContainsFunc(allRows(), func(r row) bool { return r.name == name }) {
			errs = append(errs, fmt.Errorf("-only: no row %q", name))
		}
	}
	return errors.Join(errs...)
}

// selected returns the rows -only asks for, in table order.
func (cfg config) selected() []row {
	var rows []row
	for _, r := range allRows() {
		if len(cfg.only) == 0 || slices.Contains(cfg.only, r.name) {
			rows = append(rows, r)
		}
	}
	return rows
}

func run(cfg config, stdout, stderr io.Writer) error {
	srv, err := redistest.Launch()
	if err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	defer srv.Stop()
	e, err := newEnv(srv.Addr)
	if err != nil {
		return err
	}
	defer e.close()
	if err := printHeader(stdout, e, cfg); err != nil {
		return err
	}
	var results []result
	for _, r := range cfg.selected() {
		fmt.Fprintf(stderr, "running %s\n", r.name)
		results = append(results, e.runRow(r, cfg))
	}
	printTable(stdout, e, results)
	printRatios(stdout, results)
	if cfg.scale == 0 {
		return nil
	}
	fmt.Fprintf(stderr, "running the scale run (%d waiters)\n", cfg.scale)
	s, err := e.scaleRun(cfg.scale)
	if err != nil {
		return fmt.Errorf("scale run: %w", err)
	}
	s.print(stdout)
	return nil
}
