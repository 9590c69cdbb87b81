package engine

import (
	"context"
	"fmt"

	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
)

// Semaphore: see uncomplicated.Semaphore.
type Semaphore struct {
	base
	permits int
	spec    *spec
}

// NewSemaphore: see uncomplicated.NewSemaphore.
func NewSemaphore[K any](c *Client, obj interface{ ID() K }, permits int, opts ...config.Option) (*Semaphore, error) {
	return newSemaphore(c, obj, permits, opts)
}

// newSemaphore checks opts and permits, names obj's lock and makes its
// Semaphore.
func newSemaphore[K any](c *Client, obj interface{ ID() K }, permits int, opts []config.Option) (*Semaphore, error) {
	b, err := newBase(c, obj, opts)
	if err != nil {
		return nil, err
	}
	if permits < 1 || permits > limits.Permits {
		return nil, fmt.Errorf("%w: permits must be 1 to %d, got %d", sentinel.ErrInvalidArgument, limits.Permits, permits)
	}
	s := &Semaphore{base: b, permits: permits}
	s.spec = permitSpec(b.cfg.Prefix, b.name, c.id, permits)
	return s, nil
}

// Name: see uncomplicated.Semaphore.Name.
func (s *Semaphore) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Acquire: see uncomplicated.Semaphore.Acquire.
func (s *Semaphore) Acquire(ctx context.Context) (*Permit, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var p *Permit
	if _, err := s.acquiring(ctx, "Acquire", inspection.KindSemaphore, s, false, permit(&p, s.permits)); err != nil {
		return nil, err
	}
	return p, nil
}

// TryAcquire: see uncomplicated.Semaphore.TryAcquire.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Permit, bool, error) {
	if err := s.check(ctx); err != nil {
		return nil, false, err
	}
	var p *Permit
	ok, err := s.acquiring(ctx, "TryAcquire", inspection.KindSemaphore, s, true, permit(&p, s.permits))
	if !ok {
		return nil, false, err
	}
	return p, true, nil
}

// Do: see uncomplicated.Semaphore.Do.
func (s *Semaphore) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := s.check(ctx, fn); err != nil {
		return err
	}
	_, err := s.acquiring(ctx, "Do", inspection.KindSemaphore, s, false, s.run(fn))
	return err
}

// TryDo: see uncomplicated.Semaphore.TryDo.
func (s *Semaphore) TryDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if err := s.check(ctx, fn); err != nil {
		return false, err
	}
	return s.acquiring(ctx, "TryDo", inspection.KindSemaphore, s, true, s.run(fn))
}

// take and tryTake acquire a permit's hold.
func (s *Semaphore) take(ctx context.Context, o *observing) (*hold, error) {
	return s.acquire(ctx, s.spec, nil, o)
}

func (s *Semaphore) tryTake(ctx context.Context, o *observing) (*hold, error) {
	return s.try(ctx, s.spec, nil, o)
}

// permit makes the Permit of a hold in *p.
func permit(p **Permit, permits int) func(context.Context, *hold) error {
	return func(_ context.Context, h *hold) error {
		*p = &Permit{h: h, permits: permits}
		return nil
	}
}

// run is the part of Do that follows the acquisition: fn, then Release.
func (s *Semaphore) run(fn func(context.Context) error) func(context.Context, *hold) error {
	return func(ctx context.Context, h *hold) error {
		return h.run(ctx, fn, func(ctx context.Context) error { return h.release(ctx, true) })
	}
}

// check reports a nil or zero Semaphore, a nil ctx and a nil fn.
func (s *Semaphore) check(ctx context.Context, fn ...func(context.Context) error) error {
	var b *base
	if s != nil {
		b = &s.base
	}
	return b.check("*Semaphore", ctx, fn...)
}

// Permit: see uncomplicated.Permit.
type Permit struct {
	h       *hold
	permits int // its Semaphore's
}

// Resume: see uncomplicated.Semaphore.Resume.
func (s *Semaphore) Resume(ctx context.Context, handle string) (*Permit, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	hd, err := readHandle(ctx, s.c, handle, inspection.KindSemaphore)
	if err == nil && (hd.Prefix != s.cfg.Prefix || hd.Name != s.name || hd.Permits != s.permits) {
		err = fmt.Errorf("%w: a handle of another Semaphore's permit", sentinel.ErrInvalidArgument)
	}
	if err != nil {
		return nil, err
	}
	h, err := s.resume(ctx, s.spec, hd)
	if err != nil {
		return nil, s.c.opError("Resume", s.name, err)
	}
	return &Permit{h: h, permits: s.permits}, nil
}

// Handle: see uncomplicated.Permit.Handle.
func (p *Permit) Handle() (string, error) {
	if err := p.check(context.Background()); err != nil {
		return "", err
	}
	if s, ok := p.h.handle(inspection.KindSemaphore, p.permits); ok {
		return s, nil
	}
	return "", p.h.b.c.opError("Handle", p.h.b.name, p.h.b.notHeld("released"))
}

// Release: see uncomplicated.Permit.Release.
func (p *Permit) Release(ctx context.Context) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	return p.h.b.c.opError("Release", p.h.b.name, p.h.release(ctx, false))
}

// Refresh: see uncomplicated.Permit.Refresh.
func (p *Permit) Refresh(ctx context.Context) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	return p.h.b.c.opError("Refresh", p.h.b.name, p.h.Refresh(ctx))
}

// Held: see uncomplicated.Permit.Held.
func (p *Permit) Held(ctx context.Context) (bool, error) {
	if err := p.check(ctx); err != nil {
		return false, err
	}
	held, err := p.h.Held(ctx)
	return held, p.h.b.c.opError("Held", p.h.b.name, err)
}

// Fence: see uncomplicated.Permit.Fence.
func (p *Permit) Fence() uint64 {
	if p == nil || p.h == nil {
		return 0
	}
	return p.h.fence
}

// Lost: see uncomplicated.Permit.Lost.
func (p *Permit) Lost() <-chan struct{} {
	if p == nil || p.h == nil {
		return closedChan
	}
	return p.h.Lost()
}

func (p *Permit) check(ctx context.Context) error {
	switch {
	case p == nil || p.h == nil:
		return fmt.Errorf("%w: nil or zero *Permit", sentinel.ErrInvalidArgument)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", sentinel.ErrInvalidArgument)
	}
	return nil
}
