package rueidis

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/rueidis"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// A Client hears of hand-offs on rueidis's own connections: over RESP3, a
// subscription shares the connection that carries the node's commands, so
// a Cluster has one listening connection per master with no extra socket.
// Each channel is a rueidis Receive in a goroutine of its own, which
// rueidis routes by the channel's slot and subscribes again after a
// reconnection; its confirmations and messages become the Subscription's
// events.

// Listen opens a Subscription. rueidis cannot listen on a RESP2 server
// without a connection of its own per subscription; it does that by
// itself.
func (d *rueidisDriver) Listen(ctx context.Context, sharded bool) (driver.Subscription, error) {
	sctx, cancel := context.WithCancel(context.Background())
	return &subscription{
		c: d.c, sharded: sharded, ctx: sctx, cancel: cancel,
		events: make(chan driver.Event, 64), failed: make(chan struct{}),
		channels: map[string]context.CancelFunc{},
	}, nil
}

// subscription is the driver.Subscription of a rueidis client.
type subscription struct {
	c       rueidis.Client
	sharded bool
	ctx     context.Context // ends every Receive; cancelled by Close
	cancel  context.CancelFunc
	events  chan driver.Event
	wg      sync.WaitGroup

	mu       sync.Mutex // guards the fields below
	channels map[string]context.CancelFunc
	err      error         // the first failure
	failed   chan struct{} // closed with err
}

func (s *subscription) Subscribe(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[channel]; ok || s.ctx.Err() != nil {
		return
	}
	ctx, stop := context.WithCancel(s.ctx)
	s.channels[channel] = stop
	s.wg.Add(1)
	go s.receive(ctx, channel)
}

// receive listens on channel until Unsubscribe, Close, Redis's own
// unsubscription or a failure; it reports the end as an unsubscription,
// or a failure as the Subscription's.
func (s *subscription) receive(ctx context.Context, channel string) {
	defer s.wg.Done()
	cmd := s.c.B().Subscribe().Channel(channel).Build()
	if s.sharded {
		cmd = s.c.B().Ssubscribe().Channel(channel).Build()
	}
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(sub rueidis.PubSubSubscription) {
		if sub.Kind == "subscribe" || sub.Kind == "ssubscribe" {
			s.emit(driver.Event{Kind: driver.EventSubscribed, Channel: sub.Channel})
		}
	})
	err := s.c.Receive(hooked, cmd, func(m rueidis.PubSubMessage) {
		s.emit(driver.Event{Kind: driver.EventMessage, Channel: m.Channel, Data: []byte(m.Message)})
	})
	s.mu.Lock()
	if stop, ok := s.channels[channel]; ok && ctx.Err() == nil {
		delete(s.channels, channel) // Redis unsubscribed it: a slot moved
		stop()
	}
	s.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		s.fail(err)
		return
	}
	s.emit(driver.Event{Kind: driver.EventUnsubscribed, Channel: channel})
}

func (s *subscription) Unsubscribe(channel string) {
	s.mu.Lock()
	stop, ok := s.channels[channel]
	delete(s.channels, channel)
	s.mu.Unlock()
	if ok {
		stop() // the Receive ends, and rueidis unsubscribes
	}
}

// Ping checks the connection of the Subscription: rueidis keeps its own
// alive, so a failed PING means the node is gone.
func (s *subscription) Ping() {
	go func() {
		if err := s.c.Do(s.ctx, s.c.B().Ping().Build()).Error(); err != nil && s.ctx.Err() == nil {
			s.fail(err)
		}
	}()
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

// Close ends every Receive and waits for them.
func (s *subscription) Close() {
	s.cancel()
	s.wg.Wait()
}

// emit hands e to Receive, unless the Subscription is closed.
func (s *subscription) emit(e driver.Event) {
	select {
	case s.events <- e:
	case <-s.ctx.Done():
	}
}

// fail ends the Subscription with err, the first failure.
func (s *subscription) fail(err error) {
	if err == nil {
		err = errors.New("uncomplicated: listening connection failed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
		close(s.failed)
	}
}
