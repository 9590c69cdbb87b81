package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// pings is how many PINGs measure the round trip.
const pings = 1000

// env is one Redis deployment the rows run on: one server, or the masters
// of a Cluster, each watched over a connection of its own that no row
// uses.
type env struct {
	addr     string        // the server's, or the Cluster's first master's: what the rows dial
	cluster  bool          // the nodes are the masters of a Cluster
	nodes    []node        // the server, or every master
	overhead int64         // commands that reading the command counts adds to them
	ping     time.Duration // PING round trip p50, to the first node
}

// node is one server of a deployment.
type node struct {
	addr  string
	stats redis.Conn
}

// newEnv returns the env of the server at addrs[0] or, if cluster, of the
// Cluster whose masters are at addrs.
func newEnv(cluster bool, addrs ...string) (*env, error) {
	e := &env{addr: addrs[0], cluster: cluster}
	for _, addr := range addrs {
		c, err := redis.Dial("tcp", addr)
		if err != nil {
			e.close()
			return nil, err
		}
		e.nodes = append(e.nodes, node{addr: addr, stats: c})
	}
	if err := e.calibrate(); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	for _, n := range e.nodes {
		n.stats.Close()
	}
}

// name says what e is, for the output.
func (e *env) name() string {
	if e.cluster {
		return fmt.Sprintf("a Cluster of %d masters", len(e.nodes))
	}
	return "one redis-server"
}

// addrs returns the address of every node.
func (e *env) addrs() []string {
	addrs := make([]string, len(e.nodes))
	for i, n := range e.nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// calibrate measures the PING round trip and what INFO adds to the
// command count.
func (e *env) calibrate() error {
	times := make([]time.Duration, pings)
	for i := range times {
		start := time.Now()
		if _, err := e.nodes[0].stats.Do("PING"); err != nil {
			return err
		}
		times[i] = time.Since(start)
	}
	e.ping = percentile(times, 0.5)
	before, err := e.commands()
	if err != nil {
		return err
	}
	after, err := e.commands()
	e.overhead = after - before
	return err
}

// commands returns total_commands_processed, summed over the nodes.
func (e *env) commands() (int64, error) {
	return e.infoSum("stats", "total_commands_processed")
}

// infoSum returns an integer field of an INFO section, summed over the
// nodes.
func (e *env) infoSum(section, field string) (int64, error) {
	texts, err := e.infos(section)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, text := range texts {
		v, err := infoField(text, section, field)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO %s: %s: %w", section, field, err)
		}
		sum += n
	}
	return sum, nil
}

// count returns the Redis commands that fn sends, counting also the commands
// Lua scripts run and any other client's traffic meanwhile.
func (e *env) count(fn func()) (int64, error) {
	before, err := e.commands()
	if err != nil {
		return 0, err
	}
	fn()
	after, err := e.commands()
	return after - before - e.overhead, err
}

// measure returns the Redis commands fn sends, as count does, and the CPU
// time the nodes used meanwhile: fn's, any other client's, their own
// background work (on a Cluster, the gossip between them too) and a little
// of the INFO calls around fn.
func (e *env) measure(fn func()) (cmds int64, cpu time.Duration, err error) {
	before, err := e.cpu()
	if err != nil {
		return 0, 0, err
	}
	if cmds, err = e.count(fn); err != nil {
		return 0, 0, err
	}
	after, err := e.cpu()
	return cmds, after - before, err
}

// cpu returns the CPU time the nodes have used so far, user and system,
// all their threads.
func (e *env) cpu() (time.Duration, error) {
	texts, err := e.infos("cpu")
	if err != nil {
		return 0, err
	}
	return cpuTime(texts...)
}

