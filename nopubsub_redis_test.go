package uncomplicated_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// Where subscribing is refused (an ACL here; a proxy in the field), the
// locks work on their ticks alone: 4 Clients, as 4 processes, × 200 Do on
// one lock, no error and no two holders at once, a Do's wait at p99 within
// two ticks; and each Client says once, at Warn, that it cannot listen,
// naming Redis's refusal.
func TestRedis_withoutPubSub(t *testing.T) {
	srv := redistest.Start(t)
	srv.Do(t, "ACL", "SETUSER", "nosub", "on", ">secret", "~*", "&*", "+@all", "-subscribe", "-ssubscribe", "-psubscribe")
	pool := &redis.Pool{MaxIdle: 16, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", srv.Addr, redis.DialUsername("nosub"), redis.DialPassword("secret"))
	}}
	t.Cleanup(func() { _ = pool.Close() })
	const clients, each = 4, 200
	recs := make([]*logRecorder, clients)
	var holding atomic.Int32
	var mu sync.Mutex
	var waits []time.Duration
	var wg sync.WaitGroup
	for i := range clients {
		recs[i] = &logRecorder{}
		c := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithLogger(slog.New(recs[i])))
		t.Cleanup(func() { _ = c.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				m := mustNew(t, c, Order{1})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				start := time.Now()
				err := m.Do(ctx, func(context.Context) error {
					mu.Lock()
					waits = append(waits, time.Since(start))
					mu.Unlock()
					if holding.Add(1) != 1 {
						t.Error("two holders at once")
					}
					holding.Add(-1)
					return nil
				})
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	slices.Sort(waits)
	cfg := config.Defaults()
	tick := cfg.Tick()
	if p99 := waits[len(waits)*99/100]; p99 > 2*tick {
		t.Errorf("p99 wait %v; want at most two ticks (%v)", p99, 2*tick)
	}
	t.Logf("p99 wait %v over %d Do", waits[len(waits)*99/100], len(waits))
	for i, r := range recs {
		n, named := 0, false
		r.mu.Lock()
		for j, m := range r.msgs {
			if strings.HasPrefix(m, "WARN uncomplicated: Redis refused to let this Client listen") {
				n++
				named = strings.Contains(r.attrs[j]["error"], "NOPERM")
			}
		}
		r.mu.Unlock()
		if n != 1 || !named {
			t.Errorf("client %d: %d records that it cannot listen, naming NOPERM: %v; want 1", i, n, named)
		}
	}
}
