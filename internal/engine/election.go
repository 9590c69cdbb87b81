package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Elections. An Election is a Mutex in a key space of its own
// (<prefix>:election:<name>, a name no other lock may take) whose holder
// is the leader: campaigners wait in its queue, and a Resign hands the
// lock to the oldest at once. The leader's value travels as the holder
// label of its token; its fence is the lock's, which also tells when it
// was elected (see internal/lua/new_fence.lua). A new leader announces itself on
// <prefix>:elected:{<key>}, which wakes every observer of every Client
// (see wire.Broadcast). Observers also read the leader every tick, so a lost
// message costs a tick, never a leader.

// Leader: see uncomplicated.Leader.
type Leader struct {
	Value string    // what the leader announced in Campaign
	Fence uint64    // rises with every new leader
	Since time.Time // when it was elected, by Redis's clock
}

// Election: see uncomplicated.Election.
type Election struct {
	c       *Client
	cfg     config.Config
	name    string        // its lock's key
	channel string        // where a new leader announces itself
	every   time.Duration // how often the leader refreshes its hold
	sem     chan struct{} // held by the Campaign under way
	lead    chan struct{} // held by the Lead under way

	mu  sync.Mutex
	cur *leadership // nil when this process does not lead
}

// A leadership is one term of this process as leader.
type leadership struct {
	m     *Mutex
	h     *hold
	stop  func() any    // ends its refreshing
	ended chan struct{} // closed when it ends here: Resign, Close, or a new Campaign after its loss
}

// Election: see uncomplicated.Client.Election.
func (c *Client) Election(name string, opts ...config.Option) (*Election, error) {
	cfg, err := c.lockConfig(opts)
	if err == nil && !cfg.LeaseSet {
		cfg.Lease = min(cfg.Lease, limits.ElectionLease)
		if cfg.Every >= cfg.Lease-config.Margin(cfg.Lease) {
			cfg.Every = 0 // too slow for this lease: a third of it, as below
		}
	}
	switch {
	case err != nil:
		return nil, err
	case name == "":
		return nil, fmt.Errorf("%w: empty election name", sentinel.ErrInvalidArgument)
	case cfg.Lease == 0:
		return nil, fmt.Errorf("%w: an election needs a lease, so that a dead leader makes way", sentinel.ErrInvalidArgument)
	}
	if !cfg.TakeOverSet {
		cfg.TakeOver = true
	}
	every := cfg.Every
	if every == 0 {
		every = cfg.KeepAlive()
	}
	key := cfg.Prefix + wire.ElectionPart + wire.Escape(name)
	return &Election{
		c: c, cfg: cfg, name: key, every: every, channel: cfg.Prefix + ":elected:{" + key + "}",
		sem: make(chan struct{}, 1), lead: make(chan struct{}, 1),
	}, nil
}

// Name: see uncomplicated.Election.Name.
func (e *Election) Name() string {
	if e == nil {
		return ""
	}
	return e.name
}

// Campaign: see uncomplicated.Election.Campaign.
func (e *Election) Campaign(ctx context.Context, value string) error {
	if err := e.check(ctx, value); err != nil {
		return err
	}
	_, err := e.campaign(ctx, value)
	return err
}

// campaign is Campaign; it returns the leadership it won, or found.
func (e *Election) campaign(ctx context.Context, value string) (*leadership, error) {
	if err := e.take(ctx, e.sem, "another Campaign of this Election is under way"); err != nil {
		return nil, err
	}
	defer func() { <-e.sem }()
	e.mu.Lock()
	l := e.cur
	e.mu.Unlock()
	if l != nil && !isClosed(l.h.Lost()) {
		return l, nil
	}
	if old := e.forget(l); old != nil { // lost: its release finds it so
		_ = old.m.x.unlock(ctx, old.h)
	}
	cfg := e.cfg
	cfg.Label = value
	m := mutexOf(base{c: e.c, cfg: cfg, name: e.name, tail: e.c.tailOf(cfg)})
	if _, err := m.acquiring(ctx, "Campaign", inspection.KindMutex, &m.x, false, nil); err != nil {
		return nil, err
	}
	h := m.x.current()
	if !e.c.backgroundStarts() { // Close has begun: give it back
		rctx, cancel := releaseContext(ctx)
		defer cancel()
		_ = m.x.unlock(rctx, h)
		return nil, e.c.opError("Campaign", e.name, m.notObtained("client closed", sentinel.ErrClosed))
	}
	_ = h.Refresh(ctx) // its token tells when it was elected from now on
	refreshing, stop := refreshWhile(e.c.ctx, h, e.every)
	l = &leadership{m: m, h: h, stop: stop, ended: make(chan struct{})}
	e.mu.Lock()
	e.cur = l
	e.mu.Unlock()
	go func() {
		defer e.c.cleanups.Done()
		e.watch(l, refreshing)
	}()
	e.announce(l)
	return l, nil
}

