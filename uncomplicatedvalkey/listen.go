// Code generated from ../uncomplicatedrueidis/listen.go by fromrueidis_test.go; DO NOT EDIT.

package uncomplicatedvalkey

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// A Client hears of hand-offs on valkey-go's own connections: over RESP3, a
// subscription shares the connection that carries the node's commands, so
// a Cluster has one listening connection per master with no extra socket.
// Each channel is a valkey-go Receive in a goroutine of its own, which
// valkey-go routes by the channel's slot and subscribes again after a
// reconnection.
//
// The Client counts one confirmation for each Subscribe and each
// Unsubscribe, as a connection of its own would send them: a channel's
// receive reports its subscription once, on Redis's first confirmation or
// at its end if none came; its end reports the unsubscription, whether
// Unsubscribe asked for it or Redis made it (a slot that moved). A
// Subscribe of a channel whose receive is ending waits for that end, so
// that Redis sees the UNSUBSCRIBE before the new SUBSCRIBE. Receive does
// not unsubscribe when it returns: the receive sends the UNSUBSCRIBE itself,
// on the connection it listened on.

// unsubscribeTimeout bounds the UNSUBSCRIBE a receive sends as it ends, and
// pingTimeout a Ping.
const (
	unsubscribeTimeout = 5 * time.Second
	pingTimeout        = 5 * time.Second
)

// Listen opens a Subscription. valkey-go cannot listen on a RESP2 server
// without a connection of its own per subscription; it does that by
// itself.
func (d *valkeyDriver) Listen(ctx context.Context, sharded bool) (driver.Subscription, error) {
	sctx, cancel := context.WithCancel(context.Background())
	return &subscription{
		c: d.c, sharded: sharded, ctx: sctx, cancel: cancel,
		ready: make(chan struct{}, 1), failed: make(chan struct{}),
		receives: map[string]*receive{},
	}, nil
}

// subscription is the driver.Subscription of a valkey-go client.
type subscription struct {
	c       valkey.Client
	sharded bool
	ctx     context.Context // ends every receive; cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	pinging atomic.Bool   // a Ping is under way
	ready   chan struct{} // signals that events has some

	mu       sync.Mutex // guards the fields below
	receives map[string]*receive
	events   []driver.Event // for Receive, oldest first
	err      error          // the first failure
	failed   chan struct{}  // closed with err
}

// A receive is the Receive of one channel.
type receive struct {
	stop      context.CancelFunc
	stopped   bool          // Unsubscribe or Close ended it
	done      chan struct{} // closed once it has ended
	confirmed bool          // it reported its subscription
}

func (s *subscription) Subscribe(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	var previous chan struct{}
	if r := s.receives[channel]; r != nil {
		previous = r.done
	}
	ctx, stop := context.WithCancel(s.ctx)
	r := &receive{stop: stop, done: make(chan struct{})}
	s.receives[channel] = r
	s.wg.Add(1)
	go s.receive(ctx, channel, r, previous)
}

// receive listens on channel, after the channel's previous receive ended,
// until Unsubscribe, Close, Redis's own unsubscription or a failure.
func (s *subscription) receive(ctx context.Context, channel string, r *receive, previous chan struct{}) {
	defer s.wg.Done()
	defer close(r.done)
	if previous != nil {
		<-previous // bounded: it was stopped, and its UNSUBSCRIBE has unsubscribeTimeout
	}
	cmd, unsubscribe := s.commands(channel)
	hooked, l := s.hooked(ctx, channel, r, unsubscribe)
	var err error
	if ctx.Err() == nil {
		err = s.c.Receive(hooked, cmd, func(m valkey.PubSubMessage) {
			s.emit(driver.Event{Kind: driver.EventMessage, Channel: m.Channel, Data: []byte(m.Message)})
		})
	}
	if l.started {
		<-l.done // the new receive of the channel, if any, subscribes after
	}
	s.mu.Lock()
	stopped := r.stopped
	if s.receives[channel] == r {
		delete(s.receives, channel)
	}
	s.mu.Unlock()
	if err != nil && !stopped && s.ctx.Err() == nil {
		s.fail(err)
		return
	}
	s.confirm(channel, r) // if Redis never confirmed: the count must still add up
	s.emit(driver.Event{Kind: driver.EventUnsubscribed, Channel: channel})
}

