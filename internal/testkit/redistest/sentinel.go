package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// sentinelWait bounds each wait for the sentinels; a failover takes about
// 10 s, most of it the sentinels waiting before they make the old master a
// replica.
const sentinelWait = 30 * time.Second

// A Sentinel is a master with one replica watched by three sentinels, with
// a quorum of two. The sentinels find the master down after 1 s, unless
// started by StartSentinelDefaults. It is not safe for concurrent use.
type Sentinel struct {
	Master, Replica *Server   // as started; after Failover their roles swap
	Sentinels       []*Server // the redis-sentinel processes
	Name            string    // the master name the sentinels monitor, "mymaster"
	// defaults: the sentinels keep Sentinel's own periods
	// (down-after-milliseconds 30000, failover-timeout 180000) rather than
	// the short ones StartSentinel sets.
	defaults bool
}

// StartSentinel returns a running master, replica and sentinels of its own,
// stopped at cleanup. When redis-server is missing it skips the test, or
// fails it as Start does.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	return startSentinel(tb, false)
}

// StartSentinelDefaults is StartSentinel with Sentinel's default periods,
// as a deployment that does not tune them has: the master is found down
// after 30 s (down-after-milliseconds 30000), failover-timeout is 180000,
// and the sentinels read a replica's INFO every 10 s. A SENTINEL FAILOVER
// still promotes the replica within a few seconds (see Switch), but the
// sentinels make the old master a replica of the new one only about 10 s
// after the switch, and it takes writes until then.
func StartSentinelDefaults(tb testing.TB) *Sentinel {
	tb.Helper()
	return startSentinel(tb, true)
}

