package uncomplicated_test

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// Request handlers that make a Mutex per call and give up after 0 to 20ms
// (see acceptance.HurriedLoad), through the README's quick-start pool and
// through a pool of 128 that holds them: they acquire at least half as
// often as callers that wait 2s, and cost no goroutine, connection or key
// that grows with the calls. Before, 19 of 11,516 calls acquired through
// the quick-start pool, with 5,861 goroutines, 1,023 keys and 7,007
// connections, and none of 19,611 through the pool of 128.
func TestRedis_hurriedCallers(t *testing.T) {
	pools := []struct {
		name string
		most int64 // connections
		pool func(dial func(context.Context) (redis.Conn, error)) *redis.Pool
	}{
		{"README", 250, func(dial func(context.Context) (redis.Conn, error)) *redis.Pool {
			return &redis.Pool{MaxIdle: 128, IdleTimeout: 5 * time.Minute, DialContext: dial}
		}},
		{"128", 250, func(dial func(context.Context) (redis.Conn, error)) *redis.Pool {
			return &redis.Pool{MaxIdle: 128, MaxActive: 128, Wait: true, DialContext: dial}
		}},
	}
	for _, tc := range pools {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.Start(t)
			direct := s.Pool(t) // its connections are made once, before the load counts them
			other := uncomplicated.NewClient(redigo.New(direct))
			t.Cleanup(func() { _ = other.Close() })
			acceptance.HurriedLoad(t, acceptance.Hurried{
				NewClient: func(t *testing.T) (*uncomplicated.Client, func()) {
					pool := tc.pool(func(ctx context.Context) (redis.Conn, error) {
						return redis.DialContext(ctx, "tcp", s.Addr, redis.DialConnectTimeout(5*time.Second),
							redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
					})
					return uncomplicated.NewClient(redigo.New(pool)), func() { _ = pool.Close() }
				},
				Other: other, MostConnections: tc.most,
				Do: func(cmd string, args ...any) (any, error) {
					c := direct.Get()
					defer c.Close()
					return c.Do(cmd, args...)
				},
			})
		})
	}
}
