package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// pings is how many PINGs measure the round trip.
const pings = 1000

// env is the Redis server the rows run on, watched over a connection of
// its own that no row uses.
type env struct {
	addr     string
	stats    redis.Conn
	overhead int64         // commands that reading the command count adds to it
	ping     time.Duration // PING round trip p50
}

func newEnv(addr string) (*env, error) {
	c, err := redis.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	e := &env{addr: addr, stats: c}
	if err := e.calibrate(); err != nil {
		c.Close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() { e.stats.Close() }

// calibrate measures the PING round trip and what INFO adds to the
// command count.
func (e *env) calibrate() error {
	times := make([]time.Duration, pings)
	for i := range times {
		start := time.Now()
		if _, err := e.stats.Do("PING"); err != nil {
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

// commands returns the server's total_commands_processed.
func (e *env) commands() (int64, error) {
	return e.infoInt("stats", "total_commands_processed")
}

// infoInt returns an integer field of an INFO section.
func (e *env) infoInt(section, field string) (int64, error) {
	v, err := e.info(section, field)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
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
// time the server used meanwhile: fn's, any other client's, the server's
// own background work and a little of the INFO calls around fn.
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

// cpu returns the CPU time the server has used so far, user and system,
// all its threads.
func (e *env) cpu() (time.Duration, error) {
	text, err := redis.String(e.stats.Do("INFO", "cpu"))
	if err != nil {
		return 0, err
	}
	return cpuTime(text)
}

// cpuTime returns used_cpu_user + used_cpu_sys of an INFO cpu reply, which
// gives both in seconds.
func cpuTime(text string) (time.Duration, error) {
	var sum time.Duration
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
	return sum, nil
}

// info returns one field of INFO section.
func (e *env) info(section, field string) (string, error) {
	text, err := redis.String(e.stats.Do("INFO", section))
	if err != nil {
		return "", err
	}
	return infoField(text, section, field)
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

// subscribers returns how many connections have a channel, pattern or
// shard channel subscription.
func (e *env) subscribers() (int, error) {
	text, err := redis.String(e.stats.Do("CLIENT", "LIST"))
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range strings.Lines(text) {
		if subscribed(line) {
			n++
		}
	}
	return n, nil
}

// subscribed reports whether a CLIENT LIST line shows a subscription.
func subscribed(line string) bool {
	for field := range strings.FieldsSeq(line) {
		k, v, _ := strings.Cut(field, "=")
		if (k == "sub" || k == "psub" || k == "ssub") && v != "0" && v != "" {
			return true
		}
	}
	return false
}

// newPool returns the pool that the processes a row simulates share: idle
// connections enough for every worker and its subscriber, and no cap.
func newPool(addr string) *redis.Pool {
	return &redis.Pool{MaxIdle: 64, DialContext: dialer(addr)}
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
