package acceptance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// What Redis keeps of a lock, and how its fences survive the loss of it.

// A kind is one primitive, held alike by the tests below.
type kind struct {
	name   string
	fenced bool // its holds have fences
	leased bool // it needs a lease
	// blocker, if not "", names the kind whose holds block this one's.
	blocker string
	// open returns the lock named name on c, as its keys name it, and a
	// func that acquires it once, blocking until ctx ends.
	open func(t *testing.T, c *uncomplicated.Client, name string) (string, acquirer)
}

// An acquirer takes one hold of a lock, or fails when ctx ends first.
type acquirer func(ctx context.Context) (fence uint64, release func() error, err error)

var kinds = []kind{
	{"Mutex", true, false, "", func(t *testing.T, c *uncomplicated.Client, name string) (string, acquirer) {
		m, err := uncomplicated.New(c, uncomplicated.Named(name))
		if err != nil {
			t.Fatal(err)
		}
		return m.Name(), func(ctx context.Context) (uint64, func() error, error) {
			err := m.Lock(ctx)
			return m.Fence(), func() error { return m.Unlock(context.Background()) }, err
		}
	}},
	{"RWMutex", true, false, "", func(t *testing.T, c *uncomplicated.Client, name string) (string, acquirer) {
		rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
		if err != nil {
			t.Fatal(err)
		}
		return rw.Name(), func(ctx context.Context) (uint64, func() error, error) {
			err := rw.Lock(ctx)
			return rw.Fence(), func() error { return rw.Unlock(context.Background()) }, err
		}
	}},
	{"RWMutex reader", false, false, "RWMutex", func(t *testing.T, c *uncomplicated.Client, name string) (string, acquirer) {
		rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
		if err != nil {
			t.Fatal(err)
		}
		return rw.Name(), func(ctx context.Context) (uint64, func() error, error) {
			err := rw.RLock(ctx)
			return 0, func() error { return rw.RUnlock(context.Background()) }, err
		}
	}},
	{"Semaphore", true, false, "", func(t *testing.T, c *uncomplicated.Client, name string) (string, acquirer) {
		s := mustNamedSemaphore(t, c, name, 1)
		return s.Name(), func(ctx context.Context) (uint64, func() error, error) {
			p, err := s.Acquire(ctx)
			if err != nil {
				return 0, nil, err
			}
			return p.Fence(), func() error { return p.Release(context.Background()) }, nil
		}
	}},
	{"Election", true, true, "", func(t *testing.T, c *uncomplicated.Client, name string) (string, acquirer) {
		e := mustElection(t, c, name)
		return e.Name(), func(ctx context.Context) (uint64, func() error, error) {
			if err := e.Campaign(ctx, "v"); err != nil {
				return 0, nil, err
			}
			l, err := e.Leader(ctx)
			return l.Fence, func() error { return e.Resign(context.Background()) }, err
		}
	}},
}

// keysGone: a lock keeps keys in Redis only while someone holds it or
// waits for it, also without a lease (but for an Election, which needs
// one): once the last holder has released it, after hand-offs through the
// queue and a waiter that gave up, nothing is left a moment later (the
// test allows the 10 s the README states).
func keysGone(t *testing.T, d Deployment) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			r := newRig(t, d)
			opts := []uncomplicated.Option{uncomplicated.WithTimeout(time.Second)}
			if !k.leased {
				opts = append(opts, uncomplicated.WithLease(0))
			}
			first := k
			if k.blocker != "" {
				first = kindNamed(k.blocker)
			}
			name, holder := first.open(t, r.client(opts...), "gone")
			_, waiter := k.open(t, r.client(opts...), "gone")
			_, quitter := k.open(t, r.client(opts...), "gone")
			_, release, err := holder(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(r.leftovers(name)) == 0 {
				t.Fatal("no keys of the held lock")
			}
			queue := queueOf(r, k, name)
			got := make(chan func() error, 1)
			go func() {
				_, release, err := waiter(context.Background())
				if err != nil {
					t.Error(err)
				}
				got <- release
			}()
			eventually(t, "the waiter queued", func() bool { return r.llen(queue) == 1 })
			qctx, cancel := context.WithCancel(context.Background())
			quit := make(chan error, 1)
			go func() {
				_, _, err := quitter(qctx)
				quit <- err
			}()
			eventually(t, "the quitter queued", func() bool { return r.llen(queue) == 2 })
			cancel()
			if err := recv(t, quit); !errors.Is(err, context.Canceled) {
				t.Fatalf("the quitter's wait = %v; want context.Canceled", err)
			}
			if err := release(); err != nil {
				t.Fatal(err)
			}
			release = recv(t, got) // handed over
			if release == nil {
				t.FailNow()
			}
			if err := release(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "no keys of the released lock", func() bool {
				return len(r.leftovers(name)) == 0
			})
		})
	}
}

