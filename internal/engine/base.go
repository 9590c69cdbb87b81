package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
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
	key, typ, err := wire.ObjectName(cfg.prefix, cfg.gemNames, obj)
	if err != nil {
		return base{}, err
	}
	return base{c: c, cfg: cfg, name: key, typ: typ, tail: wire.TokenTail(cfg.timeout, cfg.label)}, nil
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
	return wire.NewToken() + b.c.id + "." + strconv.FormatInt(since.UnixMilli(), 36) + b.tail
}
