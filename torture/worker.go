package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// workerEnv, when set in the environment, makes the binary (the torture
// program or its test binary) a worker; its value is the workerConfig as
// JSON.
const workerEnv = "TORTURE_WORKER"

// A workerConfig is what the coordinator tells a worker.
type workerConfig struct {
	Client       string        // the Redis client library: clientRedigo or clientGoRedis
	LockAddr     string        // the lock server, through the fault proxy; "" on a Cluster
	ClusterAddrs []string      // the Cluster's nodes, when the locks are on one
	StoreAddr    string        // the store server, never faulted
	Keys         []string      // Mutex names
	RWKeys       []string      // RWMutex names
	SemKeys      []string      // Semaphore names
	Permits      int           // of each Semaphore
	Goroutines   int           // goroutines that lock
	Hurried      int           // goroutines that lock a Mutex as hurried callers (see hurried.go); none without Keys
	Timeout      time.Duration // lock timeout and lease
	Seed         uint64        // the worker's random choices
}

// The mix of holds: each turn of a goroutine picks a kind of lock (Mutex,
// RWMutex, Semaphore) at random among those with keys, then a key; on an
// RWMutex it reads mostly, as the lock is made for, and on a Semaphore it
// mostly uses Do, sometimes Acquire and Release, whose Permit shows its
// fence.
const (
	writeOneIn  = 5 // 1 in 5 RWMutex sections write, the others read
	manualOneIn = 4 // 1 in 4 Semaphore sections use Acquire and Release
)

// Bounds of the calls a worker makes.
const (
	// lateSlack is how far past its bound a call may return without being
	// counted late.
	lateSlack = 100 * time.Millisecond
	// unlockGrace is how long past its ctx's deadline Do's Unlock may run
	// (see Mutex.Do in the library); Do returns by then, or at once after
	// a fn that outran the deadline.
	unlockGrace = 50 * time.Millisecond
	// storeTimeout bounds each call to the store.
	storeTimeout = 2 * time.Second
)

// budget is the ctx deadline of one Do, counted from its call: long enough
// to wait out a stale holder and a few busy ones.
func budget(timeout time.Duration) time.Duration { return 4 * timeout }

// A worker is one process's goroutines locking the keys in turn.
type worker struct {
	cfg    workerConfig
	client *uncomplicated.Client
	lib    library // under client
	store  store
	out    *emitter
	seq    atomic.Int64 // numbers the calls to lock
	park   parking      // the coordinator's park, if any
}

// runWorker is the worker's main: it locks until its stdin ends, then
// closes everything, checks for leaked goroutines, reports and returns the
// exit status.
func runWorker(spec string) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "worker: bad %s: %v\n", workerEnv, err)
		return 2
	}
	out := &emitter{w: os.Stdout, pid: os.Getpid()}
	client, lib, err := lockClient(cfg, []uncomplicated.Option{
		uncomplicated.WithTimeout(cfg.Timeout),
		uncomplicated.WithLease(cfg.Timeout),
		uncomplicated.WithTakeOver(true),
		uncomplicated.WithLogger(slog.New(takeOvers{out: out})),
		uncomplicated.WithAutoRefresh(cfg.Timeout / 3),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker: %v\n", err)
		return 2
	}
	storePool := newPool(cfg.StoreAddr, storeTimeout)
	w := &worker{cfg: cfg, client: client, lib: lib, store: store{pool: storePool}, out: out}

	stop := make(chan struct{})
	go func() { // the coordinator's commands; it closes our stdin to stop us
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			w.park.obey(sc.Text())
		}
		w.park.stop()
		close(stop)
	}()
	out.emit(event{Ev: evReady})
	var wg sync.WaitGroup
	for g := range cfg.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(g, stop)
		}()
	}
	for g := range cfg.Hurried {
		if len(cfg.Keys) == 0 {
			break // no Mutex to hurry for
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.hurry(g, stop)
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		w.sample(stop)
	}()
	go func() {
		defer wg.Done()
		w.watchStalls(stop)
	}()
	wg.Wait()

	_ = w.client.Close()
	lib.close()
	_ = storePool.Close()
	final := event{Ev: evFinal}
	if err := goleak.Find(); err != nil {
		final.Leaked, final.Leak = 1, err.Error()
	}
	out.emit(final)
	return 0
}

// newPool returns a pool whose connections dial within timeout and honour
// each call's ctx.
func newPool(addr string, timeout time.Duration) *redis.Pool {
	return &redis.Pool{
		MaxIdle: 32,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(timeout))
		},
	}
}

// loop holds random keys until stop is closed. Each goroutine has locks of
// its own, so that they meet only in Redis.
func (w *worker) loop(g int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(g)))
	var turns []func() // one per kind of lock that has keys
	mutex := func(name string) (*uncomplicated.Mutex, error) {
		return uncomplicated.New(w.client, uncomplicated.Named(name))
	}
	patience := budget(w.cfg.Timeout)
	if mutexes := locks(w.cfg.Keys, mutex); len(mutexes) > 0 {
		turns = append(turns, func() { w.hold(rng, w.mutex(mutexes[rng.IntN(len(mutexes))]), patience) })
	}
	rwMutex := func(name string) (*uncomplicated.RWMutex, error) {
		return uncomplicated.NewRW(w.client, uncomplicated.Named(name))
	}
	if rws := locks(w.cfg.RWKeys, rwMutex); len(rws) > 0 {
		turns = append(turns, func() {
			rw := rws[rng.IntN(len(rws))]
			if rng.IntN(writeOneIn) == 0 {
				w.hold(rng, w.writer(rw), patience)
			} else {
				w.hold(rng, w.reader(rw), patience)
			}
		})
	}
	semaphore := func(name string) (*uncomplicated.Semaphore, error) {
		return uncomplicated.NewSemaphore(w.client, uncomplicated.Named(name), w.cfg.Permits)
	}
	if sems := locks(w.cfg.SemKeys, semaphore); len(sems) > 0 {
		turns = append(turns, func() {
			s := sems[rng.IntN(len(sems))]
			if rng.IntN(manualOneIn) == 0 {
				w.hold(rng, w.permit(s), patience)
			} else {
				w.hold(rng, w.semDo(s), patience)
			}
		})
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		turns[rng.IntN(len(turns))]()
	}
}

// locks makes a lock of each name.
func locks[L any](names []string, newLock func(string) (L, error)) []L {
	ls := make([]L, len(names))
	for i, name := range names {
		l, err := newLock(name)
		if err != nil {
			panic(err) // the names and options are valid
		}
		ls[i] = l
	}
	return ls
}
