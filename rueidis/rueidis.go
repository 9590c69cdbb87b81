// Package rueidis runs the locks of package uncomplicated on rueidis
// (github.com/redis/rueidis): on one Redis node, on a master that Sentinel
// watches and on Redis Cluster, with rueidis's auto-pipelining. Valkey
// works as it is, through rueidis or valkey-go's fork of it.
//
//	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"localhost:6379"}})
//	locks := urueidis.NewClient(c) // import urueidis "github.com/uncomplicated-mutex/uncomplicated/rueidis"
//	defer locks.Close()
//	m, err := uncomplicated.New(locks, order)
//
// Concurrent calls share one connection per node, and so one write and one
// read on the socket: the cheapest way to Redis for many locks at once.
// Hand-offs are heard on that connection too (RESP3 pub/sub), sharded on a
// Cluster, so a Client keeps no connection of its own to listen.
package rueidis

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// NewClient returns a Client whose locks talk to Redis through c, with
// opts as the defaults of every lock it makes. It never closes c; Close
// stops only the lock client.
func NewClient(c rueidis.Client, opts ...uncomplicated.Option) *uncomplicated.Client {
	return uncomplicated.NewClient(NewDriver(c), opts...)
}

// NewDriver returns the driver.Driver of c, or nil for a nil c, which the
// Client's locks report.
func NewDriver(c rueidis.Client) driver.Driver {
	if c == nil || reflect.ValueOf(c).Kind() == reflect.Pointer && reflect.ValueOf(c).IsNil() {
		return nil
	}
	return &rueidisDriver{c: c, cluster: c.Mode() == rueidis.ClientModeCluster}
}

// rueidisDriver is the driver.Driver of a rueidis client.
type rueidisDriver struct {
	c       rueidis.Client
	cluster bool
}

