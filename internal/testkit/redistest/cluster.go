package redistest

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
)

// slots is the number of hash slots of a Redis Cluster.
const slots = hashslot.Count

// clusterWait bounds each wait for a cluster to agree.
const clusterWait = 20 * time.Second

// A Cluster is a running Redis Cluster of masters, each with replicas. Its
// nodes time out after 2 s, so a replica takes over a killed master within a
// few seconds. It is not safe for concurrent use.
type Cluster struct {
	Masters  []*Server // in slot order at start: master i owns the i-th of len(Masters) equal ranges of slots
	Replicas []*Server // replica j follows Masters[j % len(Masters)] at start
}

// StartCluster returns a running cluster of its own, stopped at cleanup.
// When redis-server is missing it skips the test, or fails it as Start does.
func StartCluster(tb testing.TB, masters, replicasPerMaster int) *Cluster {
	tb.Helper()
	c, err := LaunchCluster(masters, replicasPerMaster)
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// LaunchCluster starts a cluster outside a test, for programs such as the
// benchmarks, with extra redis-server arguments for every node (such as
// "--appendonly", "yes", so that a restarted node keeps its keys). The
// caller stops it with Cluster.Stop or Stop. On failure it returns an error
// with the nodes' logs and leaves no node running.
func LaunchCluster(masters, replicasPerMaster int, args ...string) (*Cluster, error) {
	if masters < 1 || replicasPerMaster < 0 {
		return nil, fmt.Errorf("redistest: a cluster of %d masters with %d replicas each", masters, replicasPerMaster)
	}
	c := &Cluster{}
	mu.Lock()
	for i := range masters * (1 + replicasPerMaster) {
		s, err := launch("redis-server", clusterNode(args))
		if err != nil {
			mu.Unlock()
			c.Stop()
			return nil, err
		}
		if i < masters {
			c.Masters = append(c.Masters, s)
		} else {
			c.Replicas = append(c.Replicas, s)
		}
	}
	mu.Unlock()
	if err := c.form(); err != nil {
		err = fmt.Errorf("redistest: forming a cluster: %w; logs:\n%s", err, logs(c.nodes()))
		c.Stop()
		return nil, err
	}
	return c, nil
}

// clusterNode is the setup of a cluster node: its bus on a port of its own
// (port+10000 may be taken or past 65535) and a short node timeout, then
// args.
func clusterNode(args []string) setup {
	return func(dir string) (before, after []string, err error) {
		bus, err := freePort()
		return nil, slices.Concat([]string{
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "2000",
			"--cluster-announce-ip", "127.0.0.1", "--repl-diskless-sync-delay", "0",
		}, args), err
	}
}

// form makes the started nodes one cluster: distinct config epochs for the
// masters, MEET, the masters' slots, REPLICATE, then waits until every node
// has the full map and knows the replicas, and every replica is in sync.
func (c *Cluster) form() error {
	nodes := c.nodes()
	for i, m := range c.Masters {
		if _, err := m.do("CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return fmt.Errorf("%s: CLUSTER SET-CONFIG-EPOCH: %w", m.Addr, err)
		}
		lo, hi := i*slots/len(c.Masters), (i+1)*slots/len(c.Masters)-1 // as firstMaster
		if _, err := m.do("CLUSTER", "ADDSLOTSRANGE", lo, hi); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE: %w", m.Addr, err)
		}
	}
	for _, n := range nodes[1:] {
		bus, err := redis.Strings(n.do("CONFIG", "GET", "cluster-port"))
		if err != nil || len(bus) != 2 {
			return fmt.Errorf("%s: CONFIG GET cluster-port: %v %w", n.Addr, bus, err)
		}
		host, port, _ := net.SplitHostPort(n.Addr)
		if _, err := nodes[0].do("CLUSTER", "MEET", host, port, bus[1]); err != nil {
			return fmt.Errorf("%s: CLUSTER MEET %s: %w", nodes[0].Addr, n.Addr, err)
		}
	}
	if err := await(clusterWait, nil, c.meshed); err != nil {
		return err
	}
	for j, r := range c.Replicas {
		id, err := c.Masters[j%len(c.Masters)].id()
		if err != nil {
			return err
		}
		if _, err := r.do("CLUSTER", "REPLICATE", id); err != nil {
			return fmt.Errorf("%s: CLUSTER REPLICATE: %w", r.Addr, err)
		}
	}
	return await(clusterWait, nil, func() error {
		if err := c.agree(c.firstMaster); err != nil {
			return err
		}
		for _, n := range c.nodes() {
			info, err := redis.String(n.do("CLUSTER", "INFO"))
			if err != nil {
				return fmt.Errorf("%s: CLUSTER INFO: %w", n.Addr, err)
			}
			if state := field(info, "cluster_state"); state != "ok" {
				return fmt.Errorf("%s: cluster_state:%s", n.Addr, state)
			}
		}
		for j, r := range c.Replicas {
			if err := linkUp(r); err != nil {
				return err
			}
			if err := c.seeReplica(r, c.Masters[j%len(c.Masters)]); err != nil {
				return err
			}
		}
		return nil
	})
}

