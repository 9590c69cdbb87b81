package goredis_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// The deployments of these tests, each on real servers that the tests
// start on loopback ports: one redis-server, a master and a replica that
// three sentinels watch, and a Cluster of three masters.

func TestMain(m *testing.M) { redistest.Main(m) }

// The acceptance tests of every primitive through goredis.NewClient, on
// each deployment.
func TestAcceptance(t *testing.T) {
	for _, d := range []func(*testing.T) acceptance.Deployment{single, sentinel, cluster} {
		dep := d(t)
		t.Run(dep.Name, func(t *testing.T) { acceptance.Run(t, dep) })
	}
}

// single is one redis-server through a *redis.Client.
func single(t *testing.T) acceptance.Deployment {
	srv := redistest.Shared(t)
	return deployment(t, "single", redis.NewClient(&redis.Options{Addr: srv.Addr}))
}

// sentinel is a master and a replica that three sentinels watch, through
// redis.NewFailoverClient.
func sentinel(t *testing.T) acceptance.Deployment {
	s := redistest.StartSentinel(t)
	return deployment(t, "sentinel", redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: s.Name, SentinelAddrs: s.Addrs(),
	}))
}

// cluster is a Cluster of three masters through a *redis.ClusterClient.
func cluster(t *testing.T) acceptance.Deployment {
	c := redistest.StartCluster(t, 3, 0)
	return deployment(t, "cluster", redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()}))
}

// deployment describes rdb as an acceptance.Deployment; rdb is closed at
// t's end.
func deployment(t *testing.T, name string, rdb redis.UniversalClient) acceptance.Deployment {
	t.Cleanup(func() { _ = rdb.Close() })
	return acceptance.Deployment{
		Name: name,
		NewClient: func(_ *testing.T, opts ...uncomplicated.Option) *uncomplicated.Client {
			return goredis.NewClient(rdb, opts...)
		},
		Do: func(_ *testing.T, key string, cmd string, args ...any) (any, error) {
			return do(context.Background(), rdb, key, cmd, args...)
		},
	}
}

// do runs one command on the master that owns key: through rdb, which
// follows a slot that moved, when key is the command's first argument.
func do(ctx context.Context, rdb redis.UniversalClient, key string, cmd string, args ...any) (any, error) {
	run := rdb.Do
	if c, ok := rdb.(*redis.ClusterClient); ok && key != "" && (len(args) == 0 || args[0] != key) {
		master, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		run = master.Do
	}
	reply, err := run(ctx, append([]any{cmd}, args...)...).Result()
	if err == redis.Nil {
		return nil, nil
	}
	return reply, err
}
