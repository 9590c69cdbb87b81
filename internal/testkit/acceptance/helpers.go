package acceptance

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/orders"
)

var prefixes atomic.Int64

// rig is a test's corner of the deployment: a prefix of its own, so that
// tests never meet each other's locks, and raw commands for checks.
type rig struct {
	t      *testing.T
	d      Deployment
	prefix string
}

func newRig(t *testing.T, d Deployment) *rig {
	return &rig{t: t, d: d, prefix: fmt.Sprintf("acceptance%d", prefixes.Add(1))}
}

// client returns a Client with opts, as one process would have, closed at
// cleanup.
func (r *rig) client(opts ...uncomplicated.Option) *uncomplicated.Client {
	c := r.d.NewClient(r.t, append([]uncomplicated.Option{uncomplicated.WithPrefix(r.prefix)}, opts...)...)
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// key is the key that a lock named name keeps its part in, such as
// <prefix>:queue:{<name>}.
func (r *rig) key(part, name string) string {
	return r.prefix + ":" + part + ":{" + name + "}"
}

// try runs cmd on the node of key. Other goroutines than the test's use it,
// as they must not fail the test.
func (r *rig) try(key, cmd string, args ...any) (any, error) {
	return r.d.Do(r.t, key, cmd, args...)
}

// do runs cmd on the node of key, failing the test on error.
func (r *rig) do(key, cmd string, args ...any) any {
	r.t.Helper()
	reply, err := r.try(key, cmd, args...)
	if err != nil {
		r.t.Fatalf("%s: %s %s: %v", r.d.Name, cmd, key, err)
	}
	return reply
}

// number runs cmd on the node of key and returns its integer reply, failing
// the test on error.
func (r *rig) number(key, cmd string, args ...any) int64 {
	r.t.Helper()
	n, err := number(r.try(key, cmd, args...))
	if err != nil {
		r.t.Fatalf("%s: %s %s: %v", r.d.Name, cmd, key, err)
	}
	return n
}

// text runs cmd on the node of key and returns its string reply, failing
// the test on error.
func (r *rig) text(key, cmd string, args ...any) string {
	r.t.Helper()
	s, err := text(r.try(key, cmd, args...))
	if err != nil {
		r.t.Fatalf("%s: %s %s: %v", r.d.Name, cmd, key, err)
	}
	return s
}

// texts runs cmd on the node of key and returns its array reply, flattened,
// as strings, failing the test on error.
func (r *rig) texts(key, cmd string, args ...any) []string {
	r.t.Helper()
	ss, err := texts(r.try(key, cmd, args...))
	if err != nil {
		r.t.Fatalf("%s: %s %s: %v", r.d.Name, cmd, key, err)
	}
	return ss
}

// clock returns Redis's clock on the node of key, in microseconds (TIME):
// what every new fence reaches.
func (r *rig) clock(key string) uint64 {
	r.t.Helper()
	ts := r.texts(key, "TIME")
	s, _ := strconv.ParseUint(ts[0], 10, 64)
	us, _ := strconv.ParseUint(ts[1], 10, 64)
	return s*1_000_000 + us
}

// leftovers returns the keys that Redis has of the lock name, of any kind:
// the key name itself and those holding {name}, all on name's node.
func (r *rig) leftovers(name string) []string {
	r.t.Helper()
	keys := r.texts(name, "KEYS", "*"+name+"*")
	slices.Sort(keys)
	return keys
}

// llen is the length of the list at key.
func (r *rig) llen(key string) int {
	r.t.Helper()
	return int(r.number(key, "LLEN", key))
}

// number reads an integer reply, or a bulk string that holds one.
func number(reply any, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	switch v := reply.(type) {
	case int64:
		return v, nil
	case []byte, string:
		s, _ := text(v, nil)
		return strconv.ParseInt(s, 10, 64)
	}
	return 0, fmt.Errorf("reply %#v is not an integer", reply)
}

// text reads a bulk or simple string reply, or a number as Redis would
// print it.
func text(reply any, err error) (string, error) {
	if err != nil {
		return "", err
	}
	switch v := reply.(type) {
	case []byte:
		return string(v), nil
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64: // a RESP3 double
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("reply %#v is not a string", reply)
}

// texts reads an array reply as strings, flattening nested arrays: a RESP2
// ZRANGE WITHSCORES and a RESP3 one, whose pairs are arrays of their own,
// read alike.
func texts(reply any, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	items, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("reply %#v is not an array", reply)
	}
	var ss []string
	for _, item := range items {
		if _, nested := item.([]any); nested {
			more, err := texts(item, nil)
			if err != nil {
				return nil, err
			}
			ss = append(ss, more...)
			continue
		}
		s, err := text(item, nil)
		if err != nil {
			return nil, err
		}
		ss = append(ss, s)
	}
	return ss, nil
}

// eventually polls cond for up to ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: not %s", what)
		}
	}
}

// recv receives from ch, failing the test if nothing comes within ten
// seconds: a regression shows as a failure, not as a hung test.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing received after 10s")
		panic("unreachable")
	}
}

// mustNew returns the Mutex of obj or fails the test.
func mustNew(t *testing.T, c *uncomplicated.Client, obj orders.Order, opts ...uncomplicated.Option) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(c, obj, opts...)
	if err != nil {
		t.Fatalf("New(%v) = %v", obj, err)
	}
	return m
}

// mustLock locks m, which must be free, or fails the test within ten
// seconds.
func mustLock(t *testing.T, m *uncomplicated.Mutex) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock(%s) = %v", m.Name(), err)
	}
}

// mustNamedSemaphore returns the Semaphore name of permits or fails the test.
func mustNamedSemaphore(t *testing.T, c *uncomplicated.Client, name string, permits int) *uncomplicated.Semaphore {
	t.Helper()
	s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(name), permits)
	if err != nil {
		t.Fatalf("NewSemaphore(Named(%q), %d) = %v", name, permits, err)
	}
	return s
}
