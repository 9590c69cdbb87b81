// Package goredis runs the locks of package uncomplicated on go-redis
// (github.com/redis/go-redis/v9): on one Redis node, on a master that
// Sentinel watches (redis.NewFailoverClient) and on Redis Cluster.
//
//	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
//	locks := goredis.NewClient(rdb)
//	defer locks.Close()
//	m, err := uncomplicated.New(locks, order)
//
// Every key of one lock shares a hash tag, so each script runs on the
// node that owns its slot; wake-ups use sharded pub/sub, with one
// listening connection per master that owns a slot with waiters.
//
// A caller whose ctx ends while its call is under way returns at once and
// leaves the call to read its reply, under the command timeout
// (uncomplicated.WithCommandTimeout), so that its connection goes back to
// the pool rather than being closed. With ContextTimeoutEnabled, go-redis
// bounds a call by the command timeout, and it runs in that goroutine;
// without it, go-redis ignores a call's ctx, so the call runs in a
// goroutine of its own that the driver leaves once the command timeout
// has passed. With a command timeout of 0, a call under a ctx that may end
// is bounded by that ctx alone, and with ContextTimeoutEnabled a ctx
// cancelled before its deadline ends it only when its reply comes or its
// deadline passes.
package goredis

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// NewClient returns a Client whose locks talk to Redis through rdb: a
// *redis.Client, a *redis.ClusterClient, or a Sentinel-backed
// *redis.Client from redis.NewFailoverClient (any redis.UniversalClient).
// opts are the defaults of every lock it makes, as for
// uncomplicated.NewClient. It never closes rdb; Client.Close stops only
// the lock client.
func NewClient(rdb redis.UniversalClient, opts ...uncomplicated.Option) *uncomplicated.Client {
	if rdb == nil || reflect.ValueOf(rdb).Kind() == reflect.Pointer && reflect.ValueOf(rdb).IsNil() {
		return uncomplicated.NewClient(nil, opts...) // its locks report ErrInvalidArgument
	}
	return uncomplicated.NewClient(NewDriver(rdb), opts...)
}

// NewDriver returns the driver.Driver of rdb, for code that wraps
// it (to count or fail calls in tests, say).
func NewDriver(rdb redis.UniversalClient) driver.Driver {
	d := &rdbDriver{rdb: rdb, watch: true}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		d.cluster, d.watch = c, !c.Options().ContextTimeoutEnabled
	case *redis.Client:
		d.watch = !c.Options().ContextTimeoutEnabled
	}
	return d
}

// rdbDriver is the driver.Driver of a go-redis client.
type rdbDriver struct {
	rdb     redis.UniversalClient
	cluster *redis.ClusterClient // rdb, when it is one
	// watch: without ContextTimeoutEnabled go-redis ignores the ctx of a
	// call, so each call runs in a goroutine that the caller leaves when
	// ctx ends. With it, go-redis bounds the call by ctx's deadline only
	// (see the package doc).
	watch bool
}

// Connections tells the Client the size of a *redis.Client's pool (see
// package driver): acquisition attempts take half of it at most, so that
// the calls that hand a lock on never wait behind them. A Cluster has a
// pool per node, and tells none.
func (d *rdbDriver) Connections() int {
	if c, ok := d.rdb.(*redis.Client); ok {
		return c.Options().PoolSize
	}
	return 0
}

