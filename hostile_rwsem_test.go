package uncomplicated_test

import (
	"context"
	"errors"
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// Bad input to the RWMutex and the Semaphore: every call returns an error
// matching the package's sentinels, never panics, and changes nothing in
// Redis.
func TestHostile_rwAndSemaphore(t *testing.T) {
	IA, ID, NO := uncomplicated.ErrInvalidArgument, uncomplicated.ErrInvalidArgument, uncomplicated.ErrNotObtained
	bg := context.Background()
	noop := func(context.Context) error { return nil }
	var nilCtx context.Context
	var nilRW *uncomplicated.RWMutex
	var nilS *uncomplicated.Semaphore
	var nilP *uncomplicated.Permit
	zeroRW, zeroS, zeroP := &uncomplicated.RWMutex{}, &uncomplicated.Semaphore{}, &uncomplicated.Permit{}
	type env struct {
		c  *uncomplicated.Client
		rw *uncomplicated.RWMutex
		s  *uncomplicated.Semaphore
		p  *uncomplicated.Permit // held
	}
	bools := func(ok bool, err error) error {
		if ok {
			return errors.New("true")
		}
		return err
	}
	permit := func(p *uncomplicated.Permit, ok bool, err error) error {
		if p != nil || ok {
			return errors.New("a permit")
		}
		return err
	}
	acquire := func(p *uncomplicated.Permit, err error) error {
		if p != nil {
			return errors.New("a permit")
		}
		return err
	}
	cases := []struct {
		name string
		call func(e env) error
		want []error
	}{
		{"NewSemaphore 0 permits", func(e env) error { _, err := uncomplicated.NewSemaphore(e.c, Order{2}, 0); return err }, []error{IA}},
		{"NewSemaphore -1 permits", func(e env) error { _, err := uncomplicated.NewSemaphore(e.c, Order{2}, -1); return err }, []error{IA}},
		{"NewSemaphore too many permits", func(e env) error {
			_, err := uncomplicated.NewSemaphore(e.c, Order{2}, 10001)
			return err
		}, []error{IA}},
		{"NewSemaphore nil object", func(e env) error { _, err := uncomplicated.NewSemaphore[int64](e.c, nil, 1); return err }, []error{ID}},
		{"NamedSemaphore empty", func(e env) error { _, err := uncomplicated.NewSemaphore(e.c, uncomplicated.Named(""), 1); return err }, []error{ID}},
		{"NamedSemaphore nil Client", func(env) error {
			_, err := uncomplicated.NewSemaphore((*uncomplicated.Client)(nil), uncomplicated.Named("x"), 1)
			return err
		}, []error{IA}},
		{"NamedSemaphore bad option", func(e env) error {
			_, err := uncomplicated.NewSemaphore(e.c, uncomplicated.Named("x"), 1, uncomplicated.WithTimeout(0))
			return err
		}, []error{IA}},
		{"NewRW nil object", func(e env) error { _, err := uncomplicated.NewRW[int64](e.c, nil); return err }, []error{ID}},
		{"NamedRW empty", func(e env) error { _, err := uncomplicated.NewRW(e.c, uncomplicated.Named("")); return err }, []error{ID}},
		{"NamedRW nil Client", func(env) error {
			_, err := uncomplicated.NewRW((*uncomplicated.Client)(nil), uncomplicated.Named("x"))
			return err
		}, []error{IA}},
		{"NamedRW bad option", func(e env) error {
			_, err := uncomplicated.NewRW(e.c, uncomplicated.Named("x"), uncomplicated.WithTicks(0))
			return err
		}, []error{IA}},

		{"nil Semaphore Acquire", func(env) error { return acquire(nilS.Acquire(bg)) }, []error{IA}},
		{"nil Semaphore TryAcquire", func(env) error { return permit(nilS.TryAcquire(bg)) }, []error{IA}},
		{"nil Semaphore Do", func(env) error { return nilS.Do(bg, noop) }, []error{IA}},
		{"zero Semaphore Acquire", func(env) error { return acquire(zeroS.Acquire(bg)) }, []error{IA}},
		{"zero Semaphore TryAcquire", func(env) error { return permit(zeroS.TryAcquire(bg)) }, []error{IA}},
		{"zero Semaphore Do", func(env) error { return zeroS.Do(bg, noop) }, []error{IA}},
		{"Acquire nil ctx", func(e env) error { return acquire(e.s.Acquire(nilCtx)) }, []error{IA}},
		{"TryAcquire nil ctx", func(e env) error { return permit(e.s.TryAcquire(nilCtx)) }, []error{IA}},
		{"Semaphore Do nil ctx", func(e env) error { return e.s.Do(nilCtx, noop) }, []error{IA}},
		{"Semaphore Do nil fn", func(e env) error { return e.s.Do(bg, nil) }, []error{IA}},
		{"Acquire ended ctx", func(e env) error { return acquire(e.s.Acquire(cancelled())) }, []error{NO, context.Canceled}},
		{"TryAcquire expired ctx", func(e env) error { return permit(e.s.TryAcquire(expired(t))) }, []error{NO, context.DeadlineExceeded}},

		{"nil Permit Release", func(env) error { return nilP.Release(bg) }, []error{IA}},
		{"nil Permit Refresh", func(env) error { return nilP.Refresh(bg) }, []error{IA}},
		{"nil Permit Held", func(env) error { return bools(nilP.Held(bg)) }, []error{IA}},
		{"zero Permit Release", func(env) error { return zeroP.Release(bg) }, []error{IA}},
		{"zero Permit Refresh", func(env) error { return zeroP.Refresh(bg) }, []error{IA}},
		{"zero Permit Held", func(env) error { return bools(zeroP.Held(bg)) }, []error{IA}},
		{"Release nil ctx", func(e env) error { return e.p.Release(nilCtx) }, []error{IA}},
		{"Refresh nil ctx", func(e env) error { return e.p.Refresh(nilCtx) }, []error{IA}},
		{"Held nil ctx", func(e env) error { return bools(e.p.Held(nilCtx)) }, []error{IA}},
		{"Refresh ended ctx", func(e env) error { return e.p.Refresh(cancelled()) }, []error{context.Canceled}},
		{"Held ended ctx", func(e env) error { return bools(e.p.Held(cancelled())) }, []error{context.Canceled}},

		{"nil RWMutex Lock", func(env) error { return nilRW.Lock(bg) }, []error{IA}},
		{"nil RWMutex TryLock", func(env) error { return bools(nilRW.TryLock(bg)) }, []error{IA}},
		{"nil RWMutex Unlock", func(env) error { return nilRW.Unlock(bg) }, []error{IA}},
		{"nil RWMutex Do", func(env) error { return nilRW.Do(bg, noop) }, []error{IA}},
		{"nil RWMutex RLock", func(env) error { return nilRW.RLock(bg) }, []error{IA}},
		{"nil RWMutex TryRLock", func(env) error { return bools(nilRW.TryRLock(bg)) }, []error{IA}},
		{"nil RWMutex RUnlock", func(env) error { return nilRW.RUnlock(bg) }, []error{IA}},
		{"nil RWMutex RDo", func(env) error { return nilRW.RDo(bg, noop) }, []error{IA}},
		{"zero RWMutex Lock", func(env) error { return zeroRW.Lock(bg) }, []error{IA}},
		{"zero RWMutex TryLock", func(env) error { return bools(zeroRW.TryLock(bg)) }, []error{IA}},
		{"zero RWMutex Unlock", func(env) error { return zeroRW.Unlock(bg) }, []error{IA}},
		{"zero RWMutex Do", func(env) error { return zeroRW.Do(bg, noop) }, []error{IA}},
		{"zero RWMutex RLock", func(env) error { return zeroRW.RLock(bg) }, []error{IA}},
		{"zero RWMutex TryRLock", func(env) error { return bools(zeroRW.TryRLock(bg)) }, []error{IA}},
		{"zero RWMutex RUnlock", func(env) error { return zeroRW.RUnlock(bg) }, []error{IA}},
		{"zero RWMutex RDo", func(env) error { return zeroRW.RDo(bg, noop) }, []error{IA}},
		{"RW Lock nil ctx", func(e env) error { return e.rw.Lock(nilCtx) }, []error{IA}},
		{"RW TryLock nil ctx", func(e env) error { return bools(e.rw.TryLock(nilCtx)) }, []error{IA}},
		{"RW Unlock nil ctx", func(e env) error { return e.rw.Unlock(nilCtx) }, []error{IA}},
		{"RW RLock nil ctx", func(e env) error { return e.rw.RLock(nilCtx) }, []error{IA}},
		{"RW TryRLock nil ctx", func(e env) error { return bools(e.rw.TryRLock(nilCtx)) }, []error{IA}},
		{"RW RUnlock nil ctx", func(e env) error { return e.rw.RUnlock(nilCtx) }, []error{IA}},
		{"RW Do nil fn", func(e env) error { return e.rw.Do(bg, nil) }, []error{IA}},
		{"RW RDo nil fn", func(e env) error { return e.rw.RDo(bg, nil) }, []error{IA}},
		{"RW RDo nil ctx", func(e env) error { return e.rw.RDo(nilCtx, noop) }, []error{IA}},
		{"RW Lock ended ctx", func(e env) error { return e.rw.Lock(cancelled()) }, []error{NO, context.Canceled}},
		{"RW RLock ended ctx", func(e env) error { return e.rw.RLock(cancelled()) }, []error{NO, context.Canceled}},
		{"RW TryRLock expired ctx", func(e env) error { return bools(e.rw.TryRLock(expired(t))) }, []error{NO, context.DeadlineExceeded}},
		{"RW Unlock not held", func(e env) error { return e.rw.Unlock(bg) }, []error{uncomplicated.ErrNotHeld}},
		{"nil RWMutex Refresh", func(env) error { return nilRW.Refresh(bg) }, []error{IA}},
		{"nil RWMutex Held", func(env) error { return bools(nilRW.Held(bg)) }, []error{IA}},
		{"zero RWMutex Refresh", func(env) error { return zeroRW.Refresh(bg) }, []error{IA}},
		{"RW Refresh nil ctx", func(e env) error { return e.rw.Refresh(nilCtx) }, []error{IA}},
		{"RW Held nil ctx", func(e env) error { return bools(e.rw.Held(nilCtx)) }, []error{IA}},
		{"RW Refresh not held", func(e env) error { return e.rw.Refresh(bg) }, []error{uncomplicated.ErrNotHeld}},
		{"RW RUnlock not held", func(e env) error { return e.rw.RUnlock(bg) }, []error{uncomplicated.ErrNotHeld}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newHostileRig(t)
			rw, _ := uncomplicated.NewRW(r.client, uncomplicated.Named("rw"))
			s, _ := uncomplicated.NewSemaphore(r.client, uncomplicated.Named("s"), 2)
			p, _, err := s.TryAcquire(bg)
			if err != nil {
				t.Fatal(err)
			}
			before := r.snapshot()
			err = noPanic(t, tc.name, func() error { return tc.call(env{r.client, rw, s, p}) })
			for _, want := range tc.want {
				if !errors.Is(err, want) {
					t.Errorf("%s = %v; want it to match %v", tc.name, err, want)
				}
			}
			if after := r.snapshot(); after != before {
				t.Errorf("%s changed Redis: %d commands, keys\n%s\nwere %d, keys\n%s", tc.name, after.commands, after.keys, before.commands, before.keys)
			}
		})
	}
}

// The accessors of nil and zero values answer without panicking.
func TestHostile_rwAndSemaphoreAccessors(t *testing.T) {
	var nilRW *uncomplicated.RWMutex
	var nilS *uncomplicated.Semaphore
	var nilP *uncomplicated.Permit
	if nilRW.Name() != "" || nilRW.Fence() != 0 || (&uncomplicated.RWMutex{}).Fence() != 0 || !isClosedChan(nilRW.Lost()) || !isClosedChan((&uncomplicated.RWMutex{}).Lost()) {
		t.Error("nil or zero RWMutex accessors answer something")
	}
	if nilS.Name() != "" {
		t.Error("nil Semaphore accessors answer something")
	}
	if nilP.Fence() != 0 || !isClosedChan(nilP.Lost()) || !isClosedChan((&uncomplicated.Permit{}).Lost()) {
		t.Error("nil or zero Permit: Fence() not 0, or Lost() open")
	}
}
