package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// The Redis client libraries a worker's Client can run on (-client).
const (
	clientRedigo  = "redigo"  // uncomplicated.NewClient(redigo.New(pool))
	clientGoRedis = "goredis" // goredis.NewClient on a go-redis client
)

var clientKinds = []string{clientRedigo, clientGoRedis}

// A library is the Redis client library under a worker's Client.
type library struct {
	close func()     // closes it
	conns func() int // its connections open now, idle or in use
}

// lockClient returns the worker's Client of the locks, with opts, and the
// client library it runs on: on a Cluster, goredis.NewClient on a
// *redis.ClusterClient of cfg.ClusterAddrs; otherwise, on cfg.LockAddr,
// uncomplicated.NewClient(redigo.New(pool)) or goredis.NewClient on a
// *redis.Client, as cfg.Client says. The go-redis clients keep go-redis's
// defaults but for the dial timeout, which is the lock timeout as the
// Pool's is, and for the log, which they do not write (see quiet).
func lockClient(cfg workerConfig, opts []uncomplicated.Option) (*uncomplicated.Client, library, error) {
	if cfg.Client == clientGoRedis || len(cfg.ClusterAddrs) > 0 {
		redis.SetLogger(quiet{})
	}
	switch {
	case len(cfg.ClusterAddrs) > 0:
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.ClusterAddrs, DialTimeout: cfg.Timeout})
		lib := library{close: func() { _ = rdb.Close() }, conns: func() int { return int(rdb.PoolStats().TotalConns) }}
		return goredis.NewClient(rdb, opts...), lib, nil
	case cfg.Client == clientGoRedis:
		rdb := redis.NewClient(&redis.Options{Addr: cfg.LockAddr, DialTimeout: cfg.Timeout})
		lib := library{close: func() { _ = rdb.Close() }, conns: func() int { return int(rdb.PoolStats().TotalConns) }}
		return goredis.NewClient(rdb, opts...), lib, nil
	case cfg.Client == clientRedigo || cfg.Client == "":
		pool := newPool(cfg.LockAddr, cfg.Timeout)
		lib := library{close: func() { _ = pool.Close() }, conns: pool.ActiveCount}
		return uncomplicated.NewClient(redigo.New(pool), opts...), lib, nil
	}
	return nil, library{}, fmt.Errorf("unknown client %q (want one of %v)", cfg.Client, clientKinds)
}

// quiet is go-redis's log in a worker: it drops go-redis's lines, such as
// one for each failed dial while a master is down, which would flood the
// torture's stderr; the calls that fail show as error events.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
