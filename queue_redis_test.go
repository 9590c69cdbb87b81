package uncomplicated_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

// The queue of waiters on a real redis-server, through the public API:
// hand-offs in arrival order for every primitive, readers let in together,
// and waiters whose process died or froze passed over.

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
		m, err := c.Named("fifo")
		if err != nil {
			t.Fatal(err)
		}
		return exclusive{func(r *rig) string { return r.prefix + ":queue:{" + m.Name() + "}" }, m.Lock, m.Unlock}
	}},
	{"RWMutex writer", func(t *testing.T, c *uncomplicated.Client) exclusive {
		rw, err := c.NamedRW("fifo")
		if err != nil {
			t.Fatal(err)
		}
		return exclusive{func(r *rig) string { return r.prefix + ":rwqueue:{" + rw.Name() + "}" }, rw.Lock, rw.Unlock}
	}},
	{"Semaphore(1)", func(t *testing.T, c *uncomplicated.Client) exclusive {
		s, err := c.NamedSemaphore("fifo", 1)
		if err != nil {
			t.Fatal(err)
		}
		var p *uncomplicated.Permit
		acquire := func(ctx context.Context) (err error) {
			p, err = s.Acquire(ctx)
			return err
		}
		release := func(ctx context.Context) error { return p.Release(ctx) }
		return exclusive{func(r *rig) string { return r.prefix + ":semqueue:{" + s.Name() + "}" }, acquire, release}
	}},
}

// llen is the length of the list at key.
func (r *rig) llen(key string) int {
	n, _ := redis.Int(r.do("LLEN", key), nil)
	return n
}

// Waiters in five processes, each queued before the next comes, get the
// lock in the order they came, each from the release before it.
func TestRedis_queueOrder(t *testing.T) {
	const waiters = 5
	for _, p := range exclusives {
		t.Run(p.name, func(t *testing.T) {
			r := newRig(t)
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
			for i, d := range dones {
				if err := recv(t, d); err != nil {
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
func TestRedis_RWMutex_readerBatch(t *testing.T) {
	r := newRig(t)
	open := func() *uncomplicated.RWMutex {
		rw, err := r.client(uncomplicated.WithTimeout(time.Hour)).NamedRW("batch")
		if err != nil {
			t.Fatal(err)
		}
		return rw
	}
	holder := open()
	if err := holder.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	queue := r.prefix + ":rwqueue:{" + holder.Name() + "}"
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

// queuedWaiterEnv makes the test binary a process that waits on a Mutex:
// "<address> <prefix> <name>" (see TestRedis_helperQueuedWaiter).
const queuedWaiterEnv = "UNCOMPLICATED_QUEUED_WAITER"

// A waiter in the queue whose process was killed, or stopped (its
// connection stays open, so a PUBLISH still reaches it), does not get the
// lock handed to it: the next live waiter does, from the same release. A
// killed one is passed over by the PUBLISH reply, at the cost of a fence;
// a stopped one by the expiry of its key (three of its ticks and 100 ms
// after its last attempt), at no cost.
func TestRedis_deadQueuedWaiter(t *testing.T) {
	cases := []struct {
		signal syscall.Signal
		fences uint64 // spent from the holder's to the live waiter's
	}{
		{syscall.SIGKILL, 2},
		{syscall.SIGSTOP, 1},
	}
	for _, tc := range cases {
		t.Run(tc.signal.String(), func(t *testing.T) {
			r := newRig(t)
			holder, err := r.client().Named("dead")
			if err != nil {
				t.Fatal(err)
			}
			mustLock(t, holder)
			queue := r.prefix + ":queue:{" + holder.Name() + "}"

			child := exec.Command(os.Args[0], "-test.run=^TestRedis_helperQueuedWaiter$")
			child.Env = append(os.Environ(), queuedWaiterEnv+"="+redistest.Shared(t).Addr+" "+r.prefix+" dead")
			child.Stdout, child.Stderr = os.Stderr, os.Stderr
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = child.Wait(); close(exited) }()
			t.Cleanup(func() {
				_ = child.Process.Kill()
				<-exited
			})
			eventually(t, "the other process's waiter in the queue", func() bool { return r.llen(queue) == 1 })

			if err := child.Process.Signal(tc.signal); err != nil {
				t.Fatal(err)
			}
			if tc.signal == syscall.SIGKILL {
				<-exited
				eventually(t, "its connections closed", func() bool { return r.subscribers() == 0 })
			} else {
				time.Sleep(time.Second) // well past its expiry of 400 ms
			}

			next, err := r.client(uncomplicated.WithTimeout(time.Hour)).Named("dead")
			if err != nil {
				t.Fatal(err)
			}
			done := lockAsync(context.Background(), next)
			eventually(t, "the live waiter in the queue", func() bool { return r.llen(queue) == 2 })
			fence := holder.Fence()
			if err := holder.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("live waiter's Lock() = %v", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the live waiter has not got the lock 2s after the release")
			}
			if got, want := next.Fence(), fence+tc.fences; got != want {
				t.Errorf("live waiter's fence = %d; want %d", got, want)
			}
			if n := r.llen(queue); n != 0 {
				t.Errorf("queue length = %d; want 0", n)
			}
		})
	}
}

// TestRedis_helperQueuedWaiter is the process that TestRedis_deadQueuedWaiter
// kills or stops: it waits on the Mutex it is given, with 100 ms ticks, for
// a minute at most.
func TestRedis_helperQueuedWaiter(t *testing.T) {
	spec := strings.Fields(os.Getenv(queuedWaiterEnv))
	if len(spec) != 3 {
		t.Skip("the waiting process of TestRedis_deadQueuedWaiter")
	}
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", spec[0])
	}}
	c := uncomplicated.NewClient(pool, uncomplicated.WithPrefix(spec[1]),
		uncomplicated.WithTimeout(time.Hour), uncomplicated.WithTicks(36000))
	m, err := c.Named(spec[2])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Lock(ctx); err == nil {
		t.Error("the waiting process got the lock")
	}
}
