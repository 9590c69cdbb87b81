package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The fault kinds. The lock server's are, on a Cluster, those of the
// master that the faults hit (see cluster.go).
const (
	faultKill      = "kill"        // SIGKILL a worker inside a critical section, start another
	faultStop      = "stop"        // SIGSTOP a worker inside a critical section past the timeout
	faultPauseWait = "pausewaiter" // SIGSTOP a worker queued for a lock just before its release, past the timeout
	faultRestart   = "restart"     // kill -9 the lock server and start it again on its port
	faultOutage    = "outage"      // kill -9 the lock server and start it again after 2 timeouts
	faultPause     = "pause"       // SIGSTOP the lock server past the timeout, then SIGCONT it
	faultReset     = "reset"       // the proxy closes every connection
	faultBlackhole = "blackhole"   // the proxy forwards nothing, past the timeout
	faultLatency   = "latency"     // the proxy delays traffic by more than the timeout
	faultExpire    = "expire"      // PEXPIRE a held lock's key to 1 ms
	faultLose      = "lose"        // Redis loses its data: the lock server restarts empty, or a held lock's keys roll back (see lose.go)
)

// ofWorker reports whether a fault of kind hits a worker (a holder or a
// waiter) rather than a lock: its server, its network or its keys.
func ofWorker(kind string) bool {
	return kind == faultKill || kind == faultStop || kind == faultPauseWait
}

// The fault kinds of each deployment, in the order the report lists them.
// A Cluster has no proxy (see cluster.go); a master down or stopped takes
// the place of the proxy's faults there.
var (
	serverFaults  = []string{faultKill, faultStop, faultPauseWait, faultRestart, faultReset, faultBlackhole, faultLatency, faultExpire, faultLose}
	clusterFaults = []string{faultKill, faultStop, faultPauseWait, faultRestart, faultOutage, faultPause, faultExpire, faultLose}
)

// faultKinds returns the fault kinds of the lock server, or of a Cluster.
func faultKinds(cluster bool) []string {
	if cluster {
		return clusterFaults
	}
	return serverFaults
}

