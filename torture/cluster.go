package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// With -cluster the locks live on a Redis Cluster of clusterMasters masters
// without replicas, each persistent as the lock server is, and the workers
// reach it through a go-redis ClusterClient, not through the proxy: a
// client learns the nodes' own addresses from CLUSTER SLOTS, so a proxy
// cannot sit in front of them. The faults of the lock server hit one
// master, always the first, which holds the first lock of each kind; the
// other locks spread over the masters, so that each holds some. Without
// replicas nothing takes over a master that is down: its locks wait for it,
// and with full slot coverage required (Redis's default) the whole Cluster
// refuses commands once the others have marked it failed.

// clusterMasters is the number of masters of the Cluster.
const clusterMasters = 3

// clusterRecovery bounds the wait, after a fault of the faulted master,
// for every master to say the Cluster is ok again.
const clusterRecovery = 30 * time.Second

// The prefixes of the lock names, by kind: Mutex, RWMutex, Semaphore.
var namePrefixes = [3]string{"torture-", "torture-rw-", "torture-sem-"}

// placeNames names counts[k] locks of each kind k, namePrefixes[k] and the
// lowest free numbers, on masters masters: the first of each kind on
// master 0, the faulted one, and every other on the master that holds the
// fewest so far, so that every master holds some when there are enough.
// owner returns the master that holds a lock name. On one master the names
// are numbered from 0.
func placeNames(counts [3]int, masters int, owner func(name string) (int, error)) ([3][]string, error) {
	held := make([]int, masters) // the locks each master holds
	for _, count := range counts {
		held[0] += min(count, 1)
	}
	var names [3][]string
	for k, count := range counts {
		for i := range count {
			want := 0
			if i > 0 {
				want = slices.Index(held, slices.Min(held))
				held[want]++
			}
			name, err := nameOn(namePrefixes[k], names[k], want, owner)
			if err != nil {
				return names, err
			}
			names[k] = append(names[k], name)
		}
	}
	return names, nil
}

// nameOn returns the lowest-numbered name prefix<n> that master want holds
// and that is not taken.
func nameOn(prefix string, taken []string, want int, owner func(name string) (int, error)) (string, error) {
	const tries = 10000
	for n := range tries {
		name := prefix + strconv.Itoa(n)
		if slices.Contains(taken, name) {
			continue
		}
		m, err := owner(name)
		if err != nil {
			return "", err
		}
		if m == want {
			return name, nil
		}
	}
	return "", fmt.Errorf("no lock name %s<n> on master %d for n below %d", prefix, want, tries)
}

// launchCluster starts the Cluster, makes its first master the one the
// faults of the lock server hit, and names the locks on its masters.
func (c *coordinator) launchCluster() error {
	cl, err := redistest.LaunchCluster(clusterMasters, 0, persistent...)
	if err != nil {
		return fmt.Errorf("lock cluster: %w", err)
	}
	c.cluster, c.lock = cl, cl.Masters[0]
	addrs := make([]string, len(cl.Masters))
	for i, m := range cl.Masters {
		addrs[i] = m.Addr
	}
	return c.name(addrs, func(name string) (int, error) {
		m, err := cl.MasterOf(redistest.Slot(lockName(name)))
		return slices.Index(cl.Masters, m), err
	})
}

// lockAddr returns the address of the server that holds key: the lock
// server, or the Cluster's master of key's slot.
func (c *coordinator) lockAddr(key string) (string, error) {
	if c.cluster == nil {
		return c.lock.Addr, nil
	}
	m, err := c.cluster.MasterOf(redistest.Slot(key))
	if err != nil {
		return "", err
	}
	return m.Addr, nil
}

// awaitCluster returns once every master says the Cluster is ok, or after
// clusterRecovery, and records how long that took; at once without a
// Cluster.
func (c *coordinator) awaitCluster() {
	if c.cluster == nil {
		return
	}
	start := time.Now()
	for !c.clusterOK() && time.Since(start) < clusterRecovery {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	c.logf("cluster ok again after %v", took)
	c.mu.Lock()
	c.rec.Recoveries = append(c.rec.Recoveries, took)
	c.mu.Unlock()
}

// clusterOK reports whether every master answers CLUSTER INFO with
// cluster_state:ok.
func (c *coordinator) clusterOK() bool {
	for _, m := range c.cluster.Masters {
		info, err := redis.String(dialDo(m.Addr, "CLUSTER", "INFO"))
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	return true
}
