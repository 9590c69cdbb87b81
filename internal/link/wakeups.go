package link

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/trace"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"

	"github.com/benbjohnson/clock"
)

// Wake-ups: a release hands the lock to the oldest waiter in its queue
// whose Client listens, and publishes that on the channel of that Client
// and lock (see internal/lua/queue_hand.lua). A Client listens on one connection (see
// driver), subscribed to a lock's channel while one of its goroutines
// waits for that lock. It delivers each hand-off to the waiter of its
// token, whatever the lock. Waiters never depend on it: they keep trying on ticks, and
// join the queue only once Redis has confirmed their subscription, so a
// release cannot pick a waiter that would not hear it.

// maxGone bounds the tokens of waiters that left the queue without the
// lock that a Client remembers (see gone).
const maxGone = 4096

// MaxIdleChannels bounds the subscriptions a Client keeps after their last
// waiter left, so that a lock waited for again needs no SUBSCRIBE. A
// variable for the tests.
var MaxIdleChannels = func() *atomic.Int64 { var n atomic.Int64; n.Store(1024); return &n }()

const (
	// The listening connection is retried after failures with a backoff
	// that doubles from minBackoff to maxBackoff.
	minBackoff = 10 * time.Millisecond
	maxBackoff = 2 * time.Second
	// pingEvery is how often the listening connection is PINGed.
	pingEvery = time.Second
)

// Wakeups is a Client's listening connection and its subscriptions.
type Wakeups struct {
	redis   *Link
	clock   clock.Clock
	timeout time.Duration   // the command timeout, for the probe of sharded pub/sub
	probe   string          // the channel of that probe, under the Client's prefix
	ctx     context.Context // cancelled by Client.Close
	Cancel  context.CancelFunc
	sharded atomic.Int32 // sharded pub/sub: 0 not known yet, 1 yes, -1 no
	// Broke, if not nil, hears that the listening connection failed: the
	// engine's restart watch sets it.
	Broke func()
	// Refused, if not nil, hears once that Redis refused to let the
	// listening connection listen (an ACL, a proxy without pub/sub), with
	// its error reply: the waiters then work on their ticks alone. The
	// engine sets it to log that.
	Refused func(error)
	refused atomic.Bool // Refused was called
	// checkNow asks keepAlive to check at once that the connection listens
	// on the node that runs the scripts (see check).
	checkNow chan struct{}
	checked  int // the channel check looked at last, of those it may check; keepAlive's own

	mu       sync.Mutex          // guards the fields below
	conn     driver.Subscription // the listening connection; nil while down
	retrying bool                // waiting out a backoff: nothing will be confirmed soon
	changed  chan struct{}       // closed, and made again, when conn fails or retrying is set
	chans    map[string]*channel
	idle     *list.List // names of channels without waiters, least recently used first
	// gone holds the tokens of waiters that left the queue without the
	// lock, with what releases a hand-off to them, oldest first in
	// goneOrder: a hand-off to one of them (its leave failed, or is still
	// on its way) is released at once rather than left to its lease.
	gone      map[string]LeftWaiter
	goneOrder []string
}

// channel is one subscription of a Client.
type channel struct {
	waiters    map[string]chan wire.WakeUp // by token: receives its hand-offs
	subscribed bool                        // the last command sent for it was SUBSCRIBE
	pending    int                         // commands sent and not yet confirmed
	ready      chan struct{}               // closed once Redis confirmed the subscription
	confirmed  bool                        // ready is closed
	idle       *list.Element               // its place in wakeups.idle when it has no waiters
}

// NewWakeups returns the listening connection of a Client on l, not yet
// open (see Run): clk times its backoff, timeout bounds its checks, and its
// probe channel is under prefix.
func NewWakeups(l *Link, clk clock.Clock, timeout time.Duration, prefix string) *Wakeups {
	ctx, cancel := context.WithCancel(context.Background())
	return &Wakeups{
		redis: l, clock: clk, timeout: timeout, probe: prefix + ":probe", ctx: ctx, Cancel: cancel,
		chans: map[string]*channel{}, idle: list.New(), changed: make(chan struct{}),
		gone: map[string]LeftWaiter{}, checkNow: make(chan struct{}, 1),
	}
}

// A Listener is one waiter's registration on a channel.
type Listener struct {
	w     *Wakeups
	name  string
	token string
	ch    *channel
	Wake  chan wire.WakeUp // receives a hand-off of the lock to token
}

