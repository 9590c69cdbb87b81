package engine

import (
	"context"
	"sync"

	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
)

// RWMutex: see uncomplicated.RWMutex.
type RWMutex struct {
	base
	x      exclusive // the writer
	reader *spec

	mu      sync.Mutex // guards readers
	readers []*hold    // the read holds of RLock, most recent last
}

// NewRW: see uncomplicated.NewRW.
func NewRW[K any](c *Client, obj interface{ ID() K }, opts ...config.Option) (*RWMutex, error) {
	return newRWMutex(c, obj, opts)
}

// newRWMutex checks opts, names obj's lock and makes its RWMutex.
func newRWMutex[K any](c *Client, obj interface{ ID() K }, opts []config.Option) (*RWMutex, error) {
	b, err := newBase(c, obj, opts)
	if err != nil {
		return nil, err
	}
	return rwOf(b), nil
}

// rwOf makes the RWMutex of the lock b names.
func rwOf(b base) *RWMutex {
	rw := &RWMutex{base: b}
	writer, reader := rwSpecs(b.cfg.Prefix, b.name, b.c.id)
	rw.x = exclusive{b: &rw.base, sem: make(chan struct{}, 1), spec: writer}
	rw.reader = reader
	return rw
}

// ResumeRW: see uncomplicated.ResumeRW.
func ResumeRW(ctx context.Context, c *Client, handle string, opts ...config.Option) (*RWMutex, error) {
	return resumed(ctx, c, handle, inspection.KindRWMutex, opts, func(b base) (*RWMutex, *exclusive) {
		rw := rwOf(b)
		return rw, &rw.x
	})
}

// Handle: see uncomplicated.RWMutex.Handle.
func (rw *RWMutex) Handle() (string, error) {
	if err := rw.check(context.Background()); err != nil {
		return "", err
	}
	s, err := rw.x.handle()
	return s, rw.c.opError("Handle", rw.name, err)
}

// Name: see uncomplicated.RWMutex.Name.
func (rw *RWMutex) Name() string {
	if rw == nil {
		return ""
	}
	return rw.name
}

// Fence: see uncomplicated.RWMutex.Fence.
func (rw *RWMutex) Fence() uint64 {
	if rw == nil {
		return 0
	}
	return rw.x.fence()
}

// Lock: see uncomplicated.RWMutex.Lock.
func (rw *RWMutex) Lock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	_, err := rw.acquiring(ctx, "Lock", inspection.KindRWMutex, &rw.x, false, nil)
	return err
}

// TryLock: see uncomplicated.RWMutex.TryLock.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	return rw.acquiring(ctx, "TryLock", inspection.KindRWMutex, &rw.x, true, nil)
}

// Unlock: see uncomplicated.RWMutex.Unlock.
func (rw *RWMutex) Unlock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	return rw.c.opError("Unlock", rw.name, rw.x.unlock(ctx, nil))
}

// Do: see uncomplicated.RWMutex.Do.
func (rw *RWMutex) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := rw.check(ctx, fn); err != nil {
		return err
	}
	_, err := rw.x.withLock(ctx, "Do", false, fn)
	return err
}

// TryDo: see uncomplicated.RWMutex.TryDo.
func (rw *RWMutex) TryDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if err := rw.check(ctx, fn); err != nil {
		return false, err
	}
	return rw.x.withLock(ctx, "TryDo", true, fn)
}

// Refresh: see uncomplicated.RWMutex.Refresh.
func (rw *RWMutex) Refresh(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	return rw.c.opError("Refresh", rw.name, rw.x.refresh(ctx))
}

// Held: see uncomplicated.RWMutex.Held.
func (rw *RWMutex) Held(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	held, err := rw.x.held(ctx)
	return held, rw.c.opError("Held", rw.name, err)
}

// Lost: see uncomplicated.RWMutex.Lost.
func (rw *RWMutex) Lost() <-chan struct{} {
	if rw == nil {
		return closedChan
	}
	return rw.x.lost()
}

// RLock: see uncomplicated.RWMutex.RLock.
func (rw *RWMutex) RLock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	_, err := rw.acquiring(ctx, "RLock", inspection.KindRWMutex, reader{rw: rw, kept: true}, false, nil)
	return err
}

// TryRLock: see uncomplicated.RWMutex.TryRLock.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	if err := rw.check(ctx); err != nil {
		return false, err
	}
	return rw.acquiring(ctx, "TryRLock", inspection.KindRWMutex, reader{rw: rw, kept: true}, true, nil)
}

func (rw *RWMutex) addReader(h *hold) {
	rw.mu.Lock()
	rw.readers = append(rw.readers, h)
	rw.mu.Unlock()
}

// RUnlock: see uncomplicated.RWMutex.RUnlock.
func (rw *RWMutex) RUnlock(ctx context.Context) error {
	if err := rw.check(ctx); err != nil {
		return err
	}
	rw.mu.Lock()
	n := len(rw.readers)
	if n == 0 {
		rw.mu.Unlock()
		return rw.c.opError("RUnlock", rw.name, rw.afterClose(rw.notHeld("not read-locked")))
	}
	h := rw.readers[n-1]
	rw.readers[n-1] = nil
	rw.readers = rw.readers[:n-1]
	rw.mu.Unlock()
	return rw.c.opError("RUnlock", rw.name, h.release(ctx, false))
}

// RDo: see uncomplicated.RWMutex.RDo.
func (rw *RWMutex) RDo(ctx context.Context, fn func(context.Context) error) error {
	if err := rw.check(ctx, fn); err != nil {
		return err
	}
	_, err := rw.rdo(ctx, "RDo", false, fn)
	return err
}

// TryRDo: see uncomplicated.RWMutex.TryRDo.
func (rw *RWMutex) TryRDo(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if err := rw.check(ctx, fn); err != nil {
		return false, err
	}
	return rw.rdo(ctx, "TryRDo", true, fn)
}

// rdo is RDo, or with try TryRDo.
func (rw *RWMutex) rdo(ctx context.Context, op string, try bool, fn func(context.Context) error) (bool, error) {
	return rw.acquiring(ctx, op, inspection.KindRWMutex, reader{rw: rw}, try, func(ctx context.Context, h *hold) error {
		return h.run(ctx, fn, func(ctx context.Context) error { return h.release(ctx, true) })
	})
}

// A reader takes a read hold of rw; a kept one records it for RUnlock,
// RDo's is its own.
type reader struct {
	rw   *RWMutex
	kept bool
}

func (r reader) take(ctx context.Context, o *observing) (*hold, error) {
	h, err := r.rw.acquire(ctx, r.rw.reader, nil, o)
	if err == nil && r.kept {
		r.rw.addReader(h)
	}
	return h, err
}

func (r reader) tryTake(ctx context.Context, o *observing) (*hold, error) {
	h, err := r.rw.try(ctx, r.rw.reader, nil, o)
	if h != nil && r.kept {
		r.rw.addReader(h)
	}
	return h, err
}

// check reports a nil or zero RWMutex, a nil ctx and a nil fn.
func (rw *RWMutex) check(ctx context.Context, fn ...func(context.Context) error) error {
	var b *base
	if rw != nil {
		b = &rw.base
	}
	return b.check("*RWMutex", ctx, fn...)
}