// parseFaults parses -faults: a comma-separated list of the kinds of the
// deployment (see faultKinds), "all" or "none".
func parseFaults(s string, cluster bool) ([]string, error) {
	all := faultKinds(cluster)
	switch s {
	case "all":
		return slices.Clone(all), nil
	case "none", "":
		return nil, nil
	}
	var kinds []string
	for k := range strings.SplitSeq(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(all, k) {
			return nil, fmt.Errorf("unknown fault %q (want some of %v, all or none)", k, all)
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// injectUntil injects faults one at a time until end, after a random gap
// before each: first every enabled kind once, in a random order, so that
// even a short run has them all, then kinds at random. After a fault of a
// worker, the next waits at least until the bound of the idle stretches
// it may cause has passed (see idleBound), and after the lose fault until
// loseBound has passed since Redis answered again (see settled). It
// returns only once the last fault's bound has passed, even past end.
func (c *coordinator) injectUntil(end time.Time) {
	kinds := c.opts.Faults
	if len(kinds) == 0 {
		return
	}
	first := slices.Clone(kinds)
	c.rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	var quiet time.Time // no fault before then
	for {
		gap := max(c.opts.Timeout/2+time.Duration(c.rng.Int64N(int64(c.opts.Timeout))), time.Until(quiet))
		// A fault takes up to 2 timeouts, and its effects settle within
		// budget: leave that much of the run without a new fault, once
		// every kind has had its turn.
		if len(first) == 0 && time.Now().Add(gap+2*c.opts.Timeout+budget(c.opts.Timeout)).After(end) {
			time.Sleep(time.Until(quiet))
			return
		}
		time.Sleep(gap)
		kind := kinds[c.rng.IntN(len(kinds))]
		if len(first) > 0 {
			kind, first = first[0], first[1:]
		}
		at, err := c.inject(kind)
		if err != nil {
			c.logf("fault %s not injected: %v", kind, err)
			continue
		}
		quiet = c.settled(kind, at)
		c.mu.Lock()
		c.rec.Faults[kind]++
		until := later(quiet, time.Now().Add(c.opts.Timeout))
		c.rec.Injected = append(c.rec.Injected, injection{kind: kind, at: at.UnixNano(), until: until.UnixNano()})
		c.mu.Unlock()
		c.trace(fmt.Sprintf(`{"ev":"fault","kind":%q,"enter":%d,"ret":%d}`, kind, at.UnixNano(), time.Now().UnixNano()))
	}
}

// settled returns when the effects of a fault of kind, which took effect
// at, have had the time their bound gives them: the bound of the idle
// stretches it may cause (see idleBound) and, after the lose fault, that
// of the first write accepted once Redis answered again (loseBound).
func (c *coordinator) settled(kind string, at time.Time) time.Time {
	quiet := at.Add(idleBound(kind, c.opts.Timeout))
	if kind == faultLose {
		c.mu.Lock()
		back := time.Unix(0, c.rec.Losses[len(c.rec.Losses)-1].back)
		c.mu.Unlock()
		quiet = later(quiet, back.Add(loseBound))
	}
	return quiet
}

// stopFor is how long the stop and pausewaiter faults keep a worker
// stopped: past its lease, which is the timeout.
func stopFor(timeout time.Duration) time.Duration { return timeout + timeout/2 }

// inject injects one fault and returns when it is over, with the time it
// took effect: when it hit the worker or the key it picked, or when it
// began.
func (c *coordinator) inject(kind string) (at time.Time, err error) {
	t := c.opts.Timeout
	at = time.Now()
	switch kind {
	case faultKill:
		return c.kill()
	case faultStop:
		return c.stop(stopFor(t))
	case faultPauseWait:
		return c.pauseWaiter(stopFor(t))
	case faultRestart:
		c.logf("restart: kill -9 %s", c.lockNode())
		return at, c.serverFault(faultRestart, c.lock.Restart)
	case faultOutage:
		c.logf("outage: kill -9 %s, start it again after %v", c.lockNode(), 2*t)
		return at, c.serverFault(faultOutage, func() error {
			c.lock.Kill()
			time.Sleep(2 * t)
			return c.lock.Revive()
		})
	case faultPause:
		c.logf("pause: SIGSTOP %s for %v", c.lockNode(), t+t/2)
		return at, c.serverFault(faultPause, func() error {
			if err := c.lock.Pause(); err != nil {
				return err
			}
			time.Sleep(t + t/2)
			return c.lock.Resume()
		})
	case faultReset:
		c.logf("reset: close every connection")
		c.proxy.Reset()
	case faultBlackhole:
		c.logf("blackhole for %v", t+t/2)
		c.proxy.Blackhole(true)
		time.Sleep(t + t/2)
		c.proxy.Blackhole(false)
	case faultLatency:
		c.logf("latency %v for %v", t+t/5, 2*t)
		c.proxy.SetLatency(t + t/5)
		time.Sleep(2 * t)
		c.proxy.SetLatency(0)
	case faultExpire:
		return c.expire()
	case faultLose:
		return c.lose()
	default:
		return at, fmt.Errorf("unknown fault %q", kind)
	}
	return at, nil
}

// serverFault injects a fault of the lock server with f, having counted
// the holds then open on it as its targets, and returns once f has and a
// Cluster is whole again.
func (c *coordinator) serverFault(kind string, f func() error) error {
	c.mu.Lock()
	for _, h := range c.rec.Open {
		if c.onLock[h.enter.Key] {
			c.rec.Targets[kind+" "+h.enter.Role]++
		}
	}
	c.mu.Unlock()
	if err := f(); err != nil {
		return err
	}
	c.awaitCluster()
	return nil
}

// lockNode names c.lock in the log.
func (c *coordinator) lockNode() string {
	if c.cluster != nil {
		return "master " + c.lock.Addr
	}
	return "the lock server"
}

// holder waits, up to a few timeouts, for a critical section the events
// show open that pick picks (nil: none of them), and returns it.
func (c *coordinator) holder(pick func([]*hold) *hold) (*hold, error) {
	deadline := time.Now().Add(3 * c.opts.Timeout)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		open := make([]*hold, 0, len(c.rec.Open))
		for _, h := range c.rec.Open {
			if _, live := c.procs[h.enter.Pid]; live {
				open = append(open, h)
			}
		}
		c.mu.Unlock()
		if len(open) > 0 {
			slices.SortFunc(open, func(a, b *hold) int { return int(a.enter.Seq - b.enter.Seq) })
			if h := pick(open); h != nil {
				return h, nil
			}
		}
		time.Sleep(time.Millisecond)
	}
	return nil, fmt.Errorf("no critical section open for %v", 3*c.opts.Timeout)
}

func (c *coordinator) random(open []*hold) *hold { return open[c.rng.IntN(len(open))] }

// kill SIGKILLs a worker inside a critical section and starts another.
func (c *coordinator) kill() (at time.Time, err error) {
	h, err := c.holder(c.random)
	if err != nil {
		return at, err
	}
	pid := h.enter.Pid
	c.mu.Lock()
	p := c.procs[pid]
	if p != nil {
		p.killed = true
	}
	c.mu.Unlock()
	if p == nil {
		return at, fmt.Errorf("worker %d has exited", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return at, err
	}
	at = time.Now()
	c.mu.Lock()
	c.rec.killed(pid, at)
	c.rec.Targets[faultKill+" "+h.enter.Role]++
	c.mu.Unlock()
	c.logf("kill: SIGKILL worker %d, a %s of %s (fence %d)", pid, h.enter.Role, h.enter.Key, h.enter.Fence)
	<-p.done
	return at, c.startWorker()
}

// stop SIGSTOPs a worker inside a critical section for d, then SIGCONTs it.
func (c *coordinator) stop(d time.Duration) (from time.Time, err error) {
	h, err := c.holder(c.random)
	if err != nil {
		return from, err
	}
	pid := h.enter.Pid
	if from, err = c.sigstop(pid); err != nil {
		return from, err
	}
	c.logf("stop: SIGSTOP worker %d, a %s of %s (fence %d), for %v", pid, h.enter.Role, h.enter.Key, h.enter.Fence, d)
	time.Sleep(d)
	err = c.sigcont(pid, from)
	c.mu.Lock()
	c.rec.Targets[faultStop+" "+h.enter.Role]++
	c.mu.Unlock()
	return from, err
}

// pauseWaiter SIGSTOPs a worker whose goroutine is queued for a lock just
// before the lock's holder releases it, and SIGCONTs it after d: the
// release hands the lock to a waiter that cannot take it. It parks a
// section (see parking), then stops the worker that has waited the
// longest for its lock, and lets the section go releaseAfter later. It
// tries up to parkTries parks.
func (c *coordinator) pauseWaiter(d time.Duration) (from time.Time, err error) {
	for range parkTries {
		var parked event
		if parked, err = c.park(); err != nil {
			continue
		}
		var w *wait
		if w, err = c.queued(parked); err != nil {
			_ = c.tell(parked.Pid, cmdGo)
			continue
		}
		if from, err = c.sigstop(w.pid); err != nil {
			_ = c.tell(parked.Pid, cmdGo)
			return from, err
		}
		c.logf("pausewaiter: SIGSTOP worker %d, a %s waiter of %s for %.0fms, for %v, before worker %d releases",
			w.pid, w.role, w.key, time.Since(time.Unix(0, w.from)).Seconds()*1000, d, parked.Pid)
		time.Sleep(releaseAfter)
		told := c.tell(parked.Pid, cmdGo)
		time.Sleep(d - releaseAfter)
		err = errors.Join(told, c.sigcont(w.pid, from))
		c.mu.Lock()
		c.rec.Targets[faultPauseWait+" "+parked.Role]++
		c.mu.Unlock()
		return from, err
	}
	return from, err
}

// The pausewaiter fault's timing.
const (
	parkTries    = 3                     // parks tried before the fault gives up
	releaseAfter = 20 * time.Millisecond // from the waiter's SIGSTOP to the parked section's go
)

// sigstop SIGSTOPs worker pid and returns when.
func (c *coordinator) sigstop(pid int) (time.Time, error) {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return time.Time{}, err
	}
	from := time.Now()
	c.trace(fmt.Sprintf(`{"ev":"sigstop","pid":%d,"enter":%d}`, pid, from.UnixNano()))
	return from, nil
}

// sigcont SIGCONTs worker pid, stopped since from, and records the stop.
func (c *coordinator) sigcont(pid int, from time.Time) error {
	err := syscall.Kill(pid, syscall.SIGCONT)
	to := time.Now()
	c.trace(fmt.Sprintf(`{"ev":"sigcont","pid":%d,"ret":%d}`, pid, to.UnixNano()))
	c.mu.Lock()
	c.rec.Stops = append(c.rec.Stops, stop{pid: pid, from: from, to: to})
	c.mu.Unlock()
	return err
}

// expire makes a held lock's key expire at once, under its holder: the
// Mutex's key, the RWMutex's writer key or set of readers (all the readers
// lose their locks), the Semaphore's set of holders (all of them lose their
// permits).
func (c *coordinator) expire() (at time.Time, err error) {
	for range 10 {
		h, err := c.holder(c.random)
		if err != nil {
			return at, err
		}
		key := lockKey(h.enter.Role, h.enter.Key)
		at = time.Now()
		n, err := c.lockDo(key, "PEXPIRE", key, 1)
		if err != nil {
			return at, err
		}
		if n == int64(1) {
			c.logf("expire: PEXPIRE %s 1 under a %s (fence %d)", key, h.enter.Role, h.enter.Fence)
			c.mu.Lock()
			c.rec.Targets[faultExpire+" "+h.enter.Role]++
			c.mu.Unlock()
			return at, nil
		}
	}
	return at, fmt.Errorf("no held key found to expire")
}

// trace writes a line to the trace, if any.
func (c *coordinator) trace(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opts.Trace != nil {
		fmt.Fprintf(c.opts.Trace, "%s\n", line)
	}
}
