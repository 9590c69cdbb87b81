package engine

import (
	"context"

	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
)

// Mutex: see uncomplicated.Mutex.
type Mutex struct {
	base
	x exclusive
}

// New: see uncomplicated.New.
func New[K any](c *Client, obj interface{ ID() K }, opts ...config.Option) (*Mutex, error) {
	return newMutex(c, obj, opts)
}

// newMutex checks opts, names obj's lock and makes its Mutex.
func newMutex[K any](c *Client, obj interface{ ID() K }, opts []config.Option) (*Mutex, error) {
	b, err := newBase(c, obj, opts)
	if err != nil {
		return nil, err
	}
	return mutexOf(b), nil
}

// mutexOf makes the Mutex of the lock b names.
func mutexOf(b base) *Mutex {
	m := &Mutex{base: b}
	m.x = exclusive{b: &m.base, sem: make(chan struct{}, 1), spec: mutexSpec(b.cfg.Prefix, b.name, b.c.id)}
	return m
}

// Resume: see uncomplicated.Resume.
func Resume(ctx context.Context, c *Client, handle string, opts ...config.Option) (*Mutex, error) {
	return resumed(ctx, c, handle, inspection.KindMutex, opts, func(b base) (*Mutex, *exclusive) {
		m := mutexOf(b)
		return m, &m.x
	})
}

// Handle: see uncomplicated.Mutex.Handle.
func (m *Mutex) Handle() (string, error) {
	if err := m.check(context.Background()); err != nil {
		return "", err
	}
	s, err := m.x.handle()
	return s, m.c.opError("Handle", m.name, err)
}

// Name: see uncomplicated.Mutex.Name.
func (m *Mutex) Name() string {
	if m == nil {
		return ""
	}
	return m.name
}

// Fence: see uncomplicated.Mutex.Fence.
func (m *Mutex) Fence() uint64 {
	if m == nil {
		return 0
	}
	return m.x.fence()
}

// Lock: see uncomplicated.Mutex.Lock.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	_, err := m.acquiring(ctx, "Lock", inspection.KindMutex, &m.x, false, nil)
	return err
}

// TryLock: see uncomplicated.Mutex.TryLock.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	return m.acquiring(ctx, "TryLock", inspection.KindMutex, &m.x, true, nil)
}

// Unlock: see uncomplicated.Mutex.Unlock.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	return m.c.opError("Unlock", m.name, m.x.unlock(ctx, nil))
}

// Refresh: see uncomplicated.Mutex.Refresh.
func (m *Mutex) Refresh(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	return m.c.opError("Refresh", m.name, m.x.refresh(ctx))
}

// Held: see uncomplicated.Mutex.Held.
func (m *Mutex) Held(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	held, err := m.x.held(ctx)
	return held, m.c.opError("Held", m.name, err)
}

// Lost: see uncomplicated.Mutex.Lost.
func (m *Mutex) Lost() <-chan struct{} {
	if m == nil {
		return closedChan
	}
	return m.x.lost()
}

// Do: see uncomplicated.Mutex.Do.
func (m *Mutex) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := m.check(ctx, fn); err != nil {
		return err
	}
	_, err := m.x.withLock(ctx, "Do", false, fn)
	return err
}

// TryDo: see uncomplicated.Mutex.TryDo.
func (m *Mutex) TryDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if err := m.check(ctx, fn); err != nil {
		return false, err
	}
	return m.x.withLock(ctx, "TryDo", true, fn)
}

// check reports a nil or zero Mutex, a nil ctx and a nil fn.
func (m *Mutex) check(ctx context.Context, fn ...func(context.Context) error) error {
	var b *base
	if m != nil {
		b = &m.base
	}
	return b.check("*Mutex", ctx, fn...)
}
