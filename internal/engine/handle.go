package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Handles: a hold named so that another process, or this one later, can
// resume it (see wire.Handle). Handle asks nothing of Redis; resuming asks
// once whether the hold is still there, and makes it a hold of the
// resuming Client as if it had acquired it: its Refresh, release, Held,
// Lost and the restart watch work on it. Whoever releases first releases
// it; a Refresh gives it a new token, which only the refresher knows, so
// that the other's next call finds it gone.

// handle returns h's handle, of a lock of kind with permits (a permit's
// Semaphore's); false once h is released.
func (h *hold) handle(kind string, permits int) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.tokens) == 0 {
		return "", false
	}
	return wire.Handle{Kind: kind, Prefix: h.b.cfg.Prefix, Name: h.b.name, Token: h.tokens[0],
		Fence: h.fence, Lease: h.b.cfg.Lease, Permits: permits}.String(), true
}

// readHandle reads handle, which must be of a lock of kind, for the
// Client c; the error wraps ErrInvalidArgument and shows nothing of it.
func readHandle(ctx context.Context, c *Client, handle, kind string) (wire.Handle, error) {
	if c == nil || ctx == nil {
		return wire.Handle{}, fmt.Errorf("%w: a nil Client or ctx", sentinel.ErrInvalidArgument)
	}
	hd, err := wire.ParseHandle(handle)
	if err == nil && hd.Kind != kind {
		err = fmt.Errorf("%w: a handle of a %s's hold, not of a %s's", sentinel.ErrInvalidArgument, hd.Kind, kind)
	}
	return hd, err
}

// resumed returns the lock that build makes, of kind, holding the hold
// that handle names (see uncomplicated.Resume), for c with opts.
func resumed[L any](ctx context.Context, c *Client, handle, kind string, opts []config.Option, build func(base) (L, *exclusive)) (L, error) {
	var none L
	hd, err := readHandle(ctx, c, handle, kind)
	if err != nil {
		return none, err
	}
	b, err := resumedBase(c, hd, opts)
	if err != nil {
		return none, err
	}
	l, x := build(b)
	if err := x.resume(ctx, hd); err != nil {
		return none, c.opError("Resume", hd.Name, err)
	}
	return l, nil
}

// resumedBase is the base of the lock hd names, for c with opts; its
// prefix and lease are the handle's.
func resumedBase(c *Client, hd wire.Handle, opts []config.Option) (base, error) {
	cfg, err := c.lockConfig(append(slices.Clip(opts), config.WithPrefix(hd.Prefix), config.WithLease(hd.Lease)))
	if err != nil {
		return base{}, err
	}
	return base{c: c, cfg: cfg, name: hd.Name, tail: c.tailOf(cfg)}, nil
}

// resume asks Redis once whether it has the hold hd names, of the lock of
// spec c, and returns it as a hold of b's Client, its lease what Redis has
// left of it; an error matching ErrNotHeld when it has ended. The hold of
// a Mutex or an RWMutex's writer is found by its fence also when a Refresh
// has since given it a new token, which becomes the resumed hold's.
func (b *base) resume(ctx context.Context, c *spec, hd wire.Handle) (*hold, error) {
	value, fence := wire.Fenced(hd.Token, hd.Fence), ""
	if c.kind.set >= 0 {
		value, fence = hd.Token, strconv.FormatUint(hd.Fence, 10)
	}
	from := b.cfg.Clock.Now()
	reply, _, err := b.eval(ctx, lua.Resume, c.keys[:2], value, fence)
	if err != nil {
		return nil, b.redisError(ctx, err)
	}
	cur, left, err := wire.ParseResume(reply)
	if err != nil {
		return nil, b.redisError(ctx, err)
	}
	token := cur
	if c.kind.set < 0 {
		var f uint64
		token, f = wire.CutFence(cur)
		if f != hd.Fence || !wire.SameHold(token, hd.Token) && token != hd.Token {
			token = ""
		}
	}
	if token == "" || left == -2 {
		return nil, b.notHeld("the handle's hold has ended")
	}
	b.c.tokens.own(token)
	if left >= 0 && b.cfg.Lease > 0 { // so that the hold's lease ends when Redis's does
		from = from.Add(left - b.cfg.Lease)
	}
	return b.newHold(c, token, hd.Fence, from, false, false, nil), nil
}

// handle returns the handle of x's current hold (see
// uncomplicated.Mutex.Handle).
func (x *exclusive) handle() (string, error) {
	if h := x.current(); h != nil {
		if s, ok := h.handle(x.spec.primitive, 0); ok {
			return s, nil
		}
	}
	return "", x.b.notHeld("not locked")
}

// resume makes the hold hd names x's (see uncomplicated.Resume); x is new.
func (x *exclusive) resume(ctx context.Context, hd wire.Handle) error {
	h, err := x.b.resume(ctx, x.spec, hd)
	if err != nil {
		return err
	}
	x.sem <- struct{}{}
	x.mu.Lock()
	x.h = h
	x.mu.Unlock()
	return nil
}