// cpuTime returns used_cpu_user + used_cpu_sys of INFO cpu replies, which
// give both in seconds, summed over the replies.
func cpuTime(texts ...string) (time.Duration, error) {
	var sum time.Duration
	for _, text := range texts {
		for _, field := range []string{"used_cpu_user", "used_cpu_sys"} {
			v, err := infoField(text, "cpu", field)
			if err != nil {
				return 0, err
			}
			s, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu: %s: %w", field, err)
			}
			sum += time.Duration(math.Round(s * float64(time.Second)))
		}
	}
	return sum, nil
}

// info returns one field of INFO section of the first node.
func (e *env) info(section, field string) (string, error) {
	text, err := redis.String(e.nodes[0].stats.Do("INFO", section))
	if err != nil {
		return "", err
	}
	return infoField(text, section, field)
}

// infos returns each node's reply to INFO section, in order.
func (e *env) infos(section string) ([]string, error) {
	texts := make([]string, len(e.nodes))
	for i, n := range e.nodes {
		text, err := redis.String(n.stats.Do("INFO", section))
		if err != nil {
			return nil, fmt.Errorf("%s: INFO %s: %w", n.addr, section, err)
		}
		texts[i] = text
	}
	return texts, nil
}

// infoField returns one field of text, the reply to INFO section.
func infoField(text, section, field string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("INFO %s has no %s", section, field)
}

// keys returns the number of keys of each node (DBSIZE).
func (e *env) keys() ([]int64, error) {
	counts := make([]int64, len(e.nodes))
	for i, n := range e.nodes {
		c, err := redis.Int64(n.stats.Do("DBSIZE"))
		if err != nil {
			return nil, fmt.Errorf("%s: DBSIZE: %w", n.addr, err)
		}
		counts[i] = c
	}
	return counts, nil
}

// Kinds of subscription, as CLIENT LIST names their counts.
const (
	channelSubs = "sub"
	patternSubs = "psub"
	shardSubs   = "ssub"
)

// subscribers returns, for each node, how many of its connections have a
// subscription (all), and how many a sharded one, from one CLIENT LIST:
// two readings would count a connection that subscribed between them.
func (e *env) subscribers() (all, sharded []int, err error) {
	all, sharded = make([]int, len(e.nodes)), make([]int, len(e.nodes))
	for i, n := range e.nodes {
		list, err := redis.String(n.stats.Do("CLIENT", "LIST"))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: CLIENT LIST: %w", n.addr, err)
		}
		all[i], sharded[i] = subscribedTo(list, channelSubs, patternSubs, shardSubs), subscribedTo(list, shardSubs)
	}
	return all, sharded, nil
}

// subscribedTo returns how many connections of list, a reply to CLIENT
// LIST, have more than 0 subscriptions of one of kinds.
func subscribedTo(list string, kinds ...string) int {
	n := 0
	for line := range strings.Lines(list) {
		for field := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(field, "=")
			if subs, err := strconv.Atoi(v); slices.Contains(kinds, k) && err == nil && subs > 0 {
				n++
				break
			}
		}
	}
	return n
}

// poolSpare is how many connections a row's pool or client keeps beyond
// those its goroutines use at once.
const poolSpare = 4

// connsFor returns the connections a pool or client keeps for n users at
// once: n and poolSpare more, as a user who tuned it would size it.
func connsFor(n int) int { return n + poolSpare }

// newPool returns a pool that keeps idle connections enough for conns
// users at once (connsFor), and has no cap: no user waits for a
// connection, and none is dialled again once each has one. The rows'
// processes share it; a Client of ours uses two, one for its calls and
// one that listens for hand-offs.
func newPool(addr string, conns int) *redis.Pool {
	return &redis.Pool{MaxIdle: connsFor(conns), DialContext: dialer(addr)}
}

// newCappedPool returns a pool of at most 64 connections whose callers wait
// for a free one, so that thousands of waiters share a few sockets.
func newCappedPool(addr string) *redis.Pool {
	return &redis.Pool{MaxIdle: 64, MaxActive: 64, Wait: true, DialContext: dialer(addr)}
}

func dialer(addr string) func(context.Context) (redis.Conn, error) {
	return func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr)
	}
}
