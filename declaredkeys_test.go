package uncomplicated_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// keysDriver records how many keys each acquisition attempt declares.
type keysDriver struct {
	driver.Driver
	mu   sync.Mutex
	keys []int
}

func (d *keysDriver) Eval(ctx context.Context, s *driver.Script, keys []string, args []any) (any, error) {
	if s == lua.Acquire {
		d.mu.Lock()
		d.keys = append(d.keys, len(keys))
		d.mu.Unlock()
	}
	return d.Driver.Eval(ctx, s, keys, args)
}

func (d *keysDriver) declared() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.keys...)
}

// A Mutex's attempt that neither queues nor takes over (TryLock's, and a
// Lock's first) declares the lock's key alone, which is all its script
// touches: Redis sets up every declared key for a script. An attempt that
// queues declares the queue's keys too.
func TestKeys_leanAttemptDeclaresTheLockAlone(t *testing.T) {
	mr, cs := miniClients(t, 1)
	d := &keysDriver{Driver: redigo.New(poolOf(t, mr.Addr()))}
	c := uncomplicated.NewClient(d, uncomplicated.WithTicks(20))
	t.Cleanup(func() { _ = c.Close() })

	holder := mustNew(t, cs[0], Order{4})
	mustLock(t, holder)
	if ok, err := mustNew(t, c, Order{4}).TryLock(context.Background()); ok || err != nil {
		t.Fatalf("TryLock() of a held lock = %v, %v; want false, nil", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	err := mustNew(t, c, Order{4}).Lock(ctx)
	cancel()
	if !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Fatalf("Lock() of a held lock = %v; want ErrNotObtained", err)
	}
	got := d.declared()
	if len(got) < 3 || got[0] != 1 || got[1] != 1 {
		t.Fatalf("keys declared by the attempts of TryLock and Lock: %v; want 1, 1, then the queueing attempts'", got)
	}
	for _, n := range got[2:] {
		if n != 3 {
			t.Errorf("keys declared by the attempts of TryLock and Lock: %v; want 3 once the waiter queues", got)
			break
		}
	}
}