// confirm reports r's subscription to channel, once.
func (s *subscription) confirm(channel string, r *receive) {
	s.mu.Lock()
	first := !r.confirmed
	r.confirmed = true
	s.mu.Unlock()
	if first {
		s.emit(driver.Event{Kind: driver.EventSubscribed, Channel: channel})
	}
}

func (s *subscription) Unsubscribe(channel string) {
	s.mu.Lock()
	r := s.receives[channel]
	if r != nil {
		r.stopped = true
	}
	s.mu.Unlock()
	if r == nil { // Redis unsubscribed it already: confirm at once
		s.emit(driver.Event{Kind: driver.EventUnsubscribed, Channel: channel})
		return
	}
	r.stop() // its receive unsubscribes, and reports it
}

// Ping checks that valkey-go still reaches Redis, one PING at a time, each
// bounded by pingTimeout: a failure ends the Subscription, and the Client
// opens another.
func (s *subscription) Ping() {
	if !s.pinging.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.pinging.Store(false)
		ctx, cancel := context.WithTimeout(s.ctx, pingTimeout)
		defer cancel()
		if err := s.c.Do(shared(ctx), s.c.B().Ping().Build()).Error(); err != nil && s.ctx.Err() == nil {
			s.fail(err)
		}
	}()
}

func (s *subscription) Receive(ctx context.Context) (driver.Event, error) {
	for {
		s.mu.Lock()
		if len(s.events) > 0 {
			e := s.events[0]
			s.events = s.events[1:]
			s.mu.Unlock()
			return e, nil
		}
		s.mu.Unlock()
		select {
		case <-s.ready:
		case <-s.failed:
			return driver.Event{}, s.err
		case <-ctx.Done():
			return driver.Event{}, ctx.Err()
		}
	}
}

// Close ends every receive, each leaving its channel, and waits for them.
func (s *subscription) Close() {
	s.mu.Lock()
	for _, r := range s.receives {
		r.stopped = true
	}
	s.cancel() // under mu: no Subscribe adds a receive from now on
	s.mu.Unlock()
	s.wg.Wait()
}

// emit queues e for Receive. It never blocks: valkey-go calls the hooks on
// the goroutine that reads the connection.
func (s *subscription) emit(e driver.Event) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
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

// commands are the commands that subscribe to channel and leave it,
// sharded or not.
func (s *subscription) commands(channel string) (subscribe, unsubscribe valkey.Completed) {
	if s.sharded {
		return s.c.B().Ssubscribe().Channel(channel).Build(), s.c.B().Sunsubscribe().Channel(channel).Build()
	}
	return s.c.B().Subscribe().Channel(channel).Build(), s.c.B().Unsubscribe().Channel(channel).Build()
}

// A leaving is the leave of a channel on its connection, once its receive
// was cancelled: started by valkey-go's goroutine, then read by receive.
type leaving struct {
	started bool
	done    chan struct{} // closed once the channel is left on the server
}

// hooked returns ctx with the hooks of the receive r of channel: Redis's
// confirmation confirms r; a cancel (Unsubscribe or Close) leaves the
// channel on its connection with unsubscribe; a failed connection fails
// the Subscription, as what was published meanwhile is lost.
func (s *subscription) hooked(ctx context.Context, channel string, r *receive, unsubscribe valkey.Completed) (context.Context, *leaving) {
	ctx = valkey.WithOnSubscriptionHook(ctx, func(sub valkey.PubSubSubscription) {
		if sub.Channel == channel && (sub.Kind == "subscribe" || sub.Kind == "ssubscribe") {
			s.confirm(channel, r)
		}
	})
	l := &leaving{done: make(chan struct{})}
	ctx = valkey.WithOnReceiveReturnHook(ctx, func(err error, cc valkey.CommandClient) error {
		switch {
		case errors.Is(err, context.Canceled):
			if !l.started {
				l.started = true
				go func() { // not on valkey-go's goroutine: messages may still be coming
					defer close(l.done)
					uctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
					defer cancel()
					_ = cc.Do(shared(uctx), unsubscribe).Error()
				}()
			}
		case err != nil:
			// valkey-go subscribes again on a new connection, but the
			// Client must know: it opens another Subscription.
			s.fail(err)
		}
		return err
	})
	return ctx, l
}