// bounded runs f, returning by the end of ctx (see watch).
func bounded[T any](d *rdbDriver, ctx context.Context, f func() (T, error)) (T, error) {
	if !d.watch || ctx.Done() == nil {
		return f()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Eval runs the script once: go-redis sends a command again after its
// reply was lost, which would run a script twice, and package
// uncomplicated decides itself what to do when a script may have run.
func (d *rdbDriver) Eval(ctx context.Context, s *driver.Script, keys []string, args []any) (any, error) {
	reply, err := d.once(ctx, eval("evalsha", s.SHA1(), keys, args)...)
	if noScript(err) {
		reply, err = d.once(ctx, eval("eval", s.Source(), keys, args)...)
	}
	return result(reply, err)
}

// once runs a command that go-redis does not send again.
func (d *rdbDriver) once(ctx context.Context, args ...any) (any, error) {
	return bounded(d, ctx, func() (any, error) {
		wctx, stop := waiting(ctx)
		defer stop()
		cmd := onlyOnce{redis.NewCmd(wctx, args...)}
		_ = d.rdb.Process(wctx, cmd)
		v, err := cmd.Result()
		if err != nil && wctx.Err() != nil && ctx.Err() == nil && errors.Is(err, context.Canceled) {
			return v, driver.NotSent(err) // the caller left while it waited for a connection: never sent, as it is not retried
		}
		d.reload(ctx, err)
		return v, err
	})
}

// waiting is the ctx go-redis runs a call under: ctx's deadline, which
// go-redis sets on the connection, but ending when the caller that may
// leave the call does (see driver.Waiting), which go-redis heeds while it
// waits for a connection of its pool and not once it has sent the command.
// So a call whose caller left before it had a connection ends unsent.
func waiting(ctx context.Context) (context.Context, func()) { return driver.Waiting(ctx) }

// reload makes go-redis reload a Cluster's slot map after err, when it is
// not Redis's reply (a master that died: a refused connection, a timeout)
// or is CLUSTERDOWN: a dead master sends no MOVED, and go-redis would
// otherwise learn of its replica's promotion only at its next periodic
// reload (ClusterStateReloadInterval, a minute by default). go-redis
// spaces such reloads itself.
func (d *rdbDriver) reload(ctx context.Context, err error) {
	if d.cluster == nil || err == nil {
		return // and re, which escapes to the heap, is not made
	}
	var re redis.Error
	if !errors.Is(err, redis.Nil) && (!errors.As(err, &re) || strings.HasPrefix(err.Error(), "CLUSTERDOWN ")) {
		d.cluster.ReloadState(ctx)
	}
}

// onlyOnce is a command that go-redis does not retry.
type onlyOnce struct{ *redis.Cmd }

func (onlyOnce) NoRetry() bool { return true }

// eval is the arguments of EVAL or EVALSHA (cmd) of script on keys.
func eval(cmd, script string, keys []string, args []any) []any {
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, cmd, script, len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	return append(all, args...)
}

// EvalWait sends the script and WAIT in one pipeline, which go-redis
// writes on one connection; on a Cluster, to the master of the keys' slot.
func (d *rdbDriver) EvalWait(ctx context.Context, s *driver.Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	type waited struct {
		reply any
		acked int64
	}
	w, err := bounded(d, ctx, func() (waited, error) {
		reply, acked, err := d.evalWaitRedirected(ctx, s, keys, args, replicas, timeout)
		return waited{reply, acked}, err
	})
	return w.reply, w.acked, err
}

// evalWaitRedirected is EvalWait, once more after a MOVED and with the
// source after a NOSCRIPT.
func (d *rdbDriver) evalWaitRedirected(ctx context.Context, s *driver.Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	reply, acked, err := d.evalWait(ctx, s, false, keys, args, replicas, timeout)
	if moved(err) && d.cluster != nil { // a slot moved: learn where, and try once more
		d.cluster.ReloadState(ctx)
		reply, acked, err = d.evalWait(ctx, s, false, keys, args, replicas, timeout)
	}
	if noScript(err) {
		reply, acked, err = d.evalWait(ctx, s, true, keys, args, replicas, timeout)
	}
	d.reload(ctx, err)
	reply, err = result(reply, err)
	return reply, acked, err
}

// evalWait runs EVALSHA (EVAL with source) and WAIT.
func (d *rdbDriver) evalWait(ctx context.Context, s *driver.Script, source bool, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	node, err := d.node(ctx, keys)
	if err != nil {
		return nil, 0, err
	}
	script := onlyOnce{redis.NewCmd(ctx, eval("evalsha", s.SHA1(), keys, args)...)}
	if source {
		script = onlyOnce{redis.NewCmd(ctx, eval("eval", s.Source(), keys, args)...)}
	}
	wait := redis.NewIntCmd(ctx, "WAIT", replicas, timeout.Milliseconds())
	_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		_ = p.Process(ctx, script)
		_ = p.Process(ctx, wait)
		return nil
	})
	if err := script.Err(); err != nil {
		return nil, 0, err
	}
	if err != nil {
		return script.Val(), 0, err
	}
	return script.Val(), wait.Val(), nil
}

// Do runs cmd through rdb, which routes a command whose first argument is
// keys[0] by that key and follows redirections; a command about the node
// rather than a key (INFO) goes to the master that owns keys[0].
func (d *rdbDriver) Do(ctx context.Context, keys []string, cmd string, args ...any) (any, error) {
	all := append([]any{cmd}, args...)
	return bounded(d, ctx, func() (any, error) {
		ctx, stop := waiting(ctx)
		defer stop()
		if d.cluster == nil || len(keys) == 0 || len(args) > 0 && args[0] == keys[0] {
			cmd := d.rdb.Do(ctx, all...)
			d.reload(ctx, cmd.Err())
			return result(cmd.Result())
		}
		node, err := d.cluster.MasterForKey(ctx, keys[0])
		if err != nil {
			d.reload(ctx, err)
			return nil, err
		}
		cmd := node.Do(ctx, all...)
		d.reload(ctx, cmd.Err())
		return result(cmd.Result())
	})
}

// node is the client that runs calls about keys on one connection: rdb, or
// on a Cluster the master of their slot.
func (d *rdbDriver) node(ctx context.Context, keys []string) (redis.Cmdable, error) {
	if d.cluster == nil || len(keys) == 0 {
		return d.rdb, nil
	}
	return d.cluster.MasterForKey(ctx, keys[0])
}

// result reads a reply as package uncomplicated does: bulk strings as
// []byte, go-redis's redis.Nil as a nil reply, and RESP3's booleans as
// RESP2 has them.
func result(reply any, err error) (any, error) {
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return convert(reply), nil
}

func convert(v any) any {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case bool:
		if v {
			return int64(1)
		}
		return nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = convert(e)
		}
		return out
	}
	return v
}

// noScript reports Redis's NOSCRIPT error.
func noScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT ")
}

// moved reports a Cluster's MOVED error: the slot is another node's.
func moved(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(err.Error(), "MOVED ")
}
