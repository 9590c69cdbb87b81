package goredis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
)

// Order is a domain object: anything with an ID method can be locked.
type Order struct{ N int64 }

func (o Order) ID() int64 { return o.N }

// One Redis node.
func Example() {
	srv, err := miniredis.Run() // or your Redis server
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	locks := goredis.NewClient(rdb) // one per process
	defer locks.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	order := Order{N: 42}
	m, err := uncomplicated.New(locks, order)
	if err != nil {
		log.Fatal(err)
	}
	err = m.Do(ctx, func(ctx context.Context) error {
		fence, _ := uncomplicated.FenceOf(ctx) // or m.Fence(): above every earlier hold's
		fmt.Println("charging order", order.N, "under", m.Name(), "with a fence:", fence > 0)
		return nil // your work here, passing fence to the store it writes to
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// charging order 42 under lock:goredis_test.Order:42 with a fence: true
}

// A master that Redis Sentinel watches: go-redis finds the master through
// the sentinels and follows a failover, and locks go on at once on the new
// master. (WithReplicas(1, d) would make an acquisition wait until a
// replica has it, so that a failover keeps it; but with one replica, a
// failover then blocks every lock until the old master has resynced.)
func Example_sentinel() {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            "mymaster",
		SentinelAddrs:         []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"},
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()
	locks := goredis.NewClient(rdb)
	defer locks.Close()
	m, err := uncomplicated.New(locks, Order{N: 42})
	if err != nil {
		log.Fatal(err)
	}
	_ = m.Do(context.Background(), func(ctx context.Context) error { return nil })
}

// Redis Cluster: each lock lives on the master that owns its slot.
func Example_cluster() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()
	locks := goredis.NewClient(rdb)
	defer locks.Close()
	m, err := uncomplicated.New(locks, Order{N: 42})
	if err != nil {
		log.Fatal(err)
	}
	_ = m.Do(context.Background(), func(ctx context.Context) error { return nil })
}
