package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// options are the torture's settings, from flags or a test.
type options struct {
	Procs, Goroutines     int
	Hurried               int // hurried callers per worker (see hurried.go)
	Keys, RWKeys, SemKeys int // Mutexes, RWMutexes and Semaphores
	Permits               int // of each Semaphore
	Duration, Timeout     time.Duration
	Seed                  uint64
	Faults                []string // kinds to inject; see faultKinds
	Client                string   // the workers' Redis client library: clientRedigo or clientGoRedis
	Cluster               bool     // the locks on a Redis Cluster (see cluster.go); Client is clientGoRedis
	Verbose               bool
	Log                   io.Writer // progress lines with Verbose; nil: none
	Exe                   string    // the binary that runs as a worker
	Trace                 io.Writer // every worker event, as received; nil: none
}

// A coordinator runs the servers, the proxy and the workers, injects the
// faults, and gathers the workers' events into the run's record.
type coordinator struct {
	opts    options
	rng     *rand.Rand         // the coordinator's own choices; used by one goroutine
	lock    *redistest.Server  // the lock server, or the Cluster's master that the faults hit
	cluster *redistest.Cluster // the locks' Cluster; nil: the lock server
	store   *redistest.Server
	proxy   *redistest.Proxy // in front of the lock server; nil on a Cluster
	keys    []string         // Mutex names, as the workers give them
	rw      []string         // RWMutex names
	sem     []string         // Semaphore names
	onLock  map[string]bool  // the lock names (as Name gives them) that lock holds
	snaps   *snapshots       // of the locks on lock, for the lose fault's rollbacks; nil without it

	losses       int  // lose faults injected; used by the goroutine that injects
	loseRollback bool // the last lose fault rolled back rather than restarted the server

	mu      sync.Mutex // guards procs and rec
	procs   map[int]*proc
	rec     *record
	workers sync.WaitGroup // one per proc's reader
}

// A proc is a worker process.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{} // closed when its output has ended and it has exited
	killed bool          // by the kill fault or at the end's grace period; guarded by coordinator.mu
}

// run runs the whole torture and returns its record, or an error when the
// setup failed.
func run(opts options) (*record, error) {
	c := &coordinator{
		opts:  opts,
		rng:   rand.New(rand.NewPCG(opts.Seed, 0x70c7)),
		procs: map[int]*proc{},
		rec:   newRecord(),
	}
	c.rec.Start = time.Now()
	defer c.shutdown()
	if err := c.setup(); err != nil {
		return nil, err
	}
	if c.cluster != nil {
		c.logf("lock cluster %v, faults on master %s, store server %s", c.cluster.Addrs(), c.lock.Addr, c.store.Addr)
	} else {
		c.logf("lock server %s behind proxy %s, store server %s", c.lock.Addr, c.proxy.Addr(), c.store.Addr)
	}
	for range opts.Procs {
		if err := c.startWorker(); err != nil {
			return nil, err
		}
	}
	end := time.Now().Add(opts.Duration)
	stopSampling := c.sampleKeys()
	stopSnapshots := func() {}
	if slices.Contains(opts.Faults, faultLose) {
		stopSnapshots = c.keepSnapshots()
	}
	c.injectUntil(end)
	stopSnapshots()
	if wait := time.Until(end); wait > 0 {
		time.Sleep(wait)
	}
	stopSampling()
	c.stopWorkers()
	c.rec.End = time.Now()
	return c.rec, c.tally()
}

// setup starts the locks' servers (the lock server and the proxy, or the
// Cluster) and names the locks on them, then starts the store server and
// zeroes it.
func (c *coordinator) setup() error {
	var err error
	if c.opts.Cluster {
		err = c.launchCluster()
	} else {
		err = c.launchServer()
	}
	if err != nil {
		return err
	}
	if c.store, err = redistest.Launch(); err != nil {
		return fmt.Errorf("store server: %w", err)
	}
	s := c.storeClient()
	defer s.pool.Close()
	for _, key := range c.stored() {
		if err := s.reset(context.Background(), key); err != nil {
			return err
		}
	}
	return nil
}

// persistent are the redis-server arguments of the lock server and of the
// Cluster's nodes: every write is on disk before its reply, so a restart
// keeps every fence handed out.
var persistent = []string{"--appendonly", "yes", "--appendfsync", "always"}

// launchServer starts the lock server, persistent, and the proxy in front
// of it, and names the locks.
func (c *coordinator) launchServer() error {
	var err error
	if c.lock, err = redistest.Launch(persistent...); err != nil {
		return fmt.Errorf("lock server: %w", err)
	}
	if c.proxy, err = redistest.NewProxy(c.lock.Addr); err != nil {
		return err
	}
	return c.name([]string{c.lock.Addr}, func(string) (int, error) { return 0, nil })
}

