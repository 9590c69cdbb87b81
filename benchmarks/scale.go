package main

import (
	"context"

	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedrueidis"
)

const (
	// scaleTimeout bounds each Lock of the scale run.
	scaleTimeout = 60 * time.Second
	// scaleSettle is how long the waiters wait before the sample is taken
	// and the holder unlocks.
	scaleSettle = 2 * time.Second
	// scaleParallel bounds the goroutines that lock and unlock the
	// holder's locks.
	scaleParallel = 64
)

// scaleResult is what the scale run measured.
type scaleResult struct {
	on             string   // the deployment's name
	client         string   // "rueidis", or "" for the deployment's default
	nodes          []string // its nodes' addresses
	n, acquired    int
	early          int64         // waiters that acquired before the unlocks began
	allAcquired    time.Duration // from the first unlock to the last acquisition
	unlocking      time.Duration // the holder's unlocking of all N
	errors         int
	firstErr       error
	subscribers    []int   // per node, connections with a subscription, while waiting
	sharded        []int   // per node, those with a sharded one (ssub)
	keys           []int64 // per node, its keys (DBSIZE), while waiting
	heapInuse      uint64  // Go heap in use while waiting
	goroutines     int     // while waiting, the N waiters included
	usedMemory     int64   // Redis used_memory while waiting, of every node
	usedMemoryIdle int64   // Redis used_memory before the holder locked
}

// scaleSide is one Client of the scale run, the mutexes it made and what
// closes its connections.
type scaleSide struct {
	client     *uncomplicated.Client
	closeConns func()
	mutexes    []*uncomplicated.Mutex
}

func newScaleSide(e *env, n int, client string) (*scaleSide, error) {
	s := &scaleSide{}
	var err error
	if s.client, s.closeConns, err = e.cappedClient(client); err != nil {
		return nil, err
	}
	s.mutexes = make([]*uncomplicated.Mutex, n)
	for i := range s.mutexes {
		m, err := uncomplicated.New(s.client, uncomplicated.Named("scale-"+strconv.Itoa(i)))
		if err != nil {
			s.close()
			return nil, err
		}
		s.mutexes[i] = m
	}
	return s, nil
}

func (s *scaleSide) close() {
	_ = s.client.Close()
	s.closeConns()
}

// cappedClient returns a Client of e and what closes its connections:
// over redigo on the server, over go-redis on the Cluster, whose callers
// share at most 64 connections to each node and wait for a free one; or,
// when client is "rueidis", over rueidis, which has one connection per
// node for every caller.
func (e *env) cappedClient(client string) (*uncomplicated.Client, func(), error) {
	switch {
	case client == "rueidis":
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: e.addrs()})
		if err != nil {
			return nil, nil, err
		}
		return uncomplicatedrueidis.NewClient(c), c.Close, nil
	case e.cluster:
		rdb := newCappedClusterClient(e.addrs(), scaleTimeout)
		return goredis.NewClient(rdb), func() { _ = rdb.Close() }, nil
	}
	pool := newCappedPool(e.addr)
	return uncomplicated.NewClient(redigo.New(pool)), func() { _ = pool.Close() }, nil
}

