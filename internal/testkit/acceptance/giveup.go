package acceptance

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/orders"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// The load of the tests that count what callers who give up cost: a
// driver's with a proxy that counts connections in front of Redis.

// GiveUpLoad runs 100 goroutines that lock one of 10 Mutexes of client,
// which reaches Redis through p, under a context of 0 to 20ms, and unlock
// what they got, for 3s; the test fails when they made p open more than
// most connections. It then closes client, which waits for its clean-ups,
// and checks that other, a Client of the same Redis, gets each lock within
// 5s: no attempt that a caller left behind kept one.
func GiveUpLoad(t *testing.T, p *redistest.Proxy, client, other *uncomplicated.Client, most int64) {
	t.Helper()
	calls, gaveUp := giveUpLoad(t, client, other, 3*time.Second)
	if n := p.Accepted(); n > most {
		t.Errorf("%d connections opened for %d Lock calls (%d gave up); want at most %d", n, calls, gaveUp, most)
	} else {
		t.Logf("%d connections opened for %d Lock calls (%d gave up)", n, calls, gaveUp)
	}
}

// giveUpLoad is GiveUpLoad's load, for d; it returns how many Lock calls
// were made and how many gave up.
func giveUpLoad(t *testing.T, client, other *uncomplicated.Client, d time.Duration) (calls, gaveUp int64) {
	t.Helper()
	var ms []*uncomplicated.Mutex
	for i := range 10 {
		ms = append(ms, mustNew(t, client, orders.Order{N: int64(900 + i)}))
	}
	var wg sync.WaitGroup
	var n, failed atomic.Int64
	stop := time.Now().Add(d)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := ms[i%len(ms)]
			for time.Now().Before(stop) {
				ctx, cancel := context.WithTimeout(context.Background(), rand.N(20*time.Millisecond))
				err := m.Lock(ctx)
				cancel()
				n.Add(1)
				switch {
				case err == nil:
					if err := m.Unlock(context.Background()); err != nil {
						t.Errorf("Unlock() = %v", err)
					}
				case errors.Is(err, uncomplicated.ErrNotObtained):
					failed.Add(1)
				default:
					t.Errorf("Lock() = %v; want nil or ErrNotObtained", err)
				}
			}
		}()
	}
	wg.Wait()
	if err := client.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	for i := range ms {
		m := mustNew(t, other, orders.Order{N: int64(900 + i)})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := m.Lock(ctx); err != nil {
			t.Errorf("another Client's Lock() after the load = %v; want the lock within 5s", err)
		} else {
			_ = m.Unlock(ctx)
		}
		cancel()
	}
	return n.Load(), failed.Load()
}
