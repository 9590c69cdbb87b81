package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedrueidis"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey"
	"github.com/valkey-io/valkey-go"

	redisv9 "github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// The Mutex of the uncomplicated row on the other clients and deployments
// the library runs on, through goredis.NewClient: on the same server
// through go-redis, and on a Cluster of clusterMasters masters that the
// run starts when a cluster row or the cluster scale run needs it. Each
// row is compared with its base: go-redis with redigo on the server, the
// Cluster with go-redis on the server.

const (
	ownGoredis = ours + " go-redis"
	ownRueidis = ours + " rueidis"
	ownValkey  = ours + " valkey-go"
	ownCluster = ours + " cluster"
	// clusterMasters is how many masters the Cluster has, without
	// replicas: a lock lives on one of them.
	clusterMasters = 3
)

// openGoredis gives each locker a Mutex on a Client of its own over one
// go-redis client of the server, as openUncomplicated does over one redigo
// pool. The client is built as the README advises, with
// ContextTimeoutEnabled, under which a call runs in the caller's goroutine,
// and a pool with room for every Client's calls (go-redis takes the
// listening connections from a pool of their own).
func openGoredis(addr, key string, n, _ int) ([]locker, func(), error) {
	return openMutexes(redisv9.NewClient(&redisv9.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: connsFor(n)}), key, n)
}

// openRueidis gives each locker a Mutex on a Client of its own over one
// rueidis client of the server, whose connection they all share.
func openRueidis(addr, key string, n, _ int) ([]locker, func(), error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return nil, nil, err
	}
	return mutexesOver(key, n, func() *uncomplicated.Client { return uncomplicatedrueidis.NewClient(rc) }, rc.Close)
}

// openValkey is openRueidis over a valkey-go client.
func openValkey(addr, key string, n, _ int) ([]locker, func(), error) {
	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return nil, nil, err
	}
	return mutexesOver(key, n, func() *uncomplicated.Client { return uncomplicatedvalkey.NewClient(vc) }, vc.Close)
}

// openCluster gives each locker a Mutex on a Client of its own over one
// go-redis client of the Cluster whose first master is at addr, its pool
// to each node sized as openGoredis's.
func openCluster(addr, key string, n, _ int) ([]locker, func(), error) {
	return openMutexes(redisv9.NewClusterClient(&redisv9.ClusterOptions{Addrs: []string{addr}, ContextTimeoutEnabled: true, PoolSize: connsFor(n)}), key, n)
}

// openMutexes gives each of n lockers a Mutex named key on a Client of its
// own over rdb, which closeAll closes last.
func openMutexes(rdb redisv9.UniversalClient, key string, n int) ([]locker, func(), error) {
	return mutexesOver(key, n, func() *uncomplicated.Client { return goredis.NewClient(rdb) }, func() { _ = rdb.Close() })
}

// mutexesOver gives each of n lockers a Mutex named key on a Client of its
// own made by newClient, over what closeShared closes last.
func mutexesOver(key string, n int, newClient func() *uncomplicated.Client, closeShared func()) ([]locker, func(), error) {
	return openClientsOver(n, newClient, closeShared, func(c *uncomplicated.Client) (locker, error) {
		return uncomplicated.New(c, uncomplicated.Named(key))
	})
}

// newCappedClusterClient returns a client of the Cluster whose masters are
// at addrs with at most 64 connections to each, whose callers wait for a
// free one up to timeout: newCappedPool for a Cluster.
func newCappedClusterClient(addrs []string, timeout time.Duration) *redisv9.ClusterClient {
	return redisv9.NewClusterClient(&redisv9.ClusterOptions{Addrs: addrs, PoolSize: 64, PoolTimeout: timeout, ContextTimeoutEnabled: true})
}

// deployments are the Redis deployments of one run: the server, on which
// every row runs but the cluster rows, and the Cluster, nil unless a
// cluster row or the cluster scale run needs it.
type deployments struct {
	server, cluster *env
	stop            []func() // stops what launch started, last first
}

// launch starts the server, and the Cluster if cfg needs it.
func launch(cfg config, stderr io.Writer) (*deployments, error) {
	d := &deployments{}
	srv, err := redistest.Launch()
	if err != nil {
		return nil, fmt.Errorf("starting redis-server: %w", err)
	}
	d.stop = append(d.stop, srv.Stop)
	if d.server, err = newEnv(false, srv.Addr); err != nil {
		d.close()
		return nil, err
	}
	d.stop = append(d.stop, d.server.close)
	if version, err := d.server.info("server", "redis_version"); err != nil || !versionAtLeast(version, noLoopTrackingSince) {
		fmt.Fprintf(stderr, "warning: the rueidislock and valkeylock rows track keys with NOLOOP, which needs Redis %d.%d.%d or later; this server is %q\n",
			noLoopTrackingSince[0], noLoopTrackingSince[1], noLoopTrackingSince[2], version)
	}
	if !cfg.needsCluster() {
		return d, nil
	}
	fmt.Fprintf(stderr, "starting a Cluster of %d masters\n", clusterMasters)
	c, err := redistest.LaunchCluster(clusterMasters, 0)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("starting a Cluster: %w", err)
	}
	d.stop = append(d.stop, c.Stop)
	masters := make([]string, len(c.Masters))
	for i, m := range c.Masters {
		masters[i] = m.Addr
	}
	if d.cluster, err = newEnv(true, masters...); err != nil {
		d.close()
		return nil, err
	}
	d.stop = append(d.stop, d.cluster.close)
	return d, nil
}

// noLoopTrackingSince is the first Redis version with which the
// NoLoopTracking of rueidislock and valkeylock is safe (redis/redis#11052),
// as their docs say.
var noLoopTrackingSince = [3]int{7, 0, 5}

// versionAtLeast reports whether version, such as "7.0.15", is want or
// later; false if it does not read as major.minor.patch.
func versionAtLeast(version string, want [3]int) bool {
	parts := strings.Split(version, ".")
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		if n != want[i] {
			return n > want[i]
		}
	}
	return true
}

// on returns the Cluster's env if cluster, else the server's.
func (d *deployments) on(cluster bool) *env {
	if cluster {
		return d.cluster
	}
	return d.server
}

func (d *deployments) close() {
	for i := len(d.stop) - 1; i >= 0; i-- {
		d.stop[i]()
	}
}
