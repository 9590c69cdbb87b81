package uncomplicated

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
)

// Elections. An Election is a Mutex in a key space of its own
// (<prefix>:election:<name>) whose holder is the leader: campaigners wait
// in its queue, and a Resign hands the lock to the oldest at once. The
// leader's value travels as the holder label of its token, with when it
// was elected (its first Refresh, made as soon as it wins, writes that
// into the token); its fence is the lock's. A new leader announces itself
// on <prefix>:elected:{<key>}, which wakes every observer of every Client
// (see broadcast); observers also read the leader every tick, so a lost
// message costs a tick, never a leader.

// ErrNoLeader: Election.Leader found no leader.
var ErrNoLeader = errors.New("uncomplicated: no leader")

// A Leader is the leader of an Election, as Redis shows it.
type Leader struct {
	Value string    // what the leader announced in Campaign
	Fence uint64    // rises with every new leader
	Since time.Time // when it was elected, by the leader's clock
}

// An Election elects one leader among the processes that campaign in it.
// Make one with Client.Election. It is safe for concurrent use; one
// Election leads, or campaigns, once at a time.
type Election struct {
	c       *Client
	cfg     config
	name    string        // its lock's key
	channel string        // where a new leader announces itself
	every   time.Duration // how often the leader refreshes its hold
	sem     chan struct{} // held by the Campaign under way

	mu   sync.Mutex
	m    *Mutex     // the lock of the current leadership; nil when none
	h    *hold      // its hold
	stop func() any // ends its refreshing
}

// Election returns the Election name on c, with opts over c's options. Its
// lock lives in a key space of its own, so it never meets a Mutex named
// name. A leader stuck for its timeout is taken over, unless
// WithTakeOver(false) says otherwise: campaigning for ever behind a frozen
// leader is rarely what anyone wants. The leader's hold is always
// refreshed, every third of the timeout (or of the lease, if shorter)
// unless WithAutoRefresh says otherwise, and so needs a lease. An empty
// name, a lease of 0 or a bad option gives an error wrapping
// ErrInvalidArgument.
func (c *Client) Election(name string, opts ...Option) (*Election, error) {
	cfg, err := c.config(opts)
	switch {
	case err != nil:
		return nil, err
	case name == "":
		return nil, fmt.Errorf("%w: empty election name", ErrInvalidArgument)
	case cfg.lease == 0:
		return nil, fmt.Errorf("%w: an election needs a lease, so that a dead leader makes way", ErrInvalidArgument)
	}
	if !cfg.takeOverSet {
		cfg.takeOver = true
	}
	every := cfg.every
	if every == 0 {
		every = max(min(cfg.timeout, cfg.lease)/3, minTick)
	}
	key := cfg.prefix + ":election:" + escape(name)
	return &Election{
		c: c, cfg: cfg, name: key, channel: cfg.prefix + ":elected:{" + key + "}", every: every,
		sem: make(chan struct{}, 1),
	}, nil
}

// Name returns the Redis key of the election's lock, such as
// lock:election:scheduler.
func (e *Election) Name() string {
	if e == nil {
		return ""
	}
	return e.name
}

// Campaign blocks until this process leads, announcing value (at most 64
// bytes, as a holder label, which anyone who can read Redis can read). An
// Election that already leads returns nil at once, its value unchanged. It
// returns an error wrapping ErrNotObtained and the cause when ctx ends or
// the Client closes first, or Redis fails.
func (e *Election) Campaign(ctx context.Context, value string) error {
	if err := e.check(ctx, value); err != nil {
		return err
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return newError(e.name, ErrNotObtained.Error()+": "+e.name+": another Campaign of this Election is under way: "+ctx.Err().Error(), ctx.Err(), ErrNotObtained)
	}
	defer func() { <-e.sem }()
	if e.IsLeader() {
		return nil
	}
	e.forget()
	cfg := e.cfg
	cfg.label = value
	m := mutexOf(base{c: e.c, cfg: cfg, name: e.name, tail: tokenTail(cfg)})
	_, err := m.acquiring(ctx, "Campaign", inspection.KindMutex, m.x.lock, nil)
	if err != nil {
		return err
	}
	h := m.x.current()
	_ = h.Refresh(ctx) // the token says when it was elected; a failure leaves when it began to campaign
	_, stop := refreshWhile(e.c.ctx, h, e.every)
	e.mu.Lock()
	e.m, e.h, e.stop = m, h, stop
	e.mu.Unlock()
	_, _, _ = m.eval(ctx, announceScript, []string{e.channel}, broadcast+" "+strconv.FormatUint(h.fence, 10))
	return nil
}

// Resign gives leadership up, and hands it to the oldest campaigner at
// once. It returns an error wrapping ErrNotHeld when this Election does not
// lead, and ErrLost too when its leadership was lost meanwhile.
func (e *Election) Resign(ctx context.Context) error {
	if err := e.check(ctx, ""); err != nil {
		return err
	}
	m, h := e.forget()
	if h == nil {
		return newError(e.name, ErrNotHeld.Error()+": "+e.name+": not leading", ErrNotHeld)
	}
	return opError("Resign", e.name, m.x.unlock(ctx, h))
}

// forget ends the current leadership in this process, if any, and returns
// its lock and hold.
func (e *Election) forget() (*Mutex, *hold) {
	e.mu.Lock()
	m, h, stop := e.m, e.h, e.stop
	e.m, e.h, e.stop = nil, nil, nil
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
	return m, h
}

