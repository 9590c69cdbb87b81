// Package uncomplicatedrueidis runs the locks of package uncomplicated on rueidis
// (github.com/redis/rueidis): on one Redis node, on a master that Sentinel
// watches and on Redis Cluster, with rueidis's auto-pipelining; Valkey
// too. For valkey-go, Valkey's fork of rueidis, module uncomplicatedvalkey
// is this one with its names.
//
//	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"localhost:6379"}, PipelineMultiplex: -1})
//	locks := uncomplicatedrueidis.NewClient(c) // import "github.com/uncomplicated-mutex/uncomplicated/uncomplicatedrueidis"
//	defer locks.Close()
//	m, err := uncomplicated.New(locks, order)
//
// Concurrent calls share rueidis's pipelining connections, many commands
// to one write and one read on the socket: the cheapest way to Redis for
// many locks at once. rueidis opens 4 of them to a single node or a
// Sentinel master unless told otherwise; PipelineMultiplex: -1, as above,
// makes it one, which on the benchmark's many-locks workload costs Redis
// about a fifth less CPU per lock. Hand-offs are heard on those
// connections too (RESP3 pub/sub), sharded on a Cluster, so a Client keeps
// no connection of its own to listen.
package uncomplicatedrueidis

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

// KeepsConnectionsOnCancel tells the Client that a call whose ctx ends
// keeps its connection: rueidis discards the reply of a pipelined command
// whose ctx ended, on a connection it shares (see package driver).
func (*rueidisDriver) KeepsConnectionsOnCancel() {}

// Eval runs EVALSHA, and EVAL when Redis does not have the script. rueidis
// sends a script once: it retries only read-only commands.
func (d *rueidisDriver) Eval(ctx context.Context, s *driver.Script, keys []string, args []any) (any, error) {
	argv := strs(args)
	ctx = shared(ctx)
	reply, err := replyOf(d.c.Do(ctx, d.c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()))
	if noScript(err) {
		reply, err = replyOf(d.c.Do(ctx, d.c.B().Eval().Script(s.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()))
	}
	return reply, err
}

// EvalWait runs the script and WAIT on one dedicated connection: on a
// Cluster, to the master of the keys' slot. A dedicated connection does
// not follow MOVED: after one, it runs once more on the node it names.
func (d *rueidisDriver) EvalWait(ctx context.Context, s *driver.Script, keys []string, args []any, replicas int, timeout time.Duration) (any, int64, error) {
	argv := strs(args)
	run := func(dc rueidis.DedicatedClient) (any, int64, error) {
		wait := func() rueidis.Completed {
			return dc.B().Wait().Numreplicas(int64(replicas)).Timeout(timeout.Milliseconds()).Build()
		}
		res := dc.DoMulti(ctx, dc.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build(), wait())
		r, err := replyOf(res[0])
		if noScript(err) {
			res = dc.DoMulti(ctx, dc.B().Eval().Script(s.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build(), wait())
			r, err = replyOf(res[0])
		}
		if err != nil {
			return nil, 0, err
		}
		w, err := replyOf(res[1])
		acked, _ := w.(int64)
		return r, acked, err
	}
	r, acked, err := dedicated(ctx, d.c, run)
	if node := d.movedTo(err); node != nil {
		r, acked, err = dedicated(ctx, node, run)
	}
	return r, acked, err
}

// shared hides from rueidis a deadline of ctx less than nearDeadline
// away, which ends ctx all the same: a command with a deadline that finds
// its connection idle has rueidis set the deadline on the socket that every
// call shares, and one that passes closes it, failing the calls of other
// goroutines (a release made with context.Background() among them) and
// dialling again under what is left of that ctx. Without one, rueidis
// queues the command and, if ctx ends first, discards its reply and keeps
// the connection. A deadline further off keeps rueidis's quicker way: only
// a server stalled that long would see it pass.
func shared(ctx context.Context) context.Context {
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) >= nearDeadline {
		return ctx
	}
	return noDeadline{ctx}
}

// nearDeadline is how soon a deadline is hidden from rueidis (see shared).
const nearDeadline = time.Second

// noDeadline is a ctx without its deadline (see shared).
type noDeadline struct{ context.Context }

func (noDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }

// dedicated runs fn on a dedicated connection of c and returns what fn
// returns, or once ctx ends: rueidis takes a connection of a single
// node's pool without regard to ctx, and the call then goes on in the
// background until it has one.
func dedicated(ctx context.Context, c rueidis.Client, fn func(rueidis.DedicatedClient) (any, int64, error)) (any, int64, error) {
	type result struct {
		reply any
		n     int64
		err   error
	}
	call := func() result {
		var res result
		err := c.Dedicated(func(dc rueidis.DedicatedClient) error {
			res.reply, res.n, res.err = fn(dc)
			return res.err
		})
		if res.err == nil {
			res.err = err
		}
		return res
	}
	if ctx.Done() == nil {
		res := call()
		return res.reply, res.n, res.err
	}
	done := make(chan result, 1)
	go func() { done <- call() }()
	select {
	case res := <-done:
		return res.reply, res.n, res.err
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

// movedTo returns the client of the node that a MOVED or ASK names, when
// err is one and rueidis knows the node; else nil.
func (d *rueidisDriver) movedTo(err error) rueidis.Client {
	var re replyError
	if !d.cluster || !errors.As(err, &re) {
		return nil
	}
	addr, ok := re.err.IsMoved()
	if !ok {
		if addr, ok = re.err.IsAsk(); !ok {
			return nil
		}
	}
	return d.c.Nodes()[addr]
}

// Do runs one command: routed by keys[0] when it is the command's first
// argument, and otherwise (INFO, SCAN about a node) on a dedicated
// connection that a read of keys[0] took to its master, or to the node a
// MOVED of that read names.
func (d *rueidisDriver) Do(ctx context.Context, keys []string, cmd string, args ...any) (any, error) {
	argv := strs(args)
	switch {
	case len(keys) > 0 && len(argv) > 0 && argv[0] == keys[0]:
		return replyOf(d.c.Do(shared(ctx), d.c.B().Arbitrary(cmd).Keys(keys[0]).Args(argv[1:]...).Build()))
	case len(keys) == 0 || !d.cluster:
		return replyOf(d.c.Do(shared(ctx), d.c.B().Arbitrary(cmd).Args(argv...).Build()))
	}
	run := func(dc rueidis.DedicatedClient) (any, int64, error) {
		res := dc.DoMulti(ctx, dc.B().Exists().Key(keys[0]).Build(), dc.B().Arbitrary(cmd).Args(argv...).Build())
		if _, err := replyOf(res[0]); err != nil {
			return nil, 0, err // the key's node is not this one: a slot moved
		}
		r, err := replyOf(res[1])
		return r, 0, err
	}
	r, _, err := dedicated(ctx, d.c, run)
	if node := d.movedTo(err); node != nil {
		r, _, err = dedicated(ctx, node, run)
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
