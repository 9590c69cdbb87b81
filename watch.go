package uncomplicated

import (
	"bufio"
	"bytes"
	"context"
	"time"

	"github.com/benbjohnson/clock"
)

// Redis without persistence forgets every lock when it restarts, and
// another process may take a lock its holder still thinks it has. While a
// Client holds locks, it asks Redis for its run_id (INFO server) every
// restartEvery; when the run_id changes, it checks each of its holds as
// Held does, so that a hold whose key vanished closes its Lost channel
// without waiting for the holder's next call.

// restartEvery is how often a Client that holds locks looks for a restart.
const restartEvery = time.Second

// A verifier is a hold the restart watch checks: a Mutex's, a Permit, or
// a hold of an RWMutex. verify asks Redis whether the hold is still there,
// closing its Lost signal when not.
type verifier interface {
	verify(ctx context.Context) (bool, error)
}

// watch records m's new hold, and starts the restart watch if it is not
// running.
func (c *Client) watch(m verifier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	if c.holding == nil {
		c.holding = map[verifier]struct{}{}
	}
	c.holding[m] = struct{}{}
	if !c.watching {
		c.watching = true
		c.cleanups.Add(1)
		go c.watchRestarts(c.settings().clock)
	}
}

// unwatch forgets m's hold.
func (c *Client) unwatch(m verifier) {
	c.mu.Lock()
	delete(c.holding, m)
	c.mu.Unlock()
}

// watchRestarts reads the run_id every restartEvery and checks the holds
// when it has changed. It ends at Close, or at a tick that finds no hold.
func (c *Client) watchRestarts(clk clock.Clock) {
	defer c.cleanups.Done()
	for {
		t := clk.Timer(restartEvery)
		select {
		case <-c.done:
			t.Stop()
			return
		case <-t.C:
		}
		c.mu.Lock()
		if len(c.holding) == 0 {
			c.watching = false
			c.mu.Unlock()
			return
		}
		ms := make([]verifier, 0, len(c.holding))
		for m := range c.holding {
			ms = append(ms, m)
		}
		c.mu.Unlock()
		c.checkRestart(ms)
	}
}

// checkRestart reads the run_id and, when it differs from the last one
// seen or none was seen yet, checks the holds of ms, until every check
// succeeds. A Pool that panics counts as an error: no
// caller could receive the panic.
func (c *Client) checkRestart(ms []verifier) {
	defer func() { _ = recover() }()
	ctx, cancel := context.WithTimeout(c.ctx, releaseTimeout)
	defer cancel()
	id := c.runID(ctx)
	if id == "" {
		return
	}
	c.mu.Lock()
	seen := c.serverID
	c.mu.Unlock()
	if seen == id {
		return
	}
	// A new run_id, or the first: Redis may have restarted since the holds
	// began. The run_id counts as seen once every hold has been checked.
	for _, m := range ms {
		if _, err := m.verify(ctx); err != nil {
			return
		}
	}
	c.mu.Lock()
	c.serverID = id
	c.mu.Unlock()
}

// runID returns the server's run_id, or "" when Redis cannot tell.
func (c *Client) runID(ctx context.Context) string {
	reply, err := c.command(ctx, c.settings().commandTimeout, "INFO", "server")
	info, ok := reply.([]byte)
	if err != nil || !ok {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		if id, ok := bytes.CutPrefix(sc.Bytes(), []byte("run_id:")); ok {
			return string(bytes.TrimSpace(id))
		}
	}
	return ""
}

// settings returns the Client's options, or the defaults when they are
// invalid (New and the other constructors report that).
func (c *Client) settings() config {
	if cfg, err := build(c.opts); err == nil {
		return cfg
	}
	return defaults()
}
