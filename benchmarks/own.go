package main

import (
	"context"
	"errors"
	"sync"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// Our RWMutex and Semaphore rows, and their in-process ceilings. None of
// the peers has a read/write lock or a semaphore: these rows are compared
// with our Mutex and with the ceilings.

const (
	ownRW         = "uncomplicated RW"
	ownRWWriters  = "uncomplicated RWMutex writers only"
	ownSemaphore  = "uncomplicated Semaphore"
	ownSemaphore1 = ownSemaphore + "(1)"
	syncRead      = "sync.RWMutex read"
	chanSemaphore = "chan semaphore"
)

// side is which side of an RWMutex a row locks.
type side bool

const (
	writer side = false // Lock and Unlock
	reader side = true  // RLock and RUnlock
)

// openRW gives each locker an RWMutex on a Client of its own, locking it
// as a writer or as a reader.
func openRW(s side) func(addr, key string, n, _ int) ([]locker, func(), error) {
	return func(addr, key string, n, _ int) ([]locker, func(), error) {
		return openClients(addr, n, func(c *uncomplicated.Client) (locker, error) {
			rw, err := uncomplicated.NewRW(c, uncomplicated.Named(key))
			if err != nil || s == writer {
				return rw, err
			}
			return readLocker{rw}, nil
		})
	}
}

// readLocker locks an RWMutex as a reader.
type readLocker struct{ rw *uncomplicated.RWMutex }

func (l readLocker) Lock(ctx context.Context) error   { return l.rw.RLock(ctx) }
func (l readLocker) Unlock(ctx context.Context) error { return l.rw.RUnlock(ctx) }

// openSemaphore gives each locker a Semaphore of permits permits on a
// Client of its own.
func openSemaphore(addr, key string, n, permits int) ([]locker, func(), error) {
	return openClients(addr, n, func(c *uncomplicated.Client) (locker, error) {
		s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(key), permits)
		return &semaphoreLocker{s: s}, err
	})
}

// openSemaphore1 is openSemaphore with 1 permit, whatever -permits says:
// a Semaphore used as a mutex.
func openSemaphore1(addr, key string, n, _ int) ([]locker, func(), error) {
	return openSemaphore(addr, key, n, 1)
}

// semaphoreLocker holds at most one permit at a time.
type semaphoreLocker struct {
	s *uncomplicated.Semaphore
	p *uncomplicated.Permit
}

func (l *semaphoreLocker) Lock(ctx context.Context) (err error) {
	l.p, err = l.s.Acquire(ctx)
	return err
}

func (l *semaphoreLocker) Unlock(ctx context.Context) error {
	p := l.p
	l.p = nil
	if p == nil {
		return errors.New("semaphore: no permit to release")
	}
	return p.Release(ctx)
}

// openSyncRead shares one sync.RWMutex among the lockers, as readers: the
// ceiling of the RWMutex's read row.
func openSyncRead(_, _ string, n, _ int) ([]locker, func(), error) {
	mu := new(sync.RWMutex)
	lockers := make([]locker, n)
	for i := range lockers {
		lockers[i] = syncReadLocker{mu}
	}
	return lockers, func() {}, nil
}

type syncReadLocker struct{ mu *sync.RWMutex }

func (l syncReadLocker) Lock(context.Context) error   { l.mu.RLock(); return nil }
func (l syncReadLocker) Unlock(context.Context) error { l.mu.RUnlock(); return nil }

// openChanSemaphore shares one buffered channel of permits slots among the
// lockers: the Semaphore's ceiling.
func openChanSemaphore(_, _ string, n, permits int) ([]locker, func(), error) {
	sem := make(chan struct{}, permits)
	lockers := make([]locker, n)
	for i := range lockers {
		lockers[i] = chanLocker(sem)
	}
	return lockers, func() {}, nil
}

// chanLocker ignores ctx, as syncLocker does.
type chanLocker chan struct{}

func (l chanLocker) Lock(context.Context) error   { l <- struct{}{}; return nil }
func (l chanLocker) Unlock(context.Context) error { <-l; return nil }
