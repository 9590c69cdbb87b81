package goredis

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// A Client listens on one go-redis PubSub per node: on a Cluster, one per
// master that owns the slot of a channel it listens on, opened with the
// first such channel; elsewhere one in all. Each node's PubSub has a
// goroutine that reads it into events, and one goroutine sends the
// Subscription's commands in order, so that a node that does not answer
// (go-redis dials while it holds its PubSub's lock) holds up no caller.
// The first failure of any ends the Subscription, and the Client opens
// another: a Cluster's slot map may have changed, so the new one asks
// go-redis to reload it.

// Listen opens a Subscription; its connections open with their first
// channel.
func (d *rdbDriver) Listen(ctx context.Context, sharded bool) (driver.Subscription, error) {
	if d.cluster != nil {
		d.cluster.ReloadState(ctx)
	}
	rctx, cancel := context.WithCancel(ctx)
	s := &subscription{
		d: d, sharded: sharded, ctx: rctx, cancel: cancel,
		nodes: map[string]*redis.PubSub{}, channels: map[string]string{},
		events: make(chan driver.Event, 64), failed: make(chan struct{}),
		pending: make(chan struct{}, 1),
	}
	s.sender.Add(1)
	go s.send()
	return s, nil
}

// subscription is the driver.Subscription of a driver.
type subscription struct {
	d       *rdbDriver
	sharded bool
	ctx     context.Context // ends the readers; cancelled by Close
	cancel  context.CancelFunc
	events  chan driver.Event
	readers sync.WaitGroup
	sender  sync.WaitGroup
	pending chan struct{} // signals send that queue has commands

	mu       sync.Mutex // guards the fields below
	nodes    map[string]*redis.PubSub
	channels map[string]string // the node of each channel subscribed
	err      error             // the first failure
	failed   chan struct{}     // closed with err
	queue    []func()          // the commands send has still to send
}

func (s *subscription) Subscribe(channel string) {
	s.enqueue(func() {
		addr, ps, err := s.node(channel)
		if err == nil {
			s.mu.Lock()
			s.channels[channel] = addr
			s.mu.Unlock()
			if s.sharded {
				err = ps.SSubscribe(s.ctx, channel)
			} else {
				err = ps.Subscribe(s.ctx, channel)
			}
		}
		s.fail(err)
	})
}

func (s *subscription) Unsubscribe(channel string) {
	s.enqueue(func() {
		s.mu.Lock()
		addr, ok := s.channels[channel]
		delete(s.channels, channel)
		ps := s.nodes[addr]
		s.mu.Unlock()
		if !ok {
			return
		}
		if s.sharded {
			s.fail(ps.SUnsubscribe(s.ctx, channel))
		} else {
			s.fail(ps.Unsubscribe(s.ctx, channel))
		}
	})
}

func (s *subscription) Ping() {
	s.enqueue(func() {
		s.mu.Lock()
		nodes := make([]*redis.PubSub, 0, len(s.nodes))
		for _, ps := range s.nodes {
			nodes = append(nodes, ps)
		}
		s.mu.Unlock()
		for _, ps := range nodes {
			s.fail(ps.Ping(s.ctx))
		}
	})
}

// enqueue hands a command to send; after a failure it drops it.
func (s *subscription) enqueue(f func()) {
	s.mu.Lock()
	if s.err == nil {
		s.queue = append(s.queue, f)
	}
	s.mu.Unlock()
	select {
	case s.pending <- struct{}{}:
	default:
	}
}

// send sends the queued commands in order until Close.
func (s *subscription) send() {
	defer s.sender.Done()
	for {
		select {
		case <-s.pending:
		case <-s.ctx.Done():
			return
		}
		for {
			s.mu.Lock()
			if len(s.queue) == 0 || s.err != nil {
				s.queue = nil
				s.mu.Unlock()
				break
			}
			f := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			f()
		}
	}
}

func (s *subscription) Receive(ctx context.Context) (driver.Event, error) {
	select {
	case e := <-s.events:
		return e, nil
	case <-s.failed:
		return driver.Event{}, s.err
	case <-ctx.Done():
		return driver.Event{}, ctx.Err()
	}
}

// Close ends the Subscription at once. Its PubSubs close once the command
// under way ends: go-redis bounds a handshake with a node that does not
// answer by its ReadTimeout, not by ctx, and holds the PubSub's lock
// meanwhile.
func (s *subscription) Close() {
	s.cancel()
	go func() {
		s.sender.Wait()
		for _, ps := range s.nodes { // send, the only writer, has ended
			_ = ps.Close()
		}
	}()
}

// node returns the PubSub of the node that owns channel's slot, opening it
// with a reader if it is the first. Only send calls it.
func (s *subscription) node(channel string) (string, *redis.PubSub, error) {
	var addr string
	var client interface {
		Subscribe(context.Context, ...string) *redis.PubSub
		SSubscribe(context.Context, ...string) *redis.PubSub
	} = s.d.rdb
	if s.d.cluster != nil {
		master, err := s.d.cluster.MasterForKey(s.ctx, channel)
		if err != nil {
			return "", nil, err
		}
		addr, client = master.Options().Addr, master
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ps := s.nodes[addr]; ps != nil {
		return addr, ps, nil
	}
	var ps *redis.PubSub
	if s.sharded {
		ps = client.SSubscribe(s.ctx)
	} else {
		ps = client.Subscribe(s.ctx)
	}
	s.nodes[addr] = ps
	s.readers.Add(1)
	go s.read(ps)
	return addr, ps, nil
}

// read passes what ps receives to events until it fails or Close.
func (s *subscription) read(ps *redis.PubSub) {
	defer s.readers.Done()
	for {
		msg, err := ps.Receive(s.ctx)
		if err != nil {
			s.fail(err)
			return
		}
		var e driver.Event
		switch m := msg.(type) {
		case *redis.Message:
			e = driver.Event{Kind: driver.EventMessage, Channel: m.Channel, Data: []byte(m.Payload)}
		case *redis.Subscription:
			e = driver.Event{Kind: driver.EventSubscribed, Channel: m.Channel}
			if m.Kind == "unsubscribe" || m.Kind == "sunsubscribe" {
				e.Kind = driver.EventUnsubscribed
			}
		default: // *redis.Pong
			continue
		}
		select {
		case s.events <- e:
		case <-s.ctx.Done():
			return
		}
	}
}

// fail records the first failure, which ends the Subscription.
func (s *subscription) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || s.err != nil {
		return
	}
	if errors.Is(err, redis.ErrClosed) && s.ctx.Err() != nil {
		err = context.Canceled
	}
	s.err = err
	close(s.failed)
}
