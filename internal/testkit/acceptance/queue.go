package acceptance

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// The queue of waiters on a real deployment, through the public API:
// hand-offs in arrival order for every primitive, and readers let in
// together.

// exclusive is a lock of one holder at a time: a Mutex, an RWMutex's
// writer side or a Semaphore of 1 permit, as one process uses it.
type exclusive struct {
	queue   func(r *rig) string // the key of its queue
	acquire func(context.Context) error
	release func(context.Context) error
}

// exclusives are the three primitives used as a mutex on the lock "fifo".
var exclusives = []struct {
	name string
	open func(t *testing.T, c *uncomplicated.Client) exclusive
}{
	{"Mutex", func(t *testing.T, c *uncomplicated.Client) exclusive {
		m, err := uncomplicated.New(c, uncomplicated.Named("fifo"))
		if err != nil {
			t.Fatal(err)
		}
		return exclusive{func(r *rig) string { return r.key("queue", m.Name()) }, m.Lock, m.Unlock}
	}},
	{"RWMutex writer", func(t *testing.T, c *uncomplicated.Client) exclusive {
		rw, err := uncomplicated.NewRW(c, uncomplicated.Named("fifo"))
		if err != nil {
			t.Fatal(err)
		}
		return exclusive{func(r *rig) string { return r.key("rwqueue", rw.Name()) }, rw.Lock, rw.Unlock}
	}},
	{"Semaphore(1)", func(t *testing.T, c *uncomplicated.Client) exclusive {
		s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named("fifo"), 1)
		if err != nil {
			t.Fatal(err)
		}
		var p *uncomplicated.Permit
		acquire := func(ctx context.Context) (err error) {
			p, err = s.Acquire(ctx)
			return err
		}
		release := func(ctx context.Context) error { return p.Release(ctx) }
		return exclusive{func(r *rig) string { return r.key("semqueue", s.Name()) }, acquire, release}
	}},
}

// Waiters in five processes, each queued before the next comes, get the
// lock in the order they came, each from the release before it.
func queueOrder(t *testing.T, d Deployment) {
	const waiters = 5
	for _, p := range exclusives {
		t.Run(p.name, func(t *testing.T) {
			r := newRig(t, d)
			holder := p.open(t, r.client())
			if err := holder.acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var order []int
			dones := make([]chan error, waiters)
			for i := range waiters {
				w := p.open(t, r.client(uncomplicated.WithTimeout(time.Hour)))
				dones[i] = make(chan error, 1)
				go func() {
					err := w.acquire(context.Background())
					if err == nil {
						mu.Lock()
						order = append(order, i)
						mu.Unlock()
						err = w.release(context.Background())
					}
					dones[i] <- err
				}()
				eventually(t, "the waiter in the queue", func() bool { return r.llen(holder.queue(r)) == i+1 })
			}
			if err := holder.release(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i, done := range dones {
				if err := recv(t, done); err != nil {
					t.Errorf("waiter %d: %v", i, err)
				}
			}
			if want := []int{0, 1, 2, 3, 4}; !slices.Equal(order, want) {
				t.Errorf("order of acquisitions = %v; want %v", order, want)
			}
		})
	}
}

// A writer's release lets in together the readers queued before the next
// writer; that writer gets the lock from the last of them, and the reader
// queued after it from its release.
func rwMutexReaderBatch(t *testing.T, d Deployment) {
	r := newRig(t, d)
	open := func() *uncomplicated.RWMutex {
		rw, err := uncomplicated.NewRW(r.client(uncomplicated.WithTimeout(time.Hour)), uncomplicated.Named("batch"))
		if err != nil {
			t.Fatal(err)
		}
		return rw
	}
	holder := open()
	if err := holder.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	queue := r.key("rwqueue", holder.Name())
	type waiter struct {
		in, out chan error // acquired; released
		release chan struct{}
	}
	start := func(lock, unlock func(context.Context) error) *waiter {
		w := &waiter{in: make(chan error, 1), out: make(chan error, 1), release: make(chan struct{})}
		go func() {
			err := lock(context.Background())
			w.in <- err
			if err == nil {
				<-w.release
				w.out <- unlock(context.Background())
			}
		}()
		return w
	}
	var ws []*waiter
	for i, kind := range []string{"reader A", "reader B", "writer W", "reader C"} {
		rw := open()
		if strings.HasPrefix(kind, "reader") {
			ws = append(ws, start(rw.RLock, rw.RUnlock))
		} else {
			ws = append(ws, start(rw.Lock, rw.Unlock))
		}
		eventually(t, kind+" in the queue", func() bool { return r.llen(queue) == i+1 })
	}
	a, b, w, c := ws[0], ws[1], ws[2], ws[3]
	// notYet fails the test if one of ws has the lock.
	notYet := func(when string, ws ...*waiter) {
		t.Helper()
		time.Sleep(50 * time.Millisecond)
		for _, x := range ws {
			select {
			case err := <-x.in:
				t.Fatalf("%s: a waiter got the lock too soon (%v)", when, err)
			default:
			}
		}
	}

	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]*waiter{"A": a, "B": b} {
		if err := recv(t, x.in); err != nil {
			t.Fatalf("reader %s: %v", name, err)
		}
	}
	notYet("readers A and B in", w, c)
	close(a.release)
	recv(t, a.out)
	notYet("reader B still in", w, c)
	close(b.release)
	if err := recv(t, w.in); err != nil {
		t.Fatalf("writer W: %v", err)
	}
	notYet("writer W in", c)
	close(w.release)
	if err := recv(t, c.in); err != nil {
		t.Fatalf("reader C: %v", err)
	}
	close(c.release)
	for _, x := range []*waiter{b, w, c} {
		if err := recv(t, x.out); err != nil {
			t.Errorf("release: %v", err)
		}
	}
}