// Eval runs EVALSHA, and EVAL when Redis does not have the script. rueidis
// sends a script once: it retries only read-only commands.
func (d *rueidisDriver) Eval(ctx context.Context, s *driver.Script, keys []string, args []any) (any, error) {
	argv := strs(args)
	reply, err := replyOf(d.c.Do(ctx, d.c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()))
	if noScript(err) {
		reply, err = replyOf(d.c.Do(ctx, d.c.B().Eval().Script(s.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()))
	}
	return reply, err
}

// EvalWait runs the script and WAIT on one dedicated connection: on a
// Cluster, to the master of the keys' slot. A dedicated connection does
// not follow MOVED: after one, a keyed read through the client, which
// follows it and learns the new slot map, comes first, and then once more
// the script and WAIT.
func (d *rueidisDriver) EvalWait(ctx context.Context, s *driver.Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	argv := strs(args)
	var (
		r     any
		acked int64
	)
	run := func(dc rueidis.DedicatedClient) error {
		wait := func() rueidis.Completed {
			return dc.B().Wait().Numreplicas(int64(replicas)).Timeout(timeout.Milliseconds()).Build()
		}
		res := dc.DoMulti(ctx, dc.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build(), wait())
		var err error
		if r, err = replyOf(res[0]); noScript(err) {
			res = dc.DoMulti(ctx, dc.B().Eval().Script(s.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build(), wait())
			r, err = replyOf(res[0])
		}
		if err != nil {
			return err
		}
		w, err := replyOf(res[1])
		acked, _ = w.(int64)
		return err
	}
	err := d.dedicated(ctx, run)
	if moved(err) && len(keys) > 0 {
		d.follow(ctx, keys[0])
		err = d.dedicated(ctx, run)
	}
	return r, acked, err
}

// dedicated runs fn on a dedicated connection, returning once ctx ends:
// rueidis takes a connection of a single node's pool without regard to
// ctx, and the call goes on in the background until it has one.
func (d *rueidisDriver) dedicated(ctx context.Context, fn func(rueidis.DedicatedClient) error) error {
	if ctx.Done() == nil {
		return d.c.Dedicated(fn)
	}
	done := make(chan error, 1)
	go func() { done <- d.c.Dedicated(fn) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// follow reads key through the client, which follows a MOVED and so
// learns where the key's slot went.
func (d *rueidisDriver) follow(ctx context.Context, key string) {
	_ = d.c.Do(ctx, d.c.B().Exists().Key(key).Build()).Error()
}

// moved reports a Cluster's MOVED or ASK: the slot is another node's.
func moved(err error) bool {
	var re replyError
	if !errors.As(err, &re) {
		return false
	}
	_, m := re.err.IsMoved()
	_, a := re.err.IsAsk()
	return m || a
}

// Do runs one command: routed by keys[0] when it is the command's first
// argument, and otherwise (INFO, SCAN about a node) on a dedicated
// connection that a read of keys[0] took to its master, after the client
// followed the key if the read found that its slot moved.
func (d *rueidisDriver) Do(ctx context.Context, keys []string, cmd string, args ...any) (any, error) {
	argv := strs(args)
	name := strings.Fields(cmd)
	switch {
	case len(keys) > 0 && len(argv) > 0 && argv[0] == keys[0]:
		return replyOf(d.c.Do(ctx, d.c.B().Arbitrary(name...).Keys(keys[0]).Args(argv[1:]...).Build()))
	case len(keys) == 0 || !d.cluster:
		return replyOf(d.c.Do(ctx, d.c.B().Arbitrary(name...).Args(argv...).Build()))
	}
	var r any
	run := func(dc rueidis.DedicatedClient) error {
		res := dc.DoMulti(ctx, dc.B().Exists().Key(keys[0]).Build(), dc.B().Arbitrary(name...).Args(argv...).Build())
		if _, err := replyOf(res[0]); err != nil {
			return err // the key's node is not this one: a slot moved
		}
		var err error
		r, err = replyOf(res[1])
		return err
	}
	err := d.dedicated(ctx, run)
	if moved(err) {
		d.follow(ctx, keys[0])
		err = d.dedicated(ctx, run)
	}
	return r, err
}

// strs turns the arguments of a call into the strings rueidis sends.
func strs(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case string:
			out[i] = a
		case []byte:
			out[i] = string(a)
		case int:
			out[i] = strconv.Itoa(a)
		case int64:
			out[i] = strconv.FormatInt(a, 10)
		default:
			out[i] = fmt.Sprint(a)
		}
	}
	return out
}

// replyOf reads a reply as package driver has it: integers as int64,
// strings as []byte, arrays as []any, nil as nil, RESP3's booleans as
// RESP2 has them, and error replies as errors with a RedisError method.
func replyOf(res rueidis.RedisResult) (any, error) {
	m, err := res.ToMessage()
	if err != nil {
		var re *rueidis.RedisError
		if errors.As(err, &re) {
			if re.IsNil() {
				return nil, nil
			}
			return nil, replyError{re}
		}
		return nil, err
	}
	return convert(&m)
}

func convert(m *rueidis.RedisMessage) (any, error) {
	switch {
	case m.IsNil():
		return nil, nil
	case m.IsInt64():
		return m.AsInt64()
	case m.IsString():
		s, err := m.ToString()
		return []byte(s), err
	case m.Error() != nil:
		var re *rueidis.RedisError
		if errors.As(m.Error(), &re) {
			return replyError{re}, nil // an error inside an array, as package driver has it
		}
		return nil, m.Error()
	case m.IsBool():
		if b, _ := m.AsBool(); b {
			return int64(1), nil
		}
		return nil, nil
	case m.IsArray():
		vs, err := m.ToArray()
		if err != nil {
			return nil, err
		}
		out := make([]any, len(vs))
		for i := range vs {
			if out[i], err = convert(&vs[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	v, err := m.ToAny() // a verbatim string, a double, a map: as rueidis reads it
	if s, ok := v.(string); ok {
		if len(s) >= 4 && s[3] == ':' { // a verbatim string's format, "txt:"
			s = s[4:]
		}
		return []byte(s), err
	}
	return v, err
}

// A replyError is an error reply of Redis.
type replyError struct{ err *rueidis.RedisError }

func (e replyError) Error() string { return e.err.Error() }
func (e replyError) Unwrap() error { return e.err }

// RedisError marks an error reply, as the driver contract asks.
func (replyError) RedisError() {}

// noScript reports Redis's NOSCRIPT error.
func noScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT ")
}
