package main

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Samples watch for what grows: every sampleEvery each worker reports its
// goroutines and the connections its client library has open to the
// locks' servers, and the coordinator counts the keys of the lock server,
// or of the Cluster's masters, summed. Callers that give up by
// the hundred each second (see hurried.go) must not leave a goroutine, a
// connection or a key each: analysis_samples.go bounds them.

// sampleEvery is the time between two samples.
const sampleEvery = 250 * time.Millisecond

// A gauge is one sample: n at the time at (Unix nanoseconds); pid is the
// worker's, for its goroutines and connections.
type gauge struct {
	pid int
	at  int64
	n   int
}

// sample reports the worker's goroutines and connections every
// sampleEvery until stop is closed.
func (w *worker) sample(stop <-chan struct{}) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		w.out.emit(event{Ev: evSample, Enter: time.Now().UnixNano(), Goroutines: runtime.NumGoroutine(), Conns: w.lib.conns()})
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// sampleKeys counts the keys of the locks' servers every sampleEvery,
// into the record, until the returned func is called; that func waits for
// the sampling to end. A count that fails (a server is down, stopped or
// restarting) is skipped.
func (c *coordinator) sampleKeys() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			if keys, ok := c.countKeys(); ok {
				at := time.Now().UnixNano()
				c.mu.Lock()
				c.rec.Keys = append(c.rec.Keys, gauge{at: at, n: keys})
				c.mu.Unlock()
				c.trace(fmt.Sprintf(`{"ev":"keys","enter":%d,"keys":%d}`, at, keys))
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// countKeys returns the keys of the locks' servers, summed; ok is false
// when a server did not answer. It counts the live keys, as KEYS lists
// them: DBSIZE counts, besides, the keys whose TTL has passed and that
// Redis has not reclaimed yet, hundreds when waiters that give up within
// ms leave their queue entries to expire.
func (c *coordinator) countKeys() (keys int, ok bool) {
	for _, m := range c.rec.Masters {
		n, err := redis.Int(dialDo(m.Addr, "EVAL", "return #redis.call('KEYS', '*')", 0))
		if err != nil {
			return 0, false
		}
		keys += n
	}
	return keys, true
}
