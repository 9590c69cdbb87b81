// Command torture runs the uncomplicated locks under faults: worker
// processes hold a few Mutexes, RWMutexes (mostly as readers) and
// Semaphores through a fault-injecting proxy while the coordinator kills,
// stops and cuts them off, stops one queued for a lock just before the
// lock is released, restarts the lock server, expires held locks and makes
// Redis lose its data (restarts the lock server empty, or rolls a held
// lock's keys back to an earlier snapshot; see lose.go); a fenced store on
// a second server records what each critical section did, on its own
// clock. At the end it reports lost updates, overlapping critical
// sections, semaphores over their permits, holds the library confirmed
// that it should not have, late calls, leaked goroutines, how long locks
// stayed free while someone waited and how soon after Redis lost its data
// the store took a new holder's write, and exits non-zero when any of the
// first ones is not 0, when a fault of a worker left a lock free past its
// bound (see idleBound), or when that write took loseBound or longer.
//
// Beside each worker's goroutines that wait up to 4 timeouts for a lock
// (-goroutines), hurried callers (-hurried, see hurried.go) lock the
// Mutexes as request handlers do: a new Mutex per call, from
// uncomplicated.New, and a ctx of 0 to 20 ms for the wait; those that get
// the lock do the same fenced critical section, under a ctx of their own.
// Their give-ups are no failure: the report counts their calls,
// acquisitions and give-ups in a column of their own, and the run fails
// when they acquired nothing while no fault of the locks was under way
// (see analysis_hurried.go). Every quarter second each worker reports its
// goroutines and its connections to Redis, and the coordinator counts the
// locks' keys in Redis; the run fails when one of them goes past a bound
// that the callers and the locks set (see analysis_samples.go), as it does
// when callers that give up leave something behind. A late call is
// excused when its worker was stopped, or stalled meanwhile (a goroutine
// of it kept 25 ms or more from running, see stalls.go), which on a busy
// machine a hurried caller meets.
//
// The workers' Client runs on redigo or, with -client goredis, on go-redis.
// With -cluster the locks live on a Redis Cluster of 3 masters, reached
// through go-redis, whose faults hit one master (see cluster.go).
//
//	cd torture && go run . [-duration 30s] [-seed N] [-faults all|none|kill,stop,...] [-client redigo|goredis] [-cluster] [-hurried 4]
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(runWorker(spec))
	}
	opts := options{Log: os.Stderr}
	flag.IntVar(&opts.Procs, "procs", 4, "worker processes")
	flag.IntVar(&opts.Goroutines, "goroutines", 8, "goroutines per worker that lock, waiting up to 4 timeouts")
	flag.IntVar(&opts.Hurried, "hurried", defaultHurried, "goroutines per worker that lock the Mutexes as hurried request handlers: a new Mutex per call, waiting 0 to 20ms")
	flag.IntVar(&opts.Keys, "keys", 3, "Mutex keys")
	flag.IntVar(&opts.RWKeys, "rwkeys", 2, "RWMutex keys")
	flag.IntVar(&opts.SemKeys, "semkeys", 2, "Semaphore keys")
	flag.IntVar(&opts.Permits, "permits", 3, "permits of each Semaphore")
	flag.DurationVar(&opts.Duration, "duration", 30*time.Second, "how long to run")
	flag.DurationVar(&opts.Timeout, "timeout", time.Second, "lock timeout and lease")
	flag.Uint64Var(&opts.Seed, "seed", 0, "random seed (default: from the time, printed)")
	faults := flag.String("faults", "all", "fault kinds: all, none, or a comma list of "+faultList(serverFaults)+
		" (with -cluster: of "+faultList(clusterFaults)+")")
	flag.StringVar(&opts.Client, "client", clientRedigo, "the workers' Redis client library: "+strings.Join(clientKinds, " or "))
	flag.BoolVar(&opts.Cluster, "cluster", false, "the locks on a Redis Cluster of 3 masters, through go-redis (implies -client goredis)")
	flag.BoolVar(&opts.Verbose, "v", false, "log each fault to stderr")
	trace := flag.String("trace", "", "write every worker event to this file")
	flag.Parse()
	if *trace != "" {
		f, err := os.Create(*trace)
		if err != nil {
			fmt.Fprintln(os.Stderr, "torture:", err)
			os.Exit(2)
		}
		defer f.Close()
		opts.Trace = f
	}

	if opts.Keys < 0 || opts.RWKeys < 0 || opts.SemKeys < 0 || opts.Keys+opts.RWKeys+opts.SemKeys == 0 || opts.Permits < 1 {
		fmt.Fprintln(os.Stderr, "torture: want some keys, none negative, and at least 1 permit")
		os.Exit(2)
	}
	if opts.Procs < 1 || opts.Goroutines < 0 || opts.Hurried < 0 || opts.Goroutines+opts.Hurried == 0 {
		fmt.Fprintln(os.Stderr, "torture: want at least 1 proc and some goroutines, none negative")
		os.Exit(2)
	}
	if !slices.Contains(clientKinds, opts.Client) {
		fmt.Fprintf(os.Stderr, "torture: unknown -client %q (want one of %v)\n", opts.Client, clientKinds)
		os.Exit(2)
	}
	if opts.Cluster {
		if opts.Client != clientGoRedis && flagSet("client") {
			fmt.Fprintln(os.Stderr, "torture: -cluster runs on go-redis: want -client goredis or no -client")
			os.Exit(2)
		}
		opts.Client = clientGoRedis
	}
	var err error
	if opts.Faults, err = parseFaults(*faults, opts.Cluster); err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	if opts.Seed == 0 {
		opts.Seed = uint64(time.Now().UnixNano())
	}
	if opts.Exe, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	fmt.Printf("torture: seed %d\n", opts.Seed)
	rec, err := run(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	s := rec.summarize(opts)
	s.print(os.Stdout, rec, opts)
	if len(s.Failures) > 0 {
		os.Exit(1)
	}
}

// flagSet reports whether the command line set flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
