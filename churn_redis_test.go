package uncomplicated_test

import (
	"context"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// Callers that give up cost no connections: 100 goroutines locking 10
// Mutexes under contexts of 0 to 20ms for 3s, many of which end while a
// call is under way, open at most 200 connections (the pool holds 128),
// counted by a proxy, and leave no lock held. Before, each caller that
// gave up during a call closed its connection: 2,000 were opened.
func TestRedis_givingUpCostsNoConnection(t *testing.T) {
	s := redistest.Start(t)
	p := redistest.StartProxy(t, s.Addr)
	pool := &redis.Pool{MaxIdle: 128, MaxActive: 128, Wait: true, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", p.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	client, other := uncomplicated.NewClient(redigo.New(pool)), uncomplicated.NewClient(redigo.New(s.Pool(t)))
	t.Cleanup(func() { _ = other.Close() })
	acceptance.GiveUpLoad(t, p, client, other, 200)
}