// each runs fn on every mutex, scaleParallel at a time, and returns the
// errors joined.
func (s *scaleSide) each(fn func(context.Context, *uncomplicated.Mutex) error) error {
	var wg sync.WaitGroup
	errs := make([]error, scaleParallel)
	for g := range scaleParallel {
		wg.Go(func() {
			for i := g; i < len(s.mutexes); i += scaleParallel {
				ctx, cancel := context.WithTimeout(context.Background(), scaleTimeout)
				err := fn(ctx, s.mutexes[i])
				cancel()
				if err != nil && errs[g] == nil {
					errs[g] = fmt.Errorf("%s: %w", s.mutexes[i].Name(), err)
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func tryLock(ctx context.Context, m *uncomplicated.Mutex) error {
	ok, err := m.TryLock(ctx)
	if err == nil && !ok {
		err = errors.New("held already")
	}
	return err
}

func unlockMutex(ctx context.Context, m *uncomplicated.Mutex) error { return m.Unlock(ctx) }

// scaleRun has one Client hold n locks while a second Client waits for
// each of them in a goroutine of its own, then releases them all, both
// over client (see cappedClient). On the Cluster the locks spread over
// the masters by their names' slots.
func (e *env) scaleRun(n int, client string) (*scaleResult, error) {
	res := &scaleResult{on: e.name(), nodes: e.addrs(), n: n, client: client}
	var err error
	if res.usedMemoryIdle, err = e.usedMemory(); err != nil {
		return nil, err
	}
	holder, err := newScaleSide(e, n, client)
	if err != nil {
		return nil, err
	}
	defer holder.close()
	if err := holder.each(tryLock); err != nil {
		return nil, fmt.Errorf("holder: %w", err)
	}
	waiter, err := newScaleSide(e, n, client)
	if err != nil {
		return nil, err
	}
	defer waiter.close()
	if err := e.waitAndRelease(holder, waiter, res); err != nil {
		return nil, err
	}
	if err := waiter.each(unlockMutex); err != nil && res.errors == 0 {
		res.errors, res.firstErr = 1, fmt.Errorf("waiter's unlock: %w", err)
	}
	return res, nil
}

// waiters is the state of the waiting goroutines.
type waiters struct {
	start    time.Time
	started  sync.WaitGroup // Done just before each Lock call
	done     sync.WaitGroup // Done when each Lock has returned
	acquired atomic.Int64
	last     atomic.Int64 // ns after start of the latest acquisition
	mu       sync.Mutex   // guards errors and firstErr
	errors   int
	firstErr error
}

// waitAndRelease starts the waiters, samples the process and Redis while
// they wait, has the holder unlock and waits for every Lock to return.
func (e *env) waitAndRelease(holder, waiter *scaleSide, res *scaleResult) error {
	w := &waiters{start: time.Now()}
	w.started.Add(len(waiter.mutexes))
	w.done.Add(len(waiter.mutexes))
	for _, m := range waiter.mutexes {
		go w.wait(m)
	}
	w.started.Wait()
	time.Sleep(scaleSettle)
	if err := e.sample(res); err != nil {
		return err
	}
	res.early = w.acquired.Load()
	unlockStart := time.Since(w.start)
	holdErr := holder.each(unlockMutex)
	res.unlocking = time.Since(w.start) - unlockStart
	w.done.Wait()
	if holdErr != nil {
		return fmt.Errorf("holder's unlock: %w", holdErr)
	}
	res.acquired = int(w.acquired.Load())
	if res.acquired > 0 {
		res.allAcquired = time.Duration(w.last.Load()) - unlockStart
	}
	res.errors, res.firstErr = w.errors, w.firstErr
	return nil
}

func (w *waiters) wait(m *uncomplicated.Mutex) {
	defer w.done.Done()
	ctx, cancel := context.WithTimeout(context.Background(), scaleTimeout)
	defer cancel()
	w.started.Done()
	if err := m.Lock(ctx); err != nil {
		w.fail(err)
		return
	}
	w.acquired.Add(1)
	at := int64(time.Since(w.start))
	for {
		prev := w.last.Load()
		if at <= prev || w.last.CompareAndSwap(prev, at) {
			return
		}
	}
}

func (w *waiters) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.errors == 0 {
		w.firstErr = err
	}
	w.errors++
}

// sample records the process's and Redis's state while the waiters wait.
func (e *env) sample(res *scaleResult) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.heapInuse, res.goroutines = ms.HeapInuse, runtime.NumGoroutine()
	var err error
	if res.subscribers, res.sharded, err = e.subscribers(); err != nil {
		return err
	}
	if res.keys, err = e.keys(); err != nil {
		return err
	}
	res.usedMemory, err = e.usedMemory()
	return err
}

// usedMemory returns used_memory, summed over the nodes.
func (e *env) usedMemory() (int64, error) {
	return e.infoSum("memory", "used_memory")
}

func (s *scaleResult) print(w io.Writer) {
	over := "at most 64 connections to each node"
	if s.client == "rueidis" {
		over = "over rueidis, one connection to each node"
	}
	fmt.Fprintf(w, "\nScale run on %s: one Client holds %d locks, a second Client waits for each in a goroutine of its own (%s).\n", s.on, s.n, over)
	fmt.Fprintf(w, "- acquired %d of %d; all within %s of the first unlock (unlocking all took %s); acquired before the unlocks: %d; errors: %d\n",
		s.acquired, s.n, s.allAcquired.Round(time.Millisecond), s.unlocking.Round(time.Millisecond), s.early, s.errors)
	if s.firstErr != nil {
		fmt.Fprintf(w, "- first error: %v\n", s.firstErr)
	}
	fmt.Fprintf(w, "- while waiting: %s, Go heap in use %.1f MiB, %d goroutines, Redis used_memory %.1f MiB (%.1f MiB before locking)\n",
		s.pubsub(), mib(int64(s.heapInuse)), s.goroutines, mib(s.usedMemory), mib(s.usedMemoryIdle))
}

// pubsub says how many connections had a subscription, and how many of
// them a sharded one, on each node, and on a Cluster how many keys each
// master had.
func (s *scaleResult) pubsub() string {
	if len(s.nodes) == 1 {
		return fmt.Sprintf("%d pub/sub connections to Redis (%d sharded)", s.subscribers[0], s.sharded[0])
	}
	var b strings.Builder
	b.WriteString("per master, pub/sub connections (sharded) and keys:")
	for i, addr := range s.nodes {
		fmt.Fprintf(&b, " %s %d (%d), %d keys", addr, s.subscribers[i], s.sharded[i], s.keys[i])
		if i < len(s.nodes)-1 {
			b.WriteString(";")
		}
	}
	return b.String()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