// kindNamed returns the kind of that name.
func kindNamed(name string) kind {
	for _, k := range kinds {
		if k.name == name {
			return k
		}
	}
	panic("acceptance: no kind " + name)
}

// queueOf is the key of the queue of the lock name of k.
func queueOf(r *rig, k kind, name string) string {
	switch k.name {
	case "RWMutex", "RWMutex reader":
		return r.key("rwqueue", name)
	case "Semaphore":
		return r.key("semqueue", name)
	}
	return r.key("queue", name)
}

// A fencedStore is what a fence protects: it refuses a write whose fence
// is below the highest it has taken, and takes another write of that one.
type fencedStore struct {
	mu      sync.Mutex
	highest uint64
}

func (s *fencedStore) write(fence uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence < s.highest {
		return false
	}
	s.highest = fence
	return true
}

// fencesAcrossLoss: when Redis loses a lock's keys (a restart without
// persistence, an eviction, a failover to a replica that missed them) or
// brings back an older copy of them, the next holder's fence is above
// every earlier one all the same, and a fenced store takes its writes.
// Here the keys are deleted, as FLUSHALL would, and restored from a DUMP
// taken 20 holds before; the holds come from two Clients, as from two
// processes, so that no Client can tell its own old token in the copy.
func fencesAcrossLoss(t *testing.T, d Deployment) {
	for _, k := range kinds {
		if !k.fenced {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			r := newRig(t, d)
			opts := []uncomplicated.Option{uncomplicated.WithTimeout(300 * time.Millisecond), uncomplicated.WithTakeOver(true)}
			name, before := k.open(t, r.client(opts...), "loss")
			_, after := k.open(t, r.client(opts...), "loss")
			var store fencedStore
			hold := func(acquire acquirer, snap bool) (dump []dumped) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				fence, release, err := acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if fence <= store.highest { // the store would take it, but a fence is another hold's
					t.Errorf("fence %d; want above the last hold's, %d", fence, store.highest)
				}
				if !store.write(fence) {
					t.Errorf("fence %d refused by the store, which has taken %d", fence, store.highest)
				}
				if snap {
					dump = r.dump(name)
				}
				if err := release(); err != nil {
					t.Fatal(err)
				}
				return dump
			}
			snapshot := hold(before, true)
			for range 20 {
				hold(before, false)
			}
			r.restore(snapshot, 200*time.Millisecond)
			hold(after, false)
			r.lose(name)
			hold(after, false)
		})
	}
}

// A dumped key is a key and its DUMP.
type dumped struct {
	key  string
	dump any
}

// dump returns the DUMP of every key of the lock name.
func (r *rig) dump(name string) []dumped {
	r.t.Helper()
	var ds []dumped
	for _, key := range r.leftovers(name) {
		ds = append(ds, dumped{key, r.do(key, "DUMP", key)})
	}
	return ds
}

// restore brings ds back in place of what their keys hold now, with ttl.
func (r *rig) restore(ds []dumped, ttl time.Duration) {
	r.t.Helper()
	for _, d := range ds {
		r.do(d.key, "RESTORE", d.key, ttl.Milliseconds(), d.dump, "REPLACE")
	}
}

// lose deletes every key of the lock name, as a restart without
// persistence or FLUSHALL would.
func (r *rig) lose(name string) {
	r.t.Helper()
	for _, key := range r.leftovers(name) {
		r.do(key, "DEL", key)
	}
}

// earlierCounters: a fence counter that earlier builds left, without a
// TTL, changes nothing: fences go on above it, and it stays as it was,
// for the user to delete (the README says how to find them).
func earlierCounters(t *testing.T, d Deployment) {
	counters := map[string]string{"Mutex": "fence", "RWMutex": "rwfence", "Semaphore": "semfence"}
	for _, k := range kinds {
		part, ok := counters[k.name]
		if !ok {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			r := newRig(t, d)
			name, acquire := k.open(t, r.client(), "earlier")
			key := r.key(part, name)
			r.do(key, "SET", key, 588)
			fence, release, err := acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if fence <= 588 {
				t.Errorf("fence %d; want above the counter, 588", fence)
			}
			if err := release(); err != nil {
				t.Fatal(err)
			}
			if keys := r.leftovers(name); len(keys) != 1 || keys[0] != key {
				t.Errorf("keys left after the release: %q; want the counter alone", keys)
			}
			if v := fmt.Sprintf("%s", r.do(key, "GET", key)); v != "588" {
				t.Errorf("the counter after the release = %q; want it as it was, 588", v)
			}
		})
	}
}
