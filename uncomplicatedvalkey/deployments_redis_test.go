// Code generated from ../uncomplicatedrueidis/deployments_redis_test.go by fromrueidis_test.go; DO NOT EDIT.

package uncomplicatedvalkey_test

import (
	"context"
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey"
)

// The deployments of these tests, each on real servers that the tests
// start on loopback ports: one redis-server, a master and a replica that
// three sentinels watch, and a Cluster of three masters.

func TestMain(m *testing.M) { redistest.Main(m) }

// The acceptance tests of every primitive through uncomplicatedvalkey.NewClient, on
// each deployment.
func TestAcceptance(t *testing.T) {
	for _, d := range []func(*testing.T) acceptance.Deployment{single, sentinel, cluster} {
		dep := d(t)
		t.Run(dep.Name, func(t *testing.T) { acceptance.Run(t, dep) })
	}
}

// single is one redis-server.
func single(t *testing.T) acceptance.Deployment {
	srv := redistest.Shared(t)
	return deployment(t, "single", valkey.ClientOption{InitAddress: []string{srv.Addr}})
}

// sentinel is a master and a replica that three sentinels watch.
func sentinel(t *testing.T) acceptance.Deployment {
	s := redistest.StartSentinel(t)
	return deployment(t, "sentinel", valkey.ClientOption{
		InitAddress: s.Addrs(), Sentinel: valkey.SentinelOption{MasterSet: s.Name},
	})
}

// cluster is a Cluster of three masters.
func cluster(t *testing.T) acceptance.Deployment {
	c := redistest.StartCluster(t, 3, 0)
	return deployment(t, "cluster", valkey.ClientOption{InitAddress: c.Addrs()})
}

// deployment describes a valkey-go client of opt as an acceptance.Deployment;
// the client is closed at t's end.
func deployment(t *testing.T, name string, opt valkey.ClientOption) acceptance.Deployment {
	c, err := valkey.NewClient(opt)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(c.Close)
	d := uncomplicatedvalkey.NewDriver(c)
	return acceptance.Deployment{
		Name: name,
		NewClient: func(_ *testing.T, opts ...uncomplicated.Option) *uncomplicated.Client {
			return uncomplicatedvalkey.NewClient(c, opts...)
		},
		Do: func(_ *testing.T, key string, cmd string, args ...any) (any, error) {
			var keys []string
			if key != "" {
				keys = []string{key}
			}
			return d.Do(context.Background(), keys, cmd, args...)
		},
	}
}