// Listen registers the waiter with token on channel name and subscribes to
// it if needed. With onlyReady it does nothing and returns nil unless the
// subscription is already confirmed.
func (w *Wakeups) Listen(name, token string, onlyReady bool) *Listener {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := w.chans[name]
	if onlyReady && (ch == nil || !ch.confirmed) {
		return nil
	}
	if ch == nil {
		ch = &channel{waiters: map[string]chan wire.WakeUp{}, ready: make(chan struct{})}
		w.chans[name] = ch
	}
	if ch.idle != nil {
		w.idle.Remove(ch.idle)
		ch.idle = nil
	}
	if !ch.subscribed && w.conn != nil {
		w.conn.Subscribe(name)
		ch.subscribed = true
		ch.pending++
	}
	l := &Listener{w: w, name: name, token: token, ch: ch, Wake: make(chan wire.WakeUp, 1)}
	ch.waiters[token] = l.Wake
	return l
}

// Waiting reports whether a waiter listens on channel name: a release
// passes the channel only then, for Redis to hand such a waiter the lock
// in its reply (see release.lua). One that starts listening meanwhile
// hears the hand-off from Redis, as a waiter of another Client does.
func (w *Wakeups) Waiting(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := w.chans[name]
	return ch != nil && len(ch.waiters) > 0
}

// State reports whether the subscription is confirmed, and whether a
// confirmation is on its way: the connection is up or being made. changed
// is closed when a confirmation stops being on its way.
func (l *Listener) State() (confirmed, coming bool, ready, changed <-chan struct{}) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	ch := l.w.chans[l.name]
	connecting := l.w.conn == nil && !l.w.retrying
	return ch.confirmed, !ch.confirmed && (connecting || ch.subscribed), ch.ready, l.w.changed
}

// signal wakes the waiters watching changed. The caller holds mu.
func (w *Wakeups) signal() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// A LeftWaiter is a waiter that left the queue without the lock: release
// releases what a hand-off that reaches it after all gave it, and late,
// if not nil, hears that one did (see the engine's slack).
type LeftWaiter struct {
	Release func(context.Context)
	Late    func()
}

// Close ends the registration; the subscription stays for a while. A
// waiter that leaves the queue without the lock passes gone (see
// leftWaiter). It reports whether a hand-off had reached the waiter that
// it did not take.
func (l *Listener) Close(gone *LeftWaiter) (handed bool) {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(l.ch.waiters, l.token)
	select {
	case wu := <-l.Wake:
		handed = wu.Attempt > 0
	default:
	}
	if gone != nil && !handed {
		w.gone[l.token] = *gone
		w.goneOrder = append(w.goneOrder, l.token)
		if len(w.goneOrder) > maxGone {
			delete(w.gone, w.goneOrder[0])
			w.goneOrder = w.goneOrder[1:]
		}
	}
	if len(l.ch.waiters) > 0 || w.chans[l.name] != l.ch {
		return handed
	}
	l.ch.idle = w.idle.PushBack(l.name)
	for int64(w.idle.Len()) > MaxIdleChannels.Load() {
		w.evict(w.idle.Remove(w.idle.Front()).(string))
	}
	return handed
}

// evict ends the subscription of an idle channel. The caller holds mu.
func (w *Wakeups) evict(name string) {
	ch := w.chans[name]
	ch.idle = nil
	if w.conn == nil || !ch.subscribed {
		if ch.pending == 0 {
			delete(w.chans, name)
		}
		return
	}
	w.conn.Unsubscribe(name)
	ch.subscribed = false
	ch.pending++
	if ch.confirmed {
		ch.ready, ch.confirmed = make(chan struct{}), false
	}
}

