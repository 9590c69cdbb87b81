package redistest

import (
	"net"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// checkShift checks that the server's TIME is shift off the real clock,
// give or take the round trip and 50 ms.
func checkShift(t *testing.T, s *Server, shift time.Duration) {
	t.Helper()
	before := time.Now()
	reply, err := redis.Int64s(s.do("TIME"))
	took := time.Since(before)
	if err != nil || len(reply) != 2 {
		t.Fatalf("%s: TIME = %v, %v; want seconds and microseconds", s.Addr, reply, err)
	}
	off := time.Unix(reply[0], reply[1]*1000).Sub(before.Add(took / 2))
	if slack := took/2 + 50*time.Millisecond; off < shift-slack || off > shift+slack {
		t.Errorf("%s: TIME is %v off the real clock; want %v", s.Addr, off, shift)
	}
}

func TestStartShifted_TIME(t *testing.T) {
	t.Parallel()
	for _, shift := range []time.Duration{5 * time.Second, -5 * time.Second} {
		s := StartShifted(t, shift)
		checkShift(t, s, shift)
		// Otherwise a normal server.
		if reply := s.Do(t, "SET", "k", "v"); reply != "OK" {
			t.Errorf("shifted %v: SET = %v; want OK", shift, reply)
		}
		if got, err := redis.String(s.Do(t, "GET", "k"), nil); got != "v" || err != nil {
			t.Errorf("shifted %v: GET = %q, %v; want v", shift, got, err)
		}
	}
}

// An unshifted server answers TIME on the real clock: the shim is only
// loaded by StartShifted, and a zero shift changes nothing.
func TestStartShifted_zero(t *testing.T) {
	t.Parallel()
	for _, s := range []*Server{Start(t), StartShifted(t, 0)} {
		checkShift(t, s, 0)
	}
}

// SHUTDOWN and Restart work under the shim: it does not hang a server on
// its way down or up, as libfaketime does.
func TestStartShifted_shutdownRestart(t *testing.T) {
	t.Parallel()
	const shift = -5 * time.Second
	s := StartShifted(t, shift)
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart() = %v; want nil", err)
	}
	checkShift(t, s, shift)
	c, err := s.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do("SHUTDOWN", "NOSAVE"); err == nil {
		t.Errorf("SHUTDOWN NOSAVE = nil; want the connection closed")
	}
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("SHUTDOWN NOSAVE: still running after 5s; log:\n%s", s.log())
	}
}

// Redis 7 replicates SET's PX as an absolute PXAT, so that a replica whose
// clock is ahead keeps the master's expiry time and counts down from its
// own clock: its PTTL is shorter by the shift, and a key with less time
// left than the shift is already gone there.
func TestStartShifted_replicaExpiresEarly(t *testing.T) {
	t.Parallel()
	const shift = 5 * time.Second
	master := Start(t, "--repl-diskless-sync-delay", "0")
	host, port, _ := net.SplitHostPort(master.Addr)
	replica := StartShifted(t, shift, "--repl-diskless-sync-delay", "0", "--replicaof", host, port)
	if err := await(10*time.Second, nil, func() error { return linkUp(replica) }); err != nil {
		t.Fatalf("replica: %v; logs:\n%s", err, logs([]*Server{master, replica}))
	}
	// WAIT on the connection that wrote: it waits for that connection's
	// writes only.
	c, err := master.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, set := range []struct {
		key string
		px  int
	}{{"long", 10000}, {"short", 4000}} { // short: under the shift
		if _, err := c.Do("SET", set.key, "v", "PX", set.px); err != nil {
			t.Fatalf("SET %s: %v", set.key, err)
		}
	}
	if n, err := redis.Int(c.Do("WAIT", 1, 5000)); n != 1 || err != nil {
		t.Fatalf("WAIT 1 = %d, %v; want 1", n, err)
	}

	mAt, err1 := redis.Int64(master.Do(t, "PEXPIRETIME", "long"), nil)
	rAt, err2 := redis.Int64(replica.Do(t, "PEXPIRETIME", "long"), nil)
	if mAt <= 0 || rAt != mAt || err1 != nil || err2 != nil {
		t.Errorf("PEXPIRETIME long: master %d, %v; replica %d, %v; want equal; logs:\n%s", mAt, err1, rAt, err2, logs([]*Server{master, replica}))
	}
	mTTL, err1 := redis.Int64(master.Do(t, "PTTL", "long"), nil)
	rTTL, err2 := redis.Int64(replica.Do(t, "PTTL", "long"), nil)
	if err1 != nil || err2 != nil {
		t.Fatalf("PTTL long: master %v; replica %v", err1, err2)
	}
	// The replica's PTTL is read after the master's: a little more than
	// the shift shorter.
	if d := time.Duration(mTTL-rTTL) * time.Millisecond; d < shift || d > shift+time.Second {
		t.Errorf("PTTL long: master %d ms, replica %d ms; want the replica's %v shorter", mTTL, rTTL, shift)
	}
	if got, err := redis.String(replica.Do(t, "GET", "long"), nil); got != "v" || err != nil {
		t.Errorf("replica: GET long = %q, %v; want v", got, err)
	}

	if got, err := redis.String(master.Do(t, "GET", "short"), nil); got != "v" || err != nil {
		t.Errorf("master: GET short = %q, %v; want v", got, err)
	}
	if got := replica.Do(t, "GET", "short"); got != nil {
		t.Errorf("replica: GET short = %q; want nil, expired on its clock", got)
	}
	if got := replica.Do(t, "PTTL", "short"); got != int64(-2) {
		t.Errorf("replica: PTTL short = %v; want -2", got)
	}
}
