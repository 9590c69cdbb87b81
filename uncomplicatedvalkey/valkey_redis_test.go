// Code generated from ../uncomplicatedrueidis/rueidis_redis_test.go by fromrueidis_test.go; DO NOT EDIT.

package uncomplicatedvalkey_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey"
	"github.com/valkey-io/valkey-go"
)

// A command about a key's node (INFO, as the restart watch sends it)
// reaches the node that owns the key's slot after the slot moved, though
// valkey-go has not yet learnt the move: the MOVED names the node.
func TestDo_nodeOfKeyAfterMove(t *testing.T) {
	cl := redistest.StartCluster(t, 2, 0)
	c := valkeyClient(t, valkey.ClientOption{InitAddress: cl.Addrs()})
	d := uncomplicatedvalkey.NewDriver(c)
	const key = "lock:moving"
	runIDOf := func(addr string) string {
		conn, err := redis.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		info, err := redis.String(conn.Do("INFO", "server"))
		if err != nil {
			t.Fatal(err)
		}
		return runID(info)
	}
	for range 2 {
		owner, err := cl.MasterOf(redistest.Slot(key))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Do(context.Background(), []string{key}, "INFO", "server"); err != nil { // valkey-go learns the owner
			t.Fatal(err)
		}
		other := cl.Masters[0]
		if other == owner {
			other = cl.Masters[1]
		}
		if err := cl.MoveSlot(redistest.Slot(key), other); err != nil {
			t.Fatal(err)
		}
		reply, err := d.Do(context.Background(), []string{key}, "INFO", "server")
		if err != nil {
			t.Fatalf("INFO about %s after its slot moved: %v", key, err)
		}
		info, _ := reply.([]byte)
		if got, want := runID(string(info)), runIDOf(other.Addr); got != want {
			t.Fatalf("INFO about %s reached run_id %s; want the new owner's %s", key, got, want)
		}
	}
}

// runID reads the run_id of an INFO server reply.
func runID(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id
		}
	}
	return ""
}

// Replies read as package driver has them: INFO's verbatim string without
// its format, and an error inside an array as an error reply of Redis.
func TestReplyShapes(t *testing.T) {
	srv := redistest.Shared(t)
	d := uncomplicatedvalkey.NewDriver(valkeyClient(t, valkey.ClientOption{InitAddress: []string{srv.Addr}}))
	ctx := context.Background()
	reply, err := d.Do(ctx, nil, "INFO", "server")
	info, _ := reply.([]byte)
	if err != nil || !strings.HasPrefix(string(info), "# Server") {
		t.Errorf("INFO server = %.20q, %v; want it to begin with # Server", info, err)
	}
	s := driver.NewScript(0, `return {1, 'two', false, redis.error_reply('ERR boom'), {3}}`)
	reply, err = d.Eval(ctx, s, nil, nil)
	r, _ := reply.([]any)
	if err != nil || len(r) != 5 {
		t.Fatalf("Eval = %#v, %v; want 5 elements", reply, err)
	}
	if r[0] != int64(1) || string(r[1].([]byte)) != "two" || r[2] != nil {
		t.Errorf("Eval = %#v; want 1, two, nil first", r)
	}
	var re interface{ RedisError() }
	if e, ok := r[3].(error); !ok || !errors.As(e, &re) || !strings.Contains(e.Error(), "boom") {
		t.Errorf("element 3 = %#v; want an error reply of Redis", r[3])
	}
	if inner, _ := r[4].([]any); len(inner) != 1 || inner[0] != int64(3) {
		t.Errorf("element 4 = %#v; want [3]", r[4])
	}
}
