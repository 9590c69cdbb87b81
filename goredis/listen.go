package goredis

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// A Client listens on one go-redis PubSub per node: on a Cluster, one per
// master that owns the slot of a channel it listens on, opened with the
// first such channel; elsewhere one in all. Each node's PubSub has a
// goroutine that reads it into events. The first failure of any ends the
// Subscription, and the Client opens another: a Cluster's slot map may
// have changed, so the new one asks the Cluster for it again.

// Listen opens a Subscription; its connections open with their first
// channel.
func (d *driver) Listen(ctx context.Context, sharded bool) (uncomplicated.Subscription, error) {
	if d.cluster != nil {
		d.cluster.ReloadState(ctx)
	}
	rctx, cancel := context.WithCancel(context.Background())
	return &subscription{
		d: d, sharded: sharded, ctx: rctx, cancel: cancel,
		nodes: map[string]*redis.PubSub{}, channels: map[string]string{},
		events: make(chan uncomplicated.Event, 64), failed: make(chan struct{}),
	}, nil
}

// subscription is the uncomplicated.Subscription of a driver.
type subscription struct {
	d       *driver
	sharded bool
	ctx     context.Context // ends the readers; cancelled by Close
	cancel  context.CancelFunc
	events  chan uncomplicated.Event
	readers sync.WaitGroup

	mu       sync.Mutex // guards the fields below
	nodes    map[string]*redis.PubSub
	channels map[string]string // the node of each channel subscribed
	err      error             // the first failure
	failed   chan struct{}     // closed with err
}

func (s *subscription) Subscribe(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	addr, ps, err := s.node(channel)
	if err == nil {
		s.channels[channel] = addr
		if s.sharded {
			err = ps.SSubscribe(s.ctx, channel)
		} else {
			err = ps.Subscribe(s.ctx, channel)
		}
	}
	s.fail(err)
}

func (s *subscription) Unsubscribe(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	addr, ok := s.channels[channel]
	if !ok {
		return
	}
	delete(s.channels, channel)
	ps := s.nodes[addr]
	var err error
	if s.sharded {
		err = ps.SUnsubscribe(s.ctx, channel)
	} else {
		err = ps.Unsubscribe(s.ctx, channel)
	}
	s.fail(err)
}

func (s *subscription) Ping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ps := range s.nodes {
		s.fail(ps.Ping(s.ctx))
	}
}

func (s *subscription) Receive(ctx context.Context) (uncomplicated.Event, error) {
	select {
	case e := <-s.events:
		return e, nil
	case <-s.failed:
		return uncomplicated.Event{}, s.err
	case <-ctx.Done():
		return uncomplicated.Event{}, ctx.Err()
	}
}

func (s *subscription) Close() {
	s.cancel()
	s.mu.Lock()
	for _, ps := range s.nodes {
		_ = ps.Close()
	}
	s.mu.Unlock()
	s.readers.Wait()
}

// node returns the PubSub of the node that owns channel's slot, opening it
// with a reader if it is the first. The caller holds mu.
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
			s.mu.Lock()
			s.fail(err)
			s.mu.Unlock()
			return
		}
		var e uncomplicated.Event
		switch m := msg.(type) {
		case *redis.Message:
			e = uncomplicated.Event{Kind: uncomplicated.EventMessage, Channel: m.Channel, Data: []byte(m.Payload)}
		case *redis.Subscription:
			e = uncomplicated.Event{Kind: uncomplicated.EventSubscribed, Channel: m.Channel}
			if m.Kind == "unsubscribe" || m.Kind == "sunsubscribe" {
				e.Kind = uncomplicated.EventUnsubscribed
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

// fail records the first failure, which ends the Subscription. The caller
// holds mu.
func (s *subscription) fail(err error) {
	if err == nil || s.err != nil {
		return
	}
	if errors.Is(err, redis.ErrClosed) && s.ctx.Err() != nil {
		err = context.Canceled
	}
	s.err = err
	close(s.failed)
}
