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

// watch records a new hold, and starts the restart watch if it is not
// running.
func (c *Client) watch(h *hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	if c.holding == nil {
		c.holding = map[*hold]struct{}{}
	}
	c.holding[h] = struct{}{}
	if !c.watching {
		c.watching = true
		c.cleanups.Add(1)
		go c.watchRestarts(c.settings().clock)
	}
}

// unwatch forgets a hold.
func (c *Client) unwatch(h *hold) {
	c.mu.Lock()
	delete(c.holding, h)
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
		hs := make([]*hold, 0, len(c.holding))
		for h := range c.holding {
			hs = append(hs, h)
		}
		c.mu.Unlock()
		c.checkRestart(hs)
	}
}

// checkRestart reads the run_id and, when it differs from the last one
// seen or none was seen yet, checks the holds hs, until every check
// succeeds. A Pool that panics counts as an error: no
// caller could receive the panic.
func (c *Client) checkRestart(hs []*hold) {
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
	for _, h := range hs {
		if _, err := h.verify(ctx); err != nil {
			return
		}
	}
	c.mu.Lock()
	c.serverID = id
	c.mu.Unlock()
}

// runID returns the server's run_id, or "" when Redis cannot tell.
func (c *Client) runID(ctx context.Context) string {
	reply, err := c.driver.do(ctx, c.settings().commandTimeout, nil, "INFO", "server")
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
