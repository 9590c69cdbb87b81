package goredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// Callers that give up cost no connections through go-redis either, with
// ContextTimeoutEnabled or without: 100 goroutines locking 10 Mutexes
// under contexts of 0 to 20ms for 3s open at most 200 connections (the
// pool holds 128), counted by a proxy, and leave no lock held. Before,
// with ContextTimeoutEnabled, 1,400 were opened.
func TestRedis_givingUpCostsNoConnection(t *testing.T) {
	for _, ctxTimeouts := range []bool{false, true} {
		name := "ContextTimeoutEnabled=false"
		if ctxTimeouts {
			name = "ContextTimeoutEnabled=true"
		}
		t.Run(name, func(t *testing.T) {
			s := redistest.Shared(t)
			p := redistest.StartProxy(t, s.Addr)
			rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), PoolSize: 128, ContextTimeoutEnabled: ctxTimeouts})
			t.Cleanup(func() { _ = rdb.Close() })
			direct := redis.NewClient(&redis.Options{Addr: s.Addr})
			t.Cleanup(func() { _ = direct.Close() })
			other := goredis.NewClient(direct)
			t.Cleanup(func() { _ = other.Close() })
			acceptance.GiveUpLoad(t, p, goredis.NewClient(rdb), other, 200)
		})
	}
}
