// Code generated from ../uncomplicatedrueidis/failover_redis_test.go by fromrueidis_test.go; DO NOT EDIT.

package uncomplicatedvalkey_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey"
)

// A replica takes over from its master while two Clients lock and unlock
// locks, each lock wanted by both: every lock is acquired again within
// seconds of the promotion, hand-offs included, and once the Clients stop
// no lock is left held.

func TestSentinel_failover(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	c := valkeyClient(t, valkey.ClientOption{InitAddress: s.Addrs(), Sentinel: valkey.SentinelOption{MasterSet: s.Name}})
	runFailover(t, c, 3, s.Failover)
}

func TestCluster_failover(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, 1)
	c := valkeyClient(t, valkey.ClientOption{InitAddress: cl.Addrs()})
	runFailover(t, c, 12, func() error { return cl.Failover(cl.Replicas[0]) })
}

func valkeyClient(t *testing.T, opt valkey.ClientOption) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// runFailover has two Clients on c lock and unlock n locks in a loop,
// fails over, and checks that each lock is acquired after the failover
// returned and that none is left held once the loops stop.
func runFailover(t *testing.T, c valkey.Client, n int, failover func() error) {
	a := uncomplicatedvalkey.NewClient(c, uncomplicated.WithTimeout(2*time.Second))
	b := uncomplicatedvalkey.NewClient(c, uncomplicated.WithTimeout(2*time.Second))
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ctx, stop := context.WithCancel(context.Background())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		last = map[string]time.Time{} // by lock name, its latest acquisition
	)
	names := make([]string, n)
	for i := range n {
		for _, client := range []*uncomplicated.Client{a, b} {
			m, err := uncomplicated.New(client, uncomplicated.Named(fmt.Sprintf("failover-%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			names[i] = m.Name()
			wg.Go(func() {
				for ctx.Err() == nil {
					lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					err := m.Lock(lctx)
					cancel()
					if err != nil {
						continue // busy past the deadline, or Redis failing over
					}
					mu.Lock()
					last[m.Name()] = time.Now()
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
					_ = m.Unlock(context.Background())
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
	}
	if err := failover(); err != nil {
		stop()
		wg.Wait()
		t.Fatal(err)
	}
	since := time.Now()
	deadline := since.Add(10 * time.Second)
	for _, name := range names {
		for {
			mu.Lock()
			at := last[name]
			mu.Unlock()
			if at.After(since) {
				t.Logf("%s acquired %v after the failover returned", name, at.Sub(since).Round(time.Millisecond))
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s not acquired within 10s of the failover", name)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stop()
	wg.Wait()
	for _, name := range names {
		if err := free(a, name, 3*time.Second); err != nil {
			t.Error(err)
		}
	}
}

// free waits up to limit for the lock name to have no holder: a holder
// left is a release lost, or a hand-off to a loop that stopped waiting,
// which lasts its claim.
func free(c *uncomplicated.Client, name string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		info, err := inspect.Lock(context.Background(), c, name)
		if err == nil && !info.Held() {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("%s still held %v after the Clients stopped: %+v", name, limit, info.Holders), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