// Run keeps a listening connection until the Client closes.
func (w *Wakeups) Run() {
	backoff := minBackoff
	for w.ctx.Err() == nil {
		began := w.clock.Now()
		sub, err := w.open()
		if errors.Is(err, driver.ErrNoPubSub) { // cannot listen: waiters only tick
			w.mu.Lock()
			w.retrying = true
			w.signal()
			w.mu.Unlock()
			return
		}
		if err == nil {
			err = w.serve(sub)
			sub.Close()
		} else if w.Broke != nil && Transient(err) { // Redis may be restarting
			w.Broke()
		}
		w.refusedBy(err)
		if w.clock.Since(began) > maxBackoff {
			backoff = minBackoff
		}
		if !w.pause(backoff/2 + rand.N(backoff/2)) {
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// open opens a listening connection, sharded if Redis has sharded pub/sub:
// SPUBLISH, which the release scripts use where Redis has it (see
// internal/lua/queue_hand.lua), is tried once per Client, on "<prefix>:probe", a channel
// under the prefix that an ACL for the locks allows, where nobody listens.
func (w *Wakeups) open() (sub driver.Subscription, err error) {
	defer func() {
		if p := recover(); p != nil { // a driver's: no caller can receive it
			sub, err = nil, fmt.Errorf("uncomplicated: the driver panicked: %v", p)
		}
	}()
	if w.sharded.Load() == 0 {
		ctx, cancel := context.WithTimeout(w.ctx, DetachedTimeout)
		_, err := w.redis.Command(ctx, w.timeout, []string{w.probe}, "SPUBLISH", w.probe, "")
		cancel()
		var se *ServerError
		switch {
		case err == nil:
			w.sharded.Store(1)
		case errors.As(err, &se) && strings.Contains(strings.ToLower(se.Msg), "unknown command"):
			w.sharded.Store(-1)
		default:
			return nil, err
		}
	}
	return w.redis.Listen(w.ctx, w.sharded.Load() > 0)
}

// pause waits out a backoff; it reports false when the Client closed.
func (w *Wakeups) pause(d time.Duration) bool {
	w.mu.Lock()
	w.retrying = true
	w.signal()
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.retrying = false
		w.mu.Unlock()
	}()
	t := w.clock.Timer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// refusedBy tells Refused, the first time, of err, when it is Redis's
// refusal to listen rather than a failure that passes by itself.
func (w *Wakeups) refusedBy(err error) {
	err = ReplyError(err)
	var se *ServerError
	if !errors.As(err, &se) || Transient(err) || w.Refused == nil || w.refused.Swap(true) {
		return
	}
	w.Refused(err)
}

// serve subscribes conn to the channels that have waiters and reads it
// until it fails, returning the error, or the Client closes.
func (w *Wakeups) serve(conn driver.Subscription) error {
	w.mu.Lock()
	w.conn = conn
	for name, ch := range w.chans {
		if len(ch.waiters) == 0 {
			w.drop(name, ch)
			continue
		}
		conn.Subscribe(name)
		ch.subscribed = true
		ch.pending++
	}
	w.mu.Unlock()

	var pings sync.WaitGroup
	stop := make(chan struct{})
	ctx, leave := context.WithCancel(w.ctx) // keepAlive ends it when conn listens elsewhere
	defer leave()
	defer pings.Wait()
	defer close(stop)
	pings.Add(1)
	go func() {
		defer pings.Done()
		w.keepAlive(conn, stop, leave)
	}()

	for {
		e, err := conn.Receive(ctx)
		switch {
		case err != nil:
			w.down()
			return err
		case e.Kind == driver.EventMessage:
			w.Deliver(e.Channel, string(e.Data))
		default:
			w.confirm(e)
		}
	}
}

// keepAlive PINGs the listening connection every pingEvery until stop is
// closed, so that a pool's read timeout longer than that never passes on a
// quiet connection, and checks each time, or at once when asked (see
// Recheck), that it listens where the scripts run (see check); when it does
// not, keepAlive calls leave, which ends serve's Receive, and returns.
func (w *Wakeups) keepAlive(conn driver.Subscription, stop <-chan struct{}, leave func()) {
	t := w.clock.Ticker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			w.mu.Lock()
			if w.conn != nil {
				w.conn.Ping()
			}
			w.mu.Unlock()
		case <-w.checkNow:
		case <-stop:
			return
		}
		if !w.check(conn) {
			leave() // serve's Receive ends, and run opens another connection
			return
		}
	}
}

// Recheck has the listening connection checked at once (see check): the
// restart watch saw a new master.
func (w *Wakeups) Recheck() {
	select {
	case w.checkNow <- struct{}{}:
	default:
	}
}

// check asks Redis, by the way the scripts take, how many connections
// listen on one channel that conn listens on for waiters (a channel of
// its own, taken in turn, so that each is checked sooner or later): none
// means conn is not on the node that runs the scripts. A failover leaves
// it so: Sentinel and go-redis move every connection but a pub/sub one to
// the new master, and the old one stays a master of its own until Sentinel
// makes it a replica, seconds later. Releases there then find none of the
// Client's waiters listening and pass them over, and a release would hand
// the lock to a waiter that hears the old node's messages only if the old
// node relayed the new one's. It reports false when conn must be left:
// its waiters rejoin the queue once the next connection is confirmed.
func (w *Wakeups) check(conn driver.Subscription) (ok bool) {
	defer func() {
		if recover() != nil { // a driver's: no caller can receive it
			ok = true
		}
	}()
	name, ok := w.toCheck(conn)
	if !ok {
		return true
	}
	cmd := "SHARDNUMSUB"
	if w.sharded.Load() < 0 {
		cmd = "NUMSUB"
	}
	ctx, cancel := context.WithTimeout(w.ctx, DetachedTimeout)
	defer cancel()
	reply, err := w.redis.Command(ctx, w.timeout, []string{name}, "PUBSUB", cmd, name)
	r, _ := reply.([]any)
	if err != nil || len(r) != 2 {
		return true // Redis failing: the connection fails too, or it is not this one's
	}
	n, _ := r[1].(int64)
	if n > 0 {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := w.chans[name]
	return w.conn != conn || ch == nil || !ch.confirmed || len(ch.waiters) == 0
}

// toCheck picks the channel that check asks about: the next, by name, of
// those confirmed on conn that have waiters.
func (w *Wakeups) toCheck(conn driver.Subscription) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != conn {
		return "", false
	}
	var names []string
	for name, ch := range w.chans {
		if ch.confirmed && len(ch.waiters) > 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "", false
	}
	slices.Sort(names)
	w.checked = (w.checked + 1) % len(names)
	return names[w.checked], true
}

// drop forgets a channel. The caller holds mu.
func (w *Wakeups) drop(name string, ch *channel) {
	if ch.idle != nil {
		w.idle.Remove(ch.idle)
	}
	delete(w.chans, name)
}

// down forgets the subscriptions of a connection that failed: the channels
// with waiters are subscribed again on the next one.
func (w *Wakeups) down() {
	if w.Broke != nil && w.ctx.Err() == nil {
		defer w.Broke()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn = nil
	w.signal()
	for name, ch := range w.chans {
		if len(ch.waiters) == 0 {
			w.drop(name, ch)
			continue
		}
		ch.subscribed, ch.pending = false, 0
		if ch.confirmed {
			ch.ready, ch.confirmed = make(chan struct{}), false
		}
	}
}

// confirm counts the reply to a SUBSCRIBE or UNSUBSCRIBE of a channel. An
// unsubscription that Redis made of its own, when the channel's slot moved
// to another node of a Cluster, is followed by a new SUBSCRIBE, which the
// driver sends to the slot's new node; its waiters tick meanwhile.
func (w *Wakeups) confirm(e driver.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := e.Channel
	ch := w.chans[name]
	if ch != nil && ch.pending == 0 && ch.subscribed && e.Kind == driver.EventUnsubscribed {
		if ch.confirmed {
			ch.ready, ch.confirmed = make(chan struct{}), false
			w.signal() // its queued waiters watch for the new confirmation
		}
		w.conn.Subscribe(name)
		ch.pending++
		return
	}
	if ch == nil || ch.pending == 0 {
		return
	}
	ch.pending--
	switch {
	case ch.pending > 0:
	case ch.subscribed:
		if !ch.confirmed {
			close(ch.ready)
			ch.confirmed = true
		}
	case len(ch.waiters) == 0:
		w.drop(name, ch)
	}
}

// Deliver passes msg, a message on channel name, to its listener: a
// hand-off to its waiter, or a broadcast to every listener of the channel
// (see wire.ParseWakeUp). It comes from Redis, or from the reply of a
// release of this Client, which carries a hand-off to one of its waiters
// instead of a message (see internal/lua/queue_hand.lua's offer). A
// hand-off to a waiter that left the queue without the lock is released:
// its leave script may have failed. Other tokens are ignored: their waiter
// got the lock by an attempt of its own.
func (w *Wakeups) Deliver(name, msg string) {
	token, wu, ok := wire.ParseWakeUp(msg)
	if !ok {
		return
	}
	trace.Stamp(trace.Read, "", token)
	w.mu.Lock()
	gone, left := w.gone[token]
	delete(w.gone, token)
	if ch := w.chans[name]; ch != nil {
		if token == wire.Broadcast {
			for _, wake := range ch.waiters {
				send(wake, wu)
			}
		} else if wake := ch.waiters[token]; wake != nil {
			send(wake, wu)
		}
	}
	w.mu.Unlock()
	if left {
		if gone.Late != nil {
			gone.Late()
		}
		gone.Release(w.ctx)
	}
}

// send gives wake the hand-off unless it has one waiting already.
func send(wake chan wire.WakeUp, wu wire.WakeUp) {
	select {
	case wake <- wu:
	default:
	}
}