// take takes sem, or returns an error wrapping ErrNotObtained, saying
// busy, when ctx ends first.
func (e *Election) take(ctx context.Context, sem chan struct{}, busy string) error {
	if err := takeOp(ctx, sem); err != nil {
		return e.c.newError(e.name, sentinel.ErrNotObtained.Error()+": "+e.name+": "+busy+": "+err.Error(), err, sentinel.ErrNotObtained)
	}
	return nil
}

// announce tells observers that l leads: it publishes l's fence, unless a
// newer leader has come. It tries twice, under the Client's ctx; observers
// that miss it read the leader at their next tick.
func (e *Election) announce(l *leadership) {
	for range 2 {
		_, _, err := l.m.eval(e.c.ctx, lua.Announce, []string{e.name, e.channel},
			l.h.fence, wire.Broadcast+" "+strconv.FormatUint(l.h.fence, 10))
		if err == nil {
			return
		}
	}
}

// watch ends l in this process when its Client closes, resigning it, and
// marks it lost when its refreshing ended without finding it lost (a
// driver panicked), until l ends otherwise. Close waits for it.
func (e *Election) watch(l *leadership, refreshing context.Context) {
	select {
	case <-e.c.done:
		if e.forget(l) != nil {
			ctx, cancel := context.WithTimeout(context.Background(), link.DetachedTimeout)
			defer cancel()
			_ = l.m.x.unlock(ctx, l.h)
		}
	case <-refreshing.Done():
		select {
		case <-l.ended: // forget stopped it
		default:
			if cause := context.Cause(refreshing); !errors.Is(cause, sentinel.ErrLost) {
				l.h.lose(e.c.ctx, l.h.lostSignal(), "refreshing it failed: "+cause.Error())
			}
		}
	case <-l.ended:
	}
}

// Resign: see uncomplicated.Election.Resign.
func (e *Election) Resign(ctx context.Context) error {
	if err := e.check(ctx, ""); err != nil {
		return err
	}
	l := e.forget(nil)
	if l == nil {
		return e.c.newError(e.name, sentinel.ErrNotHeld.Error()+": "+e.name+": not leading", sentinel.ErrNotHeld)
	}
	return e.c.opError("Resign", e.name, l.m.x.unlock(ctx, l.h))
}

// forget ends the current leadership in this process, if it is want or
// want is nil, and returns it; nil when there is none. It does not wait
// for the leadership's refreshing to end: it may be what calls forget (an
// Observer's Lost that resigns).
func (e *Election) forget(want *leadership) *leadership {
	e.mu.Lock()
	l := e.cur
	if l == nil || want != nil && l != want {
		e.mu.Unlock()
		return nil
	}
	e.cur = nil
	e.mu.Unlock()
	close(l.ended)
	go l.stop()
	return l
}

// Leader: see uncomplicated.Election.Leader.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if err := e.check(ctx, ""); err != nil {
		return Leader{}, err
	}
	return e.read(ctx)
}

// read returns the current leader, as its lock's holder tells.
func (e *Election) read(ctx context.Context) (Leader, error) {
	reply, err := e.c.redis.Command(ctx, e.cfg.CommandTimeout, []string{e.name}, "GET", e.name)
	if err != nil {
		return Leader{}, e.c.newError(e.name, "uncomplicated: "+e.name+": "+err.Error(), err)
	}
	v, ok := reply.([]byte)
	if reply != nil && !ok {
		return Leader{}, e.c.newError(e.name, fmt.Sprintf("uncomplicated: %s: leader reply %T", e.name, reply), driver.ErrUnexpectedReply)
	}
	if len(v) == 0 {
		return Leader{}, e.c.newError(e.name, sentinel.ErrNoLeader.Error()+": "+e.name, sentinel.ErrNoLeader)
	}
	token, fence := wire.CutFence(string(v))
	t := wire.ParseToken(token)
	l := Leader{Value: t.Label, Fence: fence, Since: t.Since}
	if fence > 0 {
		l.Since = time.UnixMicro(int64(fence))
	}
	return l, nil
}

