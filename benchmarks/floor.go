package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/trace"
)

// The push floor (row pushFloor) is the least a hand-off over Redis pub/sub
// can take: a lock whose state lives in the process, a queue of waiters in
// arrival order, and whose hand-off alone goes through Redis. A release
// takes the oldest waiter off the queue and PUBLISHes to that waiter's
// channel on its own connection; the waiter, blocked in Receive on a
// subscription of its own, returns from Lock when it hears the message:
// one command to Redis and one message from it, with no script, no
// dispatch between goroutines and no state in Redis. Every lock that
// hands off over pub/sub pays at least that; ours is divided by it.

const pushFloor = "push floor"

// floorLock is the in-process state of one push-floor lock.
type floorLock struct {
	mu    sync.Mutex
	held  bool
	queue []*floorLocker // waiters, oldest first
}

// floorLocker is one simulated process: a connection that publishes, and
// a subscription to its own channel.
type floorLocker struct {
	l       *floorLock
	channel string
	pub     redis.Conn
	sub     redis.PubSubConn
	broken  error // why its subscription serves no more
}

func openPushFloor(addr, key string, n, _ int) ([]locker, func(), error) {
	l := &floorLock{}
	lockers := make([]locker, 0, n)
	var conns []redis.Conn
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	for i := range n {
		pub, err := redis.Dial("tcp", addr)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		conns = append(conns, pub)
		sub, err := redis.Dial("tcp", addr)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		conns = append(conns, sub)
		fl := &floorLocker{l: l, channel: key + ":floor:" + strconv.Itoa(i), pub: pub, sub: redis.PubSubConn{Conn: sub}}
		if err := fl.sub.Subscribe(fl.channel); err != nil {
			closeAll()
			return nil, nil, err
		}
		if _, ok := fl.sub.ReceiveWithTimeout(5 * time.Second).(redis.Subscription); !ok {
			closeAll()
			return nil, nil, fmt.Errorf("push floor: no confirmation of the subscription to %s", fl.channel)
		}
		lockers = append(lockers, fl)
	}
	return lockers, closeAll, nil
}

// Lock takes the lock if it is free, else queues and waits for the
// hand-off message, until ctx's deadline (a minute without one). A waiter
// that gives up leaves the queue, or passes on the lock a release handed
// it meanwhile; its subscription, which redigo closes after a timeout,
// then serves no more.
func (f *floorLocker) Lock(ctx context.Context) error {
	if f.broken != nil {
		return f.broken
	}
	f.l.mu.Lock()
	if !f.l.held {
		f.l.held = true
		f.l.mu.Unlock()
		return nil
	}
	f.l.queue = append(f.l.queue, f)
	f.l.mu.Unlock()
	timeout := time.Minute
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond) // 0 would be no timeout
	}
	var err error
	switch m := f.sub.ReceiveWithTimeout(timeout).(type) {
	case redis.Message:
		trace.Stamp(trace.Read, "", f.channel) // its steps, for -trace: read, woken and returned are one
		trace.Stamp(trace.Woken, "", f.channel)
		trace.Stamp(trace.Returned, "", f.channel)
		return nil
	case error:
		err = fmt.Errorf("push floor: no hand-off: %w", m)
	default:
		err = fmt.Errorf("push floor: %T while waiting for the hand-off", m)
	}
	f.broken = err
	f.l.mu.Lock()
	i := slices.Index(f.l.queue, f)
	if i >= 0 {
		f.l.queue = slices.Delete(f.l.queue, i, i+1)
	}
	f.l.mu.Unlock()
	if i < 0 { // handed the lock meanwhile: pass it on
		return errors.Join(err, f.Unlock(context.Background()))
	}
	return err
}

// Unlock hands the lock to the oldest waiter, or frees it.
func (f *floorLocker) Unlock(context.Context) error {
	trace.Stamp(trace.Unlock, pushFloor, "")
	f.l.mu.Lock()
	if len(f.l.queue) == 0 {
		f.l.held = false
		f.l.mu.Unlock()
		return nil
	}
	next := f.l.queue[0]
	f.l.queue = f.l.queue[1:]
	f.l.mu.Unlock()
	trace.Stamp(trace.Sent, pushFloor, "")
	_, err := f.pub.Do("PUBLISH", next.channel, "go")
	trace.Stamp(trace.Reply, pushFloor, next.channel)
	return err
}

// printFloorRatios divides the hand-off p50 of the Mutex on each client
// library, on the server, by the push floor's.
func printFloorRatios(w io.Writer, results []result) {
	floor, ok := find(results, pushFloor)
	if !ok || floor.handoffs == 0 || floor.handoffP50 <= 0 {
		return
	}
	handoff := func(r result) time.Duration {
		if r.handoffs == 0 {
			return 0
		}
		return r.handoffP50
	}
	if parts := clientRatios(results, handoff, floor.handoffP50); parts != "" {
		fmt.Fprintf(w, "\nHand-off p50 ÷ the push floor's (%s): %s.\n", micros(floor.handoffP50), parts)
	}
}