// firstMaster returns the master that owns slot at start.
func (c *Cluster) firstMaster(slot int) *Server {
	i := 0
	for slot > (i+1)*slots/len(c.Masters)-1 {
		i++
	}
	return c.Masters[i]
}

// meshed returns nil once every node knows every other, past the handshake.
func (c *Cluster) meshed() error {
	nodes := c.nodes()
	for _, n := range nodes {
		list, err := redis.String(n.do("CLUSTER", "NODES"))
		if err != nil {
			return fmt.Errorf("%s: CLUSTER NODES: %w", n.Addr, err)
		}
		lines := strings.Split(strings.TrimSpace(list), "\n")
		if len(lines) != len(nodes) || strings.Contains(list, "handshake") || strings.Contains(list, "noaddr") {
			return fmt.Errorf("%s: CLUSTER NODES does not list the %d nodes yet:\n%s", n.Addr, len(nodes), list)
		}
	}
	return nil
}

// Stop stops every node and removes its directory.
func (c *Cluster) Stop() {
	for _, n := range c.nodes() {
		n.Stop()
	}
}

// Addrs returns every node's address, masters first: the seed list of a
// cluster client.
func (c *Cluster) Addrs() []string {
	var addrs []string
	for _, n := range c.nodes() {
		addrs = append(addrs, n.Addr)
	}
	return addrs
}

func (c *Cluster) nodes() []*Server { return slices.Concat(c.Masters, c.Replicas) }

// MasterOf returns the node that owns slot now, as the first node that
// answers says.
func (c *Cluster) MasterOf(slot int) (*Server, error) {
	if slot < 0 || slot >= slots {
		return nil, fmt.Errorf("redistest: slot %d is not in [0, %d)", slot, slots)
	}
	var err error
	for _, n := range c.nodes() {
		if !n.up() {
			continue
		}
		var owners []string
		if owners, err = slotOwners(n); err == nil {
			return c.node(owners[slot])
		}
	}
	return nil, fmt.Errorf("redistest: no node says who owns slot %d: %w", slot, err)
}

