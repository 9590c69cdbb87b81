package goredis_test

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated/goredis"
)

// A node that accepts connections and never answers holds up neither the
// Client's calls to its Subscription nor its Close: go-redis would wait
// for its handshake while it holds the PubSub's lock.
func TestSubscription_silentNode(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // silent until the test ends
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: l.Addr().String(), ReadTimeout: 5 * time.Second})
	defer rdb.Close()
	sub, err := goredis.NewDriver(rdb).Listen(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sub.Subscribe("a")
	sub.Subscribe("b")
	sub.Ping()
	sub.Unsubscribe("a")
	if d := time.Since(start); d > time.Second {
		t.Errorf("Subscribe, Ping and Unsubscribe took %v on a silent node; want them to return at once", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := sub.Receive(ctx); err == nil {
		t.Error("Receive heard something from a silent node")
	}
	start = time.Now()
	sub.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v on a silent node; want it at once", d)
	}
}

// A *redis.Client tells the Client its pool's size, go-redis's default
// when unset; a Cluster, whose pools are per node, tells none.
func TestConnections(t *testing.T) {
	connections := func(rdb redis.UniversalClient) int {
		t.Helper()
		defer rdb.Close()
		return goredis.NewDriver(rdb).(interface{ Connections() int }).Connections()
	}
	if got := connections(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", PoolSize: 7})); got != 7 {
		t.Errorf("Connections() with PoolSize 7 = %d; want 7", got)
	}
	if got, want := connections(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})), 10*runtime.GOMAXPROCS(0); got != want {
		t.Errorf("Connections() with go-redis's default pool = %d; want %d", got, want)
	}
	if got := connections(redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})); got != 0 {
		t.Errorf("Connections() of a Cluster = %d; want 0", got)
	}
}
