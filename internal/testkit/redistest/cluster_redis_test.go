package redistest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

func TestSlot(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, 0)
	for _, key := range []string{
		"", "a", "foo", "123456789", "user:1000", "{user1000}.following", "foo{bar}baz",
		"{}x", "x{}y", "{a}{b}", "{{a}}", "a{b", "a}b{c}", "lock:{orders}:queue", "ünï",
	} {
		got := Slot(key)
		want, err := redis.Int(c.Masters[0].do("CLUSTER", "KEYSLOT", key))
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", key, err)
		}
		if got != want {
			t.Errorf("Slot(%q) = %d; want %d", key, got, want)
		}
	}
}

func TestCluster_MoveSlot(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, 0)
	const tag = "{moved}"
	slot := Slot(tag)
	from := c.firstMaster(slot)
	if got, err := c.MasterOf(slot); got != from || err != nil {
		t.Fatalf("MasterOf(%d) = %v, %v; want %s", slot, got, err, from.Addr)
	}
	for i := range 150 { // more than one MIGRATE batch
		from.Do(t, "SET", fmt.Sprint(tag, i), i)
	}
	sub := ssubscribe(t, from, tag+"ch")
	to := c.Masters[(slices.Index(c.Masters, from)+1)%len(c.Masters)]

	start := time.Now()
	if err := c.MoveSlot(slot, to); err != nil {
		t.Fatal(err)
	}
	t.Logf("MoveSlot of 150 keys took %v", time.Since(start))

	if got, err := c.MasterOf(slot); got != to || err != nil {
		t.Errorf("MasterOf(%d) = %v, %v; want %s", slot, got, err, to.Addr)
	}
	for _, n := range c.nodes() {
		owners, err := slotOwners(n)
		if err != nil {
			t.Fatal(err)
		}
		if owners[slot] != to.Addr {
			t.Errorf("%s: CLUSTER SLOTS gives slot %d to %s; want %s", n.Addr, slot, owners[slot], to.Addr)
		}
	}
	for _, tc := range []struct {
		s    *Server
		want int
	}{{from, 0}, {to, 150}} {
		if got := tc.s.Do(t, "CLUSTER", "COUNTKEYSINSLOT", slot); got != int64(tc.want) {
			t.Errorf("%s: CLUSTER COUNTKEYSINSLOT %d = %v; want %d", tc.s.Addr, slot, got, tc.want)
		}
	}
	if got, err := redis.Int(to.Do(t, "GET", tag+"149"), nil); got != 149 || err != nil {
		t.Errorf("GET %s149 = %v, %v; want 149", tag, got, err)
	}

	// The source unsubscribes its sharded subscribers when the slot leaves.
	reply, err := redis.ReceiveWithTimeout(sub, time.Second)
	if got, _ := redis.Values(reply, err); len(got) != 3 || string(got[0].([]byte)) != "sunsubscribe" {
		t.Errorf("sharded subscriber got %q, %v; want a sunsubscribe", reply, err)
	}
}

// ssubscribe returns a connection to s subscribed to sharded channel ch.
func ssubscribe(t *testing.T, s *Server, ch string) redis.Conn {
	t.Helper()
	conn, err := s.dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Send("SSUBSCRIBE", ch); err != nil {
		t.Fatal(err)
	}
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	if reply, err := redis.Values(conn.Receive()); err != nil || string(reply[0].([]byte)) != "ssubscribe" {
		t.Fatalf("SSUBSCRIBE %s = %q, %v", ch, reply, err)
	}
	return conn
}

func TestCluster_Failover(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, 1)
	old, replica := c.Masters[1], c.Replicas[1]
	slot := slots / 2
	start := time.Now()
	if err := c.Failover(replica); err != nil {
		t.Fatal(err)
	}
	t.Logf("Failover took %v", time.Since(start))
	if got, err := c.MasterOf(slot); got != replica || err != nil {
		t.Errorf("MasterOf(%d) = %v, %v; want %s", slot, got, err, replica.Addr)
	}
	if got := old.role(); got != "slave" {
		t.Errorf("old master's role = %q; want slave", got)
	}

	// MoveSlot sends SETSLOT to the masters now, not to Masters.
	if err := c.MoveSlot(slot, c.Masters[0]); err != nil {
		t.Fatal(err)
	}
	if got, err := c.MasterOf(slot); got != c.Masters[0] || err != nil {
		t.Errorf("MasterOf(%d) = %v, %v; want %s", slot, got, err, c.Masters[0].Addr)
	}
}

func TestCluster_Kill(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, 1)
	old, replica := c.Masters[0], c.Replicas[0]
	start := time.Now()
	old.Kill()
	err := await(clusterWait, nil, func() error {
		if got, err := c.MasterOf(0); got != replica {
			return fmt.Errorf("MasterOf(0) = %v, %v; want %s", got, err, replica.Addr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the replica took over %v after the kill", time.Since(start))

	// Revived, the old master rejoins with its nodes.conf as a replica.
	if err := old.Revive(); err != nil {
		t.Fatal(err)
	}
	if err := await(clusterWait, nil, func() error { return c.seeReplica(old, replica) }); err != nil {
		t.Fatal(err)
	}
	if err := await(clusterWait, nil, func() error { return linkUp(old) }); err != nil {
		t.Fatal(err)
	}
	if err := old.Revive(); err == nil {
		t.Errorf("Revive() of a running server = nil; want an error")
	}
}