// Leader returns the current leader, or an error wrapping ErrNoLeader when
// there is none. It costs Redis one script.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if err := e.check(ctx, ""); err != nil {
		return Leader{}, err
	}
	keys := mutexKeysOf(e.cfg.prefix, e.name)[:2]
	reply, _, err := e.c.redis.eval(ctx, e.cfg.commandTimeout, leaderScript, keys)
	if err != nil {
		return Leader{}, newError(e.name, "uncomplicated: "+e.name+": "+err.Error(), err)
	}
	parts, err := strs(reply)
	if err != nil || len(parts) != 2 {
		return Leader{}, newError(e.name, fmt.Sprintf("uncomplicated: %s: leader reply %v", e.name, reply), driver.ErrUnexpectedReply)
	}
	if parts[0] == "" {
		return Leader{}, newError(e.name, ErrNoLeader.Error()+": "+e.name, ErrNoLeader)
	}
	fence, _ := strconv.ParseUint(parts[1], 10, 64)
	t := parseToken(parts[0])
	return Leader{Value: t.label, Fence: fence, Since: t.since}, nil
}

// Observe returns a channel that receives the current leader at once, if
// there is one, and then every new leader, until ctx ends or the Client
// closes; then it is closed. It never receives a zero Leader, nor one
// leader twice in a row. Leaders that follow each other faster than the
// receiver reads may be coalesced, but the last is never missed; a new
// leader arrives within a second of its election, at once when its
// announcement reaches this Client.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader)
	if e.check(ctx, "") != nil {
		close(out)
		return out
	}
	go e.observe(ctx, out)
	return out
}

// observe sends the leaders of e to out, read at each announcement and at
// every tick, until ctx ends or the Client closes.
func (e *Election) observe(ctx context.Context, out chan<- Leader) {
	defer close(out)
	var wake <-chan uint64
	if w := e.c.wakeups(false); w != nil {
		l := w.listen(e.channel, newToken(), false)
		defer l.close(nil)
		wake = l.wake
	}
	var last uint64
	for {
		if leader, err := e.Leader(ctx); err == nil && leader.Fence != last {
			select {
			case out <- leader:
				last = leader.Fence
			case <-ctx.Done():
				return
			case <-e.c.done:
				return
			}
			continue // read again: a newer leader may have come meanwhile
		}
		t := e.cfg.clock.Timer(jitter(e.cfg.tick()))
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

// Lead campaigns with value, runs fn while leading and resigns when fn
// returns, also when fn panics (the panic then goes on). fn's ctx carries
// the leader's fence for FenceOf, and is cancelled when leadership is
// lost; the error then wraps ErrLost. It
// returns Campaign's error without running fn, or fn's error joined with
// Resign's. The Resign ignores ctx's cancellation, as Do's unlock does.
func (e *Election) Lead(ctx context.Context, value string, fn func(ctx context.Context) error) (err error) {
	if err := e.check(ctx, value); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalidArgument)
	}
	if err := e.Campaign(ctx, value); err != nil {
		return err
	}
	lost, fence := e.Lost(), e.fence()
	fctx, cancel := context.WithCancelCause(withFence(ctx, fence))
	done := make(chan struct{})
	var watching sync.WaitGroup
	watching.Add(1)
	go func() {
		defer watching.Done()
		select {
		case <-lost:
			cancel(newError(e.name, ErrLost.Error()+": "+e.name+": leadership lost", ErrLost))
		case <-done:
		}
	}()
	defer func() {
		close(done)
		watching.Wait()
		rctx, rcancel := releaseContext(ctx)
		defer rcancel()
		if rerr := e.Resign(rctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if isClosed(lost) && !errors.Is(err, ErrLost) {
			err = errors.Join(err, newError(e.name, ErrLost.Error()+": "+e.name+": leadership lost while fn ran", ErrLost))
		}
		cancel(nil)
	}()
	return fn(fctx)
}

// Lost returns a channel that is closed when this process's leadership is
// known to be lost: a Refresh found another token or none, or the lease
// ended before one got through. Each leadership has its own channel; a
// Resign leaves it open. When this Election does not lead, Lost returns a
// closed channel.
func (e *Election) Lost() <-chan struct{} {
	if e == nil {
		return closed
	}
	e.mu.Lock()
	h := e.h
	e.mu.Unlock()
	if h == nil {
		return closed
	}
	return h.Lost()
}

// fence is the fence of this process's leadership; 0 when it leads not.
func (e *Election) fence() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return 0
	}
	return e.h.fence
}

// IsLeader reports whether this process leads, as far as it knows: it has
// won a Campaign, not resigned, and not found its leadership lost.
func (e *Election) IsLeader() bool {
	return !isClosed(e.Lost())
}

// check reports a nil Election, a nil ctx and a value too long for a
// label.
func (e *Election) check(ctx context.Context, value string) error {
	switch {
	case e == nil || e.c == nil:
		return fmt.Errorf("%w: nil or zero *Election", ErrInvalidArgument)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	case len(value) > limits.Label:
		return fmt.Errorf("%w: value must be at most %d bytes, got %d", ErrInvalidArgument, limits.Label, len(value))
	}
	return nil
}

// leaderScript reads an election's lock and its fence counter, which while
// the lock is held is its holder's fence.
var leaderScript = driver.NewScript(2, `
return {redis.call('GET', KEYS[1]) or '', redis.call('GET', KEYS[2]) or '0'}
`)

// announceScript publishes ARGV[1] on the channel KEYS[1], sharded where
// Redis has sharded pub/sub, as the hand-offs are (see queueLua).
var announceScript = driver.NewScript(1, `
if not pcall(redis.call, 'SPUBLISH', KEYS[1], ARGV[1]) then
  redis.call('PUBLISH', KEYS[1], ARGV[1])
end
return 1
`)