func startSentinel(tb testing.TB, defaults bool) *Sentinel {
	tb.Helper()
	s, err := launchSentinel(defaults)
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// LaunchSentinel starts a master, replica and sentinels outside a test, for
// programs such as the benchmarks. The caller stops them with
// Sentinel.Stop or Stop. It returns once the replica is in sync and every
// sentinel knows it and the two other sentinels; on failure it returns an
// error with the logs and leaves nothing running.
func LaunchSentinel() (*Sentinel, error) { return launchSentinel(false) }

func launchSentinel(defaults bool) (*Sentinel, error) {
	s := &Sentinel{Name: "mymaster", defaults: defaults}
	mu.Lock()
	err := s.launch()
	mu.Unlock()
	if err == nil {
		err = await(sentinelWait, nil, s.settled)
		if err != nil {
			err = fmt.Errorf("redistest: starting sentinels: %w; logs:\n%s", err, logs(s.all()))
		}
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// launch starts the master, the replica once the master answers, and the
// sentinels once the replica is in sync, so that they find it at once.
// The caller holds mu.
func (s *Sentinel) launch() error {
	var err error
	// No delay before a full sync, so that the replica syncs at once.
	if s.Master, err = launch("redis-server", after("--repl-diskless-sync-delay", "0")); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(s.Master.Addr)
	if s.Replica, err = launch("redis-server", after("--repl-diskless-sync-delay", "0", "--replicaof", host, port)); err != nil {
		return err
	}
	if err := await(sentinelWait, nil, func() error { return linkUp(s.Replica) }); err != nil {
		return fmt.Errorf("redistest: replica: %w; logs:\n%s", err, logs(s.all()))
	}
	bin, set := "redis-sentinel", s.config
	if _, err := exec.LookPath(bin); err != nil {
		bin, set = "redis-server", func(dir string) ([]string, []string, error) {
			conf, _, err := s.config(dir)
			return conf, []string{"--sentinel"}, err
		}
	}
	for range 3 {
		sentinel, err := launch(bin, set)
		if err != nil {
			return err
		}
		s.Sentinels = append(s.Sentinels, sentinel)
	}
	return nil
}

// config is the setup of a sentinel: a config file of its own, which the
// sentinel rewrites.
func (s *Sentinel) config(dir string) (before, after []string, err error) {
	host, port, _ := net.SplitHostPort(s.Master.Addr)
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Appendf(nil, `sentinel resolve-hostnames no
sentinel monitor %[1]s %[2]s %[3]s 2
`, s.Name, host, port)
	if !s.defaults {
		text = fmt.Appendf(text, `sentinel down-after-milliseconds %[1]s 1000
sentinel failover-timeout %[1]s 5000
`, s.Name)
	}
	err = os.WriteFile(conf, text, 0o600)
	return []string{conf}, nil, err
}

// settled returns nil once every sentinel knows the replica and the two
// other sentinels.
func (s *Sentinel) settled() error {
	for _, sentinel := range s.Sentinels {
		replicas, err := redis.Values(sentinel.do("SENTINEL", "REPLICAS", s.Name))
		if err != nil {
			return fmt.Errorf("%s: SENTINEL REPLICAS: %w", sentinel.Addr, err)
		}
		others, err := redis.Values(sentinel.do("SENTINEL", "SENTINELS", s.Name))
		if err != nil {
			return fmt.Errorf("%s: SENTINEL SENTINELS: %w", sentinel.Addr, err)
		}
		if len(replicas) != 1 || len(others) != len(s.Sentinels)-1 {
			return fmt.Errorf("%s knows %d replicas and %d other sentinels", sentinel.Addr, len(replicas), len(others))
		}
	}
	return nil
}

// Stop stops the sentinels, master and replica, and removes their
// directories.
func (s *Sentinel) Stop() {
	for _, srv := range s.all() {
		srv.Stop()
	}
}

// all returns every server started, sentinels first.
func (s *Sentinel) all() []*Server {
	return slices.DeleteFunc(slices.Concat(s.Sentinels, []*Server{s.Master, s.Replica}),
		func(srv *Server) bool { return srv == nil })
}

// Addrs returns the sentinels' addresses.
func (s *Sentinel) Addrs() []string {
	var addrs []string
	for _, sentinel := range s.Sentinels {
		addrs = append(addrs, sentinel.Addr)
	}
	return addrs
}

// CurrentMaster returns the master's address as the first sentinel that
// answers SENTINEL GET-MASTER-ADDR-BY-NAME gives it.
func (s *Sentinel) CurrentMaster() (string, error) {
	var err error
	for _, sentinel := range s.Sentinels {
		if !sentinel.up() {
			continue
		}
		var addr string
		if addr, err = s.masterAddr(sentinel); err == nil {
			return addr, nil
		}
	}
	return "", fmt.Errorf("redistest: no sentinel gives the master: %w", err)
}

func (s *Sentinel) masterAddr(sentinel *Server) (string, error) {
	hostPort, err := redis.Strings(sentinel.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.Name))
	if err != nil || len(hostPort) != 2 {
		return "", fmt.Errorf("%s: SENTINEL GET-MASTER-ADDR-BY-NAME: %v %w", sentinel.Addr, hostPort, err)
	}
	return net.JoinHostPort(hostPort[0], hostPort[1]), nil
}

// Failover makes the replica the master with SENTINEL FAILOVER. It returns
// once every running sentinel gives the new master, that node says it is a
// master, the old master is its replica in sync, and every running
// sentinel is linked to the old master as a replica it could promote, so
// that Failover can run again: about 10 s, since the sentinels wait 8 s
// before they turn the old master into a replica. It is Switch, then
// AwaitReplica. On failure it returns an error with the logs.
func (s *Sentinel) Failover() error {
	old, next, err := s.Switch()
	if err != nil {
		return err
	}
	return s.AwaitReplica(old, next)
}

// Switch sends SENTINEL FAILOVER to a sentinel and returns once every
// running sentinel gives the replica it promoted, next, as the master and
// next says it is one: from then on a client that asks a sentinel reaches
// next. It returns the old master too, which is not yet next's replica and
// may still take writes (see AwaitReplica). On failure it returns an error
// with the logs.
func (s *Sentinel) Switch() (old, next *Server, err error) {
	if old, next, err = s.switchOver(); err != nil {
		return nil, nil, fmt.Errorf("redistest: sentinel failover: %w; logs:\n%s", err, logs(s.all()))
	}
	return old, next, nil
}

func (s *Sentinel) switchOver() (old, next *Server, err error) {
	addr, err := s.CurrentMaster()
	if err != nil {
		return nil, nil, err
	}
	old, next = s.Master, s.Replica
	if addr == s.Replica.Addr {
		old, next = next, old
	}
	i := slices.IndexFunc(s.Sentinels, (*Server).up)
	if i < 0 {
		return nil, nil, errors.New("no sentinel is up")
	}
	if _, err := s.Sentinels[i].do("SENTINEL", "FAILOVER", s.Name); err != nil {
		return nil, nil, fmt.Errorf("%s: SENTINEL FAILOVER: %w", s.Sentinels[i].Addr, err)
	}
	return old, next, await(sentinelWait, nil, func() error {
		for _, sentinel := range s.Sentinels {
			if !sentinel.up() {
				continue
			}
			if addr, err := s.masterAddr(sentinel); err != nil || addr != next.Addr {
				return fmt.Errorf("%s gives master %s, %v; want %s", sentinel.Addr, addr, err, next.Addr)
			}
		}
		if role := next.role(); role != "master" {
			return fmt.Errorf("%s: role %q", next.Addr, role)
		}
		return nil
	})
}

// AwaitReplica returns once old, the master before a Switch to next, is
// next's replica in sync and every running sentinel is linked to it as a
// replica it could promote, so that Switch or Failover can run again. On
// failure it returns an error with the logs.
func (s *Sentinel) AwaitReplica(old, next *Server) error {
	if err := s.awaitReplica(old, next); err != nil {
		return fmt.Errorf("redistest: sentinel failover: %w; logs:\n%s", err, logs(s.all()))
	}
	return nil
}

func (s *Sentinel) awaitReplica(old, next *Server) error {
	return await(sentinelWait, nil, func() error {
		info, err := redis.String(old.do("INFO", "replication"))
		if err != nil {
			return fmt.Errorf("%s: INFO: %w", old.Addr, err)
		}
		if got := net.JoinHostPort(field(info, "master_host"), field(info, "master_port")); got != next.Addr || field(info, "master_link_status") != "up" {
			return fmt.Errorf("%s: not yet a replica of %s in sync:\n%s", old.Addr, next.Addr, info)
		}
		for _, sentinel := range s.Sentinels {
			if sentinel.up() {
				if err := s.promotable(sentinel, old); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// promotable returns nil once sentinel lists r as a replica that it could
// promote: neither down nor disconnected. Turning the old master into a
// replica kills the sentinels' connections to it, and a SENTINEL FAILOVER
// before they reconnect fails with NOGOODSLAVE.
func (s *Sentinel) promotable(sentinel, r *Server) error {
	replicas, err := redis.Values(sentinel.do("SENTINEL", "REPLICAS", s.Name))
	if err != nil {
		return fmt.Errorf("%s: SENTINEL REPLICAS: %w", sentinel.Addr, err)
	}
	for _, replica := range replicas {
		fields, err := redis.StringMap(replica, nil)
		if err != nil {
			return fmt.Errorf("%s: SENTINEL REPLICAS: %w", sentinel.Addr, err)
		}
		if fields["name"] == r.Addr {
			if flags := fields["flags"]; flags != "slave" {
				return fmt.Errorf("%s: replica %s has flags %s", sentinel.Addr, r.Addr, flags)
			}
			return nil
		}
	}
	return fmt.Errorf("%s does not list %s as a replica", sentinel.Addr, r.Addr)
}
