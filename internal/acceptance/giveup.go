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
	"github.com/uncomplicated-mutex/uncomplicated/internal/orders"
)

// The load of the tests that count what callers who give up cost: a
// driver's with a proxy that counts connections in front of Redis.

// GiveUpLoad runs 100 goroutines that lock one of 10 Mutexes of client
// under a context of 0 to 20ms, and unlock what they got, for d; it
// returns how many Lock calls they made and how many gave up. Every lock
// must be free once the Client's clean-ups are done.
func GiveUpLoad(t *testing.T, client *uncomplicated.Client, d time.Duration) (calls, gaveUp int64) {
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
	for _, m := range ms {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := m.Lock(ctx); err != nil {
			t.Errorf("Lock() after the load = %v; want the lock within 10s", err)
		} else {
			_ = m.Unlock(ctx)
		}
		cancel()
	}
	return n.Load(), failed.Load()
}