// node returns the node listening on addr.
func (c *Cluster) node(addr string) (*Server, error) {
	for _, n := range c.nodes() {
		if n.Addr == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("redistest: no node of the cluster is on %q", addr)
}

// MoveSlot moves slot with its keys to master to, live, as resharding does:
// IMPORTING on to, MIGRATING on the owner, MIGRATE of its keys in batches,
// then SETSLOT NODE on to, the owner and every other master. It returns
// once every running node's CLUSTER SLOTS agrees, or an error with the
// nodes' logs; on failure the slot may be left importing and migrating.
func (c *Cluster) MoveSlot(slot int, to *Server) error {
	from, err := c.MasterOf(slot)
	if err != nil || from == to {
		return err
	}
	if err := c.moveSlot(slot, from, to); err != nil {
		return fmt.Errorf("redistest: moving slot %d from %s to %s: %w; logs:\n%s", slot, from.Addr, to.Addr, err, logs(c.nodes()))
	}
	return nil
}

func (c *Cluster) moveSlot(slot int, from, to *Server) error {
	fromID, err := from.id()
	if err != nil {
		return err
	}
	toID, err := to.id()
	if err != nil {
		return err
	}
	if _, err := to.do("CLUSTER", "SETSLOT", slot, "IMPORTING", fromID); err != nil {
		return fmt.Errorf("SETSLOT IMPORTING: %w", err)
	}
	if _, err := from.do("CLUSTER", "SETSLOT", slot, "MIGRATING", toID); err != nil {
		return fmt.Errorf("SETSLOT MIGRATING: %w", err)
	}
	if err := migrateKeys(slot, from, to); err != nil {
		return err
	}
	others := slices.DeleteFunc(c.nodes(), func(n *Server) bool {
		return n == to || n == from || !n.up() || n.role() != "master"
	})
	for _, m := range slices.Concat([]*Server{to, from}, others) {
		if _, err := m.do("CLUSTER", "SETSLOT", slot, "NODE", toID); err != nil {
			return fmt.Errorf("%s: SETSLOT NODE: %w", m.Addr, err)
		}
	}
	return await(clusterWait, nil, func() error {
		return c.agree(func(s int) *Server {
			if s == slot {
				return to
			}
			return nil
		})
	})
}

// migrateKeys moves the keys of slot from one master to another, 100 at a
// time.
func migrateKeys(slot int, from, to *Server) error {
	conn, err := from.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	host, port, _ := net.SplitHostPort(to.Addr)
	for {
		keys, err := redis.Values(conn.Do("CLUSTER", "GETKEYSINSLOT", slot, 100))
		if err != nil || len(keys) == 0 {
			return err
		}
		args := append([]any{host, port, "", 0, 5000, "KEYS"}, keys...)
		if _, err := conn.Do("MIGRATE", args...); err != nil {
			return fmt.Errorf("MIGRATE: %w", err)
		}
	}
}

// Failover makes replica the master of its master's slots with CLUSTER
// FAILOVER, or CLUSTER FAILOVER FORCE when that master is down. It returns
// once replica says it is a master and every running node's CLUSTER SLOTS
// gives it those slots, or an error with the nodes' logs (also when the
// cluster has already made replica a master by itself, 3 to 5 s after its
// master died).
func (c *Cluster) Failover(replica *Server) error {
	if err := c.failover(replica); err != nil {
		return fmt.Errorf("redistest: failover to %s: %w; logs:\n%s", replica.Addr, err, logs(c.nodes()))
	}
	return nil
}

func (c *Cluster) failover(replica *Server) error {
	info, err := redis.String(replica.do("INFO", "replication"))
	if err != nil {
		return err
	}
	if role := field(info, "role"); role != "slave" {
		return fmt.Errorf("%s is not a replica but a %s", replica.Addr, role)
	}
	old, err := c.node(net.JoinHostPort(field(info, "master_host"), field(info, "master_port")))
	if err != nil {
		return err
	}
	owners, err := slotOwners(replica)
	if err != nil {
		return err
	}
	args := []any{"FAILOVER", "FORCE"}
	if old.up() {
		// The master ignores a replica it does not know as its own yet,
		// and the other masters do not vote for one they take for a
		// master, as just after it rejoined.
		if err := await(clusterWait, nil, func() error { return c.seeReplica(replica, old) }); err != nil {
			return err
		}
		args = args[:1]
	}
	if _, err := replica.do("CLUSTER", args...); err != nil {
		return err
	}
	return await(clusterWait, nil, func() error {
		if role := replica.role(); role != "master" {
			return fmt.Errorf("%s: role %q", replica.Addr, role)
		}
		return c.agree(func(slot int) *Server {
			if owners[slot] == old.Addr {
				return replica
			}
			return nil
		})
	})
}

// seeReplica returns nil once every running node's CLUSTER NODES lists r as
// a replica of m, in good health.
func (c *Cluster) seeReplica(r, m *Server) error {
	for _, n := range c.nodes() {
		if n.up() {
			if err := seesReplica(n, r, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// seesReplica returns nil once node n's CLUSTER NODES lists r as a replica
// of m, in good health.
func seesReplica(n, r, m *Server) error {
	mID, err := m.id()
	if err != nil {
		return err
	}
	rID, err := r.id()
	if err != nil {
		return err
	}
	list, err := redis.String(n.do("CLUSTER", "NODES"))
	if err != nil {
		return fmt.Errorf("%s: CLUSTER NODES: %w", n.Addr, err)
	}
	for line := range strings.Lines(list) {
		// <id> <ip:port@cport> <flags> <master> ...
		if f := strings.Fields(line); len(f) > 3 && f[0] == rID {
			flags := strings.Split(f[2], ",")
			if f[3] == mID && slices.Contains(flags, "slave") && !slices.Contains(flags, "fail") && !slices.Contains(flags, "fail?") {
				return nil
			}
			return fmt.Errorf("%s: CLUSTER NODES: %s", n.Addr, line)
		}
	}
	return fmt.Errorf("%s: CLUSTER NODES does not list %s", n.Addr, r.Addr)
}

// agree returns nil once every running node's CLUSTER SLOTS gives each slot
// to want(slot), for the slots where want is not nil.
func (c *Cluster) agree(want func(slot int) *Server) error {
	for _, n := range c.nodes() {
		if !n.up() {
			continue
		}
		owners, err := slotOwners(n)
		if err != nil {
			return err
		}
		for slot, owner := range owners {
			if w := want(slot); w != nil && owner != w.Addr {
				return fmt.Errorf("%s: slot %d is on %q, not yet on %s", n.Addr, slot, owner, w.Addr)
			}
		}
	}
	return nil
}

// slotOwners returns the address of each slot's master as node n's CLUSTER
// SLOTS gives it, "" for a slot without one.
func slotOwners(n *Server) ([]string, error) {
	ranges, err := redis.Values(n.do("CLUSTER", "SLOTS"))
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER SLOTS: %w", n.Addr, err)
	}
	owners := make([]string, slots)
	for _, r := range ranges {
		var lo, hi int
		var master []any
		fields, err := redis.Values(r, nil)
		if err == nil {
			_, err = redis.Scan(fields, &lo, &hi, &master)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: %w", n.Addr, err)
		}
		var ip string
		var port int
		if _, err := redis.Scan(master, &ip, &port); err != nil {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: %w", n.Addr, err)
		}
		for slot := lo; slot <= hi; slot++ {
			owners[slot] = net.JoinHostPort(ip, strconv.Itoa(port))
		}
	}
	return owners, nil
}

// id returns the node's cluster ID.
func (s *Server) id() (string, error) {
	id, err := redis.String(s.do("CLUSTER", "MYID"))
	if err != nil {
		return "", fmt.Errorf("%s: CLUSTER MYID: %w", s.Addr, err)
	}
	return id, nil
}

// Slot returns the Redis Cluster hash slot of key: the CRC16 (XMODEM) of
// its hash tag, the part between the first "{" and the next "}" when that
// is not empty, or else of the whole key, modulo 16384.
func Slot(key string) int { return hashslot.Of(key) }
