package goredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// Request handlers that make a Mutex per call and give up after 0 to 20ms
// (see acceptance.HurriedLoad), through go-redis with its default options
// (a pool of 10 per CPU) and ContextTimeoutEnabled, as the README builds
// it: they acquire at least half as often as callers that wait 2s, and
// cost no goroutine, connection or key that grows with the calls. Before,
// 14 of 36,907 calls acquired.
func TestRedis_hurriedCallers(t *testing.T) {
	s := redistest.Start(t)
	direct := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 2}) // its connections are made before the load counts them
	t.Cleanup(func() { _ = direct.Close() })
	other := goredis.NewClient(direct)
	t.Cleanup(func() { _ = other.Close() })
	acceptance.HurriedLoad(t, acceptance.Hurried{
		NewClient: func(t *testing.T) (*uncomplicated.Client, func()) {
			rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
			return goredis.NewClient(rdb), func() { _ = rdb.Close() }
		},
		Other: other, MostConnections: 250,
		Do: func(cmd string, args ...any) (any, error) {
			return direct.Do(t.Context(), append([]any{cmd}, args...)...).Result()
		},
	})
}