// name names the locks on the masters at addrs (the lock server alone, or
// the Cluster's), which owner tells apart, and records which master holds
// which lock; the first master is c.lock.
func (c *coordinator) name(addrs []string, owner func(name string) (int, error)) error {
	names, err := placeNames([3]int{c.opts.Keys, c.opts.RWKeys, c.opts.SemKeys}, len(addrs), owner)
	if err != nil {
		return err
	}
	c.keys, c.rw, c.sem = names[0], names[1], names[2]
	c.onLock = map[string]bool{}
	c.rec.Masters = make([]masterLocks, len(addrs))
	for i, addr := range addrs {
		c.rec.Masters[i].Addr = addr
	}
	for _, name := range slices.Concat(names[:]...) {
		m, err := owner(name)
		if err != nil {
			return err
		}
		c.rec.Masters[m].Locks = append(c.rec.Masters[m].Locks, lockName(name))
		if m == 0 {
			c.onLock[lockName(name)] = true
		}
	}
	return nil
}

// stored returns the lock names whose counters the store keeps: those of
// the Mutexes and the RWMutexes.
func (c *coordinator) stored() []string {
	var names []string
	for _, key := range append(slices.Clone(c.keys), c.rw...) {
		names = append(names, "lock:"+key)
	}
	return names
}

func (c *coordinator) storeClient() store {
	return store{pool: newPool(c.store.Addr, storeTimeout)}
}

// shutdown stops what setup started, whatever happened.
func (c *coordinator) shutdown() {
	c.mu.Lock()
	for _, p := range c.procs {
		_ = p.cmd.Process.Kill()
	}
	c.mu.Unlock()
	c.workers.Wait()
	if c.proxy != nil {
		c.proxy.Close()
	}
	if c.cluster != nil {
		c.cluster.Stop() // c.lock with it
	} else if c.lock != nil {
		c.lock.Stop()
	}
	if c.store != nil {
		c.store.Stop()
	}
}

// startWorker starts one worker process and the goroutine that reads its
// events.
func (c *coordinator) startWorker() error {
	cfg := workerConfig{
		Client: c.opts.Client, StoreAddr: c.store.Addr, Keys: c.keys, RWKeys: c.rw, SemKeys: c.sem,
		Permits: c.opts.Permits, Goroutines: c.opts.Goroutines, Hurried: c.opts.Hurried, Timeout: c.opts.Timeout, Seed: c.rng.Uint64(),
	}
	if c.cluster != nil {
		cfg.ClusterAddrs = c.cluster.Addrs()
	} else {
		cfg.LockAddr = c.proxy.Addr()
	}
	spec, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.opts.Exe)
	cmd.Env = append(os.Environ(), workerEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &proc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	c.mu.Lock()
	c.procs[cmd.Process.Pid] = p
	c.rec.Workers++
	c.mu.Unlock()
	c.workers.Add(1)
	go c.read(p, stdout)
	return nil
}

// read handles a worker's events until its output ends, then waits for it
// and records how it ended.
func (c *coordinator) read(p *proc, stdout io.Reader) {
	defer c.workers.Done()
	defer close(p.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			c.logf("worker %d: %s", p.cmd.Process.Pid, sc.Text())
			continue
		}
		c.mu.Lock()
		c.rec.add(e)
		if c.opts.Trace != nil {
			fmt.Fprintf(c.opts.Trace, "%s\n", sc.Bytes())
		}
		c.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, stdout)
	err := p.cmd.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	pid := p.cmd.Process.Pid
	if !p.killed && err != nil {
		c.rec.Crashed = append(c.rec.Crashed, fmt.Sprintf("worker %d: %v", pid, err))
	}
	delete(c.procs, pid)
}

// stopWorkers closes every worker's stdin, which tells it to finish, and
// kills those still running after the grace period.
func (c *coordinator) stopWorkers() {
	c.mu.Lock()
	procs := make([]*proc, 0, len(c.procs))
	for _, p := range c.procs {
		procs = append(procs, p)
	}
	c.mu.Unlock()
	for _, p := range procs {
		_ = p.stdin.Close()
	}
	grace := time.After(budget(c.opts.Timeout) + storeTimeout + 10*time.Second)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-grace:
			c.mu.Lock()
			p.killed = true
			c.rec.Hung = append(c.rec.Hung, p.cmd.Process.Pid)
			c.mu.Unlock()
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// tally reads the store's counters into the record.
func (c *coordinator) tally() error {
	s := c.storeClient()
	defer s.pool.Close()
	for _, key := range c.stored() {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		t, err := s.tally(ctx, key)
		cancel()
		if err != nil {
			return err
		}
		c.rec.Store[key] = t
	}
	return nil
}

// lockDo runs one command about key on the server that holds key,
// directly, not through the proxy.
func (c *coordinator) lockDo(key, cmd string, args ...any) (any, error) {
	addr, err := c.lockAddr(key)
	if err != nil {
		return nil, err
	}
	return dialDo(addr, cmd, args...)
}

// dialDo runs one command on a new connection to addr, within a second.
func dialDo(addr, cmd string, args ...any) (any, error) {
	conn, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(time.Second), redis.DialWriteTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Do(cmd, args...)
}

func (c *coordinator) logf(format string, args ...any) {
	if c.opts.Verbose && c.opts.Log != nil {
		fmt.Fprintf(c.opts.Log, "%8.3fs  %s\n", time.Since(c.rec.Start).Seconds(), fmt.Sprintf(format, args...))
	}
}
