package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// A base is what every lock of this package has: its Client, its options
// and its name; and how it reports errors and logs.
type base struct {
	c    *Client
	cfg  config
	name string
	typ  string // the type part of the name, as it is written there; "" for a plain name
	// tail ends every token of the lock: its timeout and escaped holder
	// label, made once (see holderToken).
	tail string
}

// newBase checks opts and names obj's lock, for c.
func newBase[K any](c *Client, obj interface{ ID() K }, opts []Option) (base, error) {
	cfg, err := c.config(opts)
	if err != nil {
		return base{}, err
	}
	key, typ, err := objectName(cfg, obj)
	if err != nil {
		return base{}, err
	}
	return base{c: c, cfg: cfg, name: key, typ: typ, tail: tokenTail(cfg)}, nil
}

// enter takes sem, waiting while another goroutine of this process holds
// the lock (the Mutex, or the RWMutex as a writer).
func (b *base) enter(ctx context.Context, obs settle.Observer, sem chan struct{}, o *observing) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	o.waiting()
	if obs != nil {
		defer obs.Park(time.Time{}, "")() // no timer: only an Unlock wakes it
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return b.gaveUp(ctx, ctx.Err(), "busy: "+b.name+" held by another goroutine of this process")
	case <-b.c.done:
		return b.gaveUp(ctx, ErrClosed, "")
	}
}

// open reports, as an acquisition's error, a closed Client or an ended
// ctx: redigo may still send on an ended ctx.
func (b *base) open(ctx context.Context) error {
	if b.c.closed() {
		return b.notObtained("client closed", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return b.notObtained(err.Error(), err)
	}
	return nil
}

// usable reports, for a call about a hold (Refresh, Held), a closed
// Client or an ended ctx.
func (b *base) usable(ctx context.Context) error {
	if b.c.closed() {
		return b.c.newError(b.name, ErrClosed.Error()+": "+b.name, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return b.redisError(ctx, err)
	}
	return nil
}

// check reports a nil or zero lock (b nil, or without Client), named typ,
// a nil ctx and, for Do, a nil fn.
func (b *base) check(typ string, ctx context.Context, fn ...func(context.Context) error) error {
	switch {
	case b == nil || b.c == nil:
		return fmt.Errorf("%w: nil or zero %s", ErrInvalidArgument, typ)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	case len(fn) > 0 && fn[0] == nil:
		return fmt.Errorf("%w: nil function", ErrInvalidArgument)
	}
	return nil
}

// newHold records a hold that Redis granted to token, for a call sent at
// or after from, and lets the Client's restart watch check it. With
// claimed, a release handed it over with a claim, which the hold takes
// half-way through (see claim.go). Its Observation, o, may be nil, and set
// later with observe. The token is already the Client's own (see owned).
func (b *base) newHold(kind *holdKind, keys []string, token string, fence uint64, from time.Time, claimed bool, o *observing) *hold {
	h := &hold{
		b: b, kind: kind, keys: keys, fence: fence, since: b.cfg.clock.Now(),
		op: make(chan struct{}, 1), tokens: []string{token}, from: from, lease: b.cfg.lease, obs: o,
	}
	if claimed && b.cfg.claims() {
		h.mu.Lock()
		h.claimed, h.lease = true, b.cfg.claim()
		h.takeAt(from.Add(h.lease / 2))
		h.mu.Unlock()
	}
	b.c.restarts.watch(h)
	return h
}

// leaseEnd is the latest a lease restarted now would end, by the Client's
// clock; zero without a lease.
func (b *base) leaseEnd() time.Time {
	if b.cfg.lease == 0 {
		return time.Time{}
	}
	return b.cfg.clock.Now().Add(b.cfg.lease)
}

// holderToken returns a new token for a hold, or a waiter, that began at
// since.
func (b *base) holderToken(since time.Time) string {
	return newToken() + b.c.id + "." + strconv.FormatInt(since.UnixMilli(), 36) + b.tail
}