// Observe is e's Observe (see uncomplicated.Election.Observe), whose
// channel receives each Leader as as turns it into the caller's type.
func Observe[L any](ctx context.Context, e *Election, as func(Leader) L) <-chan L {
	out := make(chan L)
	if e.check(ctx, "") != nil {
		close(out)
		return out
	}
	go observeLeaders(ctx, e, out, as)
	return out
}

// observeLeaders sends the leaders of e to out, as as turns them, read at
// each announcement and at every tick, until ctx ends or the Client
// closes.
func observeLeaders[L any](ctx context.Context, e *Election, out chan<- L, as func(Leader) L) {
	defer close(out)
	var wake <-chan wire.WakeUp
	if w := e.c.wakeups(false); w != nil {
		l := w.Listen(e.channel, wire.NewToken(), false)
		defer l.Close(nil)
		wake = l.Wake
	}
	var last uint64 // the fence of the last leader sent
	for {
		leader, err := e.read(ctx)
		if err == nil && leader.Fence != last {
			select {
			case out <- as(leader):
				last = leader.Fence
			case <-ctx.Done():
				return
			case <-e.c.done:
				return
			}
			continue // read again: a newer leader may have come meanwhile
		}
		t := e.cfg.Clock.Timer(e.cfg.Sleep())
		select {
		case <-t.C:
		case <-wake:
		case <-ctx.Done():
		case <-e.c.done:
		}
		t.Stop()
		if ctx.Err() != nil || e.c.closed() {
			return
		}
	}
}

// Lead: see uncomplicated.Election.Lead.
func (e *Election) Lead(ctx context.Context, value string, fn func(ctx context.Context) error) (err error) {
	if err := e.check(ctx, value); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil function", sentinel.ErrInvalidArgument)
	}
	if err := e.take(ctx, e.lead, "another Lead of this Election is under way"); err != nil {
		return err
	}
	defer func() { <-e.lead }()
	l, err := e.campaign(ctx, value)
	if err != nil {
		return err
	}
	lost := l.h.Lost() // this leadership's: after the Resign, Lost is closed
	fctx, stop := e.term(ctx, l, lost)
	defer func() {
		stop()
		if e.forget(l) != nil {
			rerr := releaseAfter(ctx, isClosed(lost), func(rctx context.Context) error {
				return e.c.opError("Resign", e.name, l.m.x.unlock(rctx, l.h))
			})
			if rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		if isClosed(lost) && !errors.Is(err, sentinel.ErrLost) {
			err = errors.Join(err, l.m.lostError("leadership lost while fn ran"))
		}
	}()
	return fn(fctx)
}

// term returns the ctx of Lead's fn under leadership l: it carries l's
// fence, and is cancelled when l is lost (lost closes) or ends (a Resign,
// Close). stop ends the watching and the ctx.
func (e *Election) term(ctx context.Context, l *leadership, lost <-chan struct{}) (fctx context.Context, stop func()) {
	fctx, cancel := context.WithCancelCause(withFence(ctx, l.h.fence))
	done, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-lost:
			cancel(l.m.lostError("leadership lost"))
		case <-l.ended:
			var closed []error
			if e.c.closed() {
				closed = append(closed, sentinel.ErrClosed)
			}
			cancel(e.c.newError(e.name, sentinel.ErrNotHeld.Error()+": "+e.name+": leadership ended", sentinel.ErrNotHeld, closed...))
		case <-done:
		}
	}()
	return fctx, func() {
		close(done)
		<-watched
		cancel(nil)
	}
}

// Lost: see uncomplicated.Election.Lost.
func (e *Election) Lost() <-chan struct{} {
	if e == nil {
		return closedChan
	}
	e.mu.Lock()
	l := e.cur
	e.mu.Unlock()
	if l == nil {
		return closedChan
	}
	return l.h.Lost()
}

// IsLeader: see uncomplicated.Election.IsLeader.
func (e *Election) IsLeader() bool {
	return !isClosed(e.Lost())
}

// check reports a nil Election, a nil ctx and a value too long for a
// label.
func (e *Election) check(ctx context.Context, value string) error {
	switch {
	case e == nil || e.c == nil:
		return fmt.Errorf("%w: nil or zero *Election", sentinel.ErrInvalidArgument)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", sentinel.ErrInvalidArgument)
	case len(value) > limits.Label:
		return fmt.Errorf("%w: value must be at most %d bytes, got %d", sentinel.ErrInvalidArgument, limits.Label, len(value))
	}
	return nil
}
