package uncomplicated_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// The queue of waiters on a real redis-server: waiters whose process died
// or froze are passed over. Hand-offs in arrival order and readers let in
// together are tested on every deployment, in internal/testkit/acceptance.

// llen is the length of the list at key.
func (r *rig) llen(key string) int {
	n, _ := redis.Int(r.do("LLEN", key), nil)
	return n
}

// A waiter in the queue whose process was killed, or stopped (its
// connection stays open, so a PUBLISH still reaches it), does not get the
// lock handed to it: the next live waiter does, from the same release,
// under a higher fence. A killed one is passed over because nobody listens
// on its channel; a stopped one by the expiry of its key (three of its
// ticks and 100 ms after its last attempt), with the queue's own, unless
// a live waiter joins first.
func TestRedis_deadQueuedWaiter(t *testing.T) {
	defer uncomplicated.SetPinAfter(time.Hour)() // no restart watch's listening connection: this test counts them
	cases := []struct {
		signal syscall.Signal
	}{
		{syscall.SIGKILL},
		{syscall.SIGSTOP},
	}
	for _, tc := range cases {
		t.Run(tc.signal.String(), func(t *testing.T) {
			r := newRig(t)
			holder, err := uncomplicated.New(r.client(), uncomplicated.Named("dead"))
			if err != nil {
				t.Fatal(err)
			}
			mustLock(t, holder)
			queue := r.prefix + ":queue:{" + holder.Name() + "}"

			child := startProcess(t, r, "queued", "dead")
			eventually(t, "the other process's waiter in the queue", func() bool { return r.llen(queue) == 1 })

			child.signal(t, tc.signal)
			if tc.signal == syscall.SIGKILL {
				<-child.exited
				eventually(t, "its connections closed", func() bool { return r.subscribers() == 0 })
			} else {
				time.Sleep(time.Second) // well past its expiry of 400 ms
			}

			next, err := uncomplicated.New(r.client(uncomplicated.WithTimeout(time.Hour)), uncomplicated.Named("dead"))
			if err != nil {
				t.Fatal(err)
			}
			dead, _ := redis.Strings(r.do("LRANGE", queue, 0, -1), nil)
			done := lockAsync(context.Background(), next)
			eventually(t, "the live waiter in the queue", func() bool { return r.llen(queue) == len(dead)+1 })
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
			if got := next.Fence(); got <= fence {
				t.Errorf("live waiter's fence = %d; want above the holder's, %d", got, fence)
			}
			if n := r.llen(queue); n != 0 {
				t.Errorf("queue length = %d; want 0", n)
			}
			if err := next.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
			eventually(t, "nothing left of the lock, the dead waiter's entry expired", func() bool {
				keys, _ := redis.Strings(r.do("KEYS", "*"+next.Name()+"*"), nil)
				return len(keys) == 0
			})
		})
	}
}
