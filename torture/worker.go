package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	LockAddr   string        // the lock server, through the fault proxy
	StoreAddr  string        // the store server, never faulted
	Keys       []string      // lock names
	Goroutines int           // goroutines that lock
	Timeout    time.Duration // lock timeout and lease
	Seed       uint64        // the worker's random choices
}

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
	store  store
	out    *emitter
	seq    atomic.Int64 // numbers critical sections
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
	lockPool := newPool(cfg.LockAddr, cfg.Timeout)
	storePool := newPool(cfg.StoreAddr, storeTimeout)
	opts := []uncomplicated.Option{
		uncomplicated.WithTimeout(cfg.Timeout),
		uncomplicated.WithLease(cfg.Timeout),
		uncomplicated.WithStalePolicy(uncomplicated.TakeOver),
		uncomplicated.WithLogger(slog.New(takeOvers{out: out})),
		uncomplicated.WithAutoRefresh(cfg.Timeout / 3),
	}
	w := &worker{cfg: cfg, client: uncomplicated.NewClient(lockPool, opts...), store: store{pool: storePool}, out: out}

	stop := make(chan struct{})
	go func() { // the coordinator closes our stdin to stop us
		_, _ = io.Copy(io.Discard, os.Stdin)
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
	wg.Wait()

	_ = w.client.Close()
	_ = lockPool.Close()
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

// loop holds random keys until stop is closed.
func (w *worker) loop(g int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(g)))
	mutexes := make([]*uncomplicated.Mutex, len(w.cfg.Keys))
	for i, key := range w.cfg.Keys {
		m, err := w.client.Named(key)
		if err != nil {
			panic(err) // the names and options are valid
		}
		mutexes[i] = m
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		w.hold(rng, mutexes[rng.IntN(len(mutexes))])
	}
}
