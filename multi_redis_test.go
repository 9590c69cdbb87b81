package uncomplicated_test

import (
	"context"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// LockAll takes locks of Clients on different Redis servers.
func TestLockAll_twoServers(t *testing.T) {
	var ms []*uncomplicated.Mutex
	var conns []redis.Conn
	for range 2 {
		pool := redistest.Start(t).Pool(t)
		c := uncomplicated.NewClient(redigo.New(pool))
		t.Cleanup(func() { _ = c.Close() })
		ms = append(ms, mustNew(t, c, Order{1}))
		conn := pool.Get()
		t.Cleanup(func() { _ = conn.Close() })
		conns = append(conns, conn)
	}
	err := uncomplicated.DoAll(context.Background(), ms, func(context.Context) error {
		for i, m := range ms {
			if n, err := redis.Int(conns[i].Do("EXISTS", m.Name())); n != 1 || err != nil {
				t.Errorf("server %d: EXISTS %s = %d, %v; want 1", i, m.Name(), n, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("DoAll() = %v", err)
	}
	for i, m := range ms {
		if n, err := redis.Int(conns[i].Do("EXISTS", m.Name())); n != 0 || err != nil {
			t.Errorf("server %d: EXISTS %s = %d, %v after DoAll; want 0", i, m.Name(), n, err)
		}
	}
}
