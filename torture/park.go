package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Parking lets the coordinator time the pausewaiter fault: it asks a
// worker to park its next critical section of a role, which then, its work
// done, holds the lock until the coordinator lets it go; meanwhile the
// coordinator stops a worker queued for that lock, then lets the section
// go, and its release hands the lock to the stopped waiter.

// Commands of the coordinator to a worker, one a line on the worker's
// stdin; the end of stdin tells the worker to stop.
const (
	cmdPark = "park" // "park <role>": park the next critical section of that role
	cmdGo   = "go"   // let the parked section go, or cancel a park not yet taken
)

// parkLimit bounds how long a section stays parked when the coordinator
// does not let it go.
func parkLimit(timeout time.Duration) time.Duration { return 2 * timeout }

// A parking is a worker's pending or current park. It is safe for
// concurrent use; its zero value parks nothing.
type parking struct {
	mu   sync.Mutex    // guards role and free
	role string        // the role whose next section parks; "": none
	free chan struct{} // closed to let the parked section go; nil: no park
}

// obey carries out one command line of the coordinator; it ignores the
// lines it does not know.
func (p *parking) obey(line string) {
	cmd, role, _ := strings.Cut(line, " ")
	p.mu.Lock()
	defer p.mu.Unlock()
	switch cmd {
	case cmdPark:
		p.letGo()
		p.role, p.free = role, make(chan struct{})
	case cmdGo:
		p.letGo()
	}
}

// letGo lets the parked section go and cancels a pending park. The caller
// holds p.mu.
func (p *parking) letGo() {
	if p.free != nil {
		close(p.free)
	}
	p.role, p.free = "", nil
}

// stop lets the parked section go, as the worker stops.
func (p *parking) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.letGo()
}

// take returns, when a park of role is pending, the channel that lets the
// section go, and the park is no longer pending; nil otherwise.
func (p *parking) take(role string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil || p.role != role {
		return nil
	}
	p.role = ""
	return p.free
}

// linger holds the critical section of enter, its work done, while the
// coordinator has it parked: until told to go, ctx ends, or parkLimit.
func (w *worker) linger(ctx context.Context, enter event) {
	free := w.park.take(enter.Role)
	if free == nil {
		return
	}
	w.out.emit(event{Ev: evPark, Seq: enter.Seq, Key: enter.Key, Role: enter.Role})
	t := time.NewTimer(parkLimit(w.cfg.Timeout))
	defer t.Stop()
	select {
	case <-free:
	case <-ctx.Done():
	case <-t.C:
	}
}

// tell sends a command line to worker pid.
func (c *coordinator) tell(pid int, cmd string) error {
	c.mu.Lock()
	p := c.procs[pid]
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("worker %d has exited", pid)
	}
	_, err := fmt.Fprintln(p.stdin, cmd)
	return err
}

// parkRoles are the roles whose release hands the lock to a waiter, of
// the kinds of lock with keys: a Mutex's holder, an RWMutex's writer, a
// Semaphore's permit holder.
func (c *coordinator) parkRoles() []string {
	var roles []string
	for _, r := range []struct {
		role string
		keys int
	}{{roleMutex, c.opts.Keys}, {roleWriter, c.opts.RWKeys}, {rolePermit, c.opts.SemKeys}} {
		if r.keys > 0 {
			roles = append(roles, r.role)
		}
	}
	return roles
}

// park asks a live worker, at random, to park its next section of a role
// at random, and returns the parked section's event once the worker
// reports it, within 3 timeouts; otherwise it cancels the park.
func (c *coordinator) park() (event, error) {
	roles := c.parkRoles()
	role := roles[c.rng.IntN(len(roles))]
	c.mu.Lock()
	pids := slices.Sorted(maps.Keys(c.procs))
	c.mu.Unlock()
	if len(pids) == 0 {
		return event{}, fmt.Errorf("no worker to park")
	}
	pid := pids[c.rng.IntN(len(pids))]
	c.mu.Lock()
	delete(c.rec.Parked, pid)
	c.mu.Unlock()
	if err := c.tell(pid, cmdPark+" "+role); err != nil {
		return event{}, err
	}
	for deadline := time.Now().Add(3 * c.opts.Timeout); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		e, ok := c.rec.Parked[pid]
		c.mu.Unlock()
		if ok {
			return e, nil
		}
	}
	_ = c.tell(pid, cmdGo)
	return event{}, fmt.Errorf("worker %d parked no %s section within %v", pid, role, 3*c.opts.Timeout)
}

// queuedFor is how long a goroutine must have waited to count as queued:
// its first attempt has failed, and it has joined the lock's queue.
const queuedFor = 50 * time.Millisecond

// queued returns the goroutine of another live worker that has waited the
// longest, at least queuedFor, for the lock of the parked section, within
// half a timeout.
func (c *coordinator) queued(parked event) (*wait, error) {
	for deadline := time.Now().Add(c.opts.Timeout / 2); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		var oldest *wait
		for _, w := range c.rec.Waiting {
			_, live := c.procs[w.pid]
			if live && w.pid != parked.Pid && w.key == parked.Key && (oldest == nil || w.before(oldest)) {
				oldest = w
			}
		}
		c.mu.Unlock()
		if oldest != nil && time.Since(time.Unix(0, oldest.from)) >= queuedFor {
			return oldest, nil
		}
	}
	return nil, fmt.Errorf("nobody queued for %s behind worker %d", parked.Key, parked.Pid)
}
