// Code generated from ../uncomplicatedrueidis/listen_redis_test.go by fromrueidis_test.go; DO NOT EDIT.

package uncomplicatedvalkey_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/valkey-io/valkey-go"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey"
)

// A Subscription confirms each Subscribe and each Unsubscribe once, in
// order, as a connection of its own would, and leaves Redis subscribed
// exactly to what it was last asked: also when an Unsubscribe comes before
// Redis confirmed the Subscribe, or a Subscribe right after an
// Unsubscribe; Close leaves every channel.
func TestSubscription_confirmsEachCommand(t *testing.T) {
	srv := redistest.Shared(t)
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprintf("sharded=%v", sharded), func(t *testing.T) {
			c := valkeyClient(t, valkey.ClientOption{InitAddress: []string{srv.Addr}})
			sub, err := uncomplicatedvalkey.NewDriver(c).Listen(context.Background(), sharded)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := redis.Dial("tcp", srv.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			prefix := fmt.Sprintf("sub%v-", sharded)
			subscribers := func(channel string) int64 {
				numsub := "NUMSUB"
				if sharded {
					numsub = "SHARDNUMSUB"
				}
				r, err := redis.Values(conn.Do("PUBSUB", numsub, channel))
				if err != nil || len(r) != 2 {
					t.Fatalf("PUBSUB %s %s = %v, %v", numsub, channel, r, err)
				}
				n, _ := redis.Int64(r[1], nil)
				return n
			}
			publish := func(channel, msg string) {
				cmd := "PUBLISH"
				if sharded {
					cmd = "SPUBLISH"
				}
				if _, err := conn.Do(cmd, channel, msg); err != nil {
					t.Fatal(err)
				}
			}
			expect := func(kind driver.EventKind, channel string) driver.Event {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				e, err := sub.Receive(ctx)
				if err != nil || e.Kind != kind || e.Channel != channel {
					t.Fatalf("Receive() = %+v, %v; want kind %d on %s", e, err, kind, channel)
				}
				return e
			}
			eventually := func(what string, cond func() bool) {
				t.Helper()
				for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%s: not within 5s", what)
					}
				}
			}

			a, b, c3 := prefix+"a", prefix+"b", prefix+"c"
			sub.Subscribe(a)
			expect(driver.EventSubscribed, a)
			if n := subscribers(a); n != 1 {
				t.Fatalf("%s has %d subscribers after its confirmation; want 1", a, n)
			}
			publish(a, "hello")
			if e := expect(driver.EventMessage, a); string(e.Data) != "hello" {
				t.Errorf("message on %s = %q; want hello", a, e.Data)
			}
			sub.Unsubscribe(a)
			expect(driver.EventUnsubscribed, a)
			eventually(a+" left on the server", func() bool { return subscribers(a) == 0 })

			sub.Subscribe(b) // and at once:
			sub.Unsubscribe(b)
			expect(driver.EventSubscribed, b)
			expect(driver.EventUnsubscribed, b)
			eventually(b+" left on the server", func() bool { return subscribers(b) == 0 })

			sub.Subscribe(c3)
			sub.Unsubscribe(c3)
			sub.Subscribe(c3)
			expect(driver.EventSubscribed, c3)
			expect(driver.EventUnsubscribed, c3)
			expect(driver.EventSubscribed, c3)
			eventually(c3+" subscribed once more", func() bool { return subscribers(c3) == 1 })
			publish(c3, "again")
			if e := expect(driver.EventMessage, c3); string(e.Data) != "again" {
				t.Errorf("message on %s = %q; want again", c3, e.Data)
			}

			sub.Close()
			eventually(c3+" left after Close", func() bool { return subscribers(c3) == 0 })
		})
	}
}

// A listening connection that breaks fails the Subscription, though valkey-go
// subscribes again on a new one: what was published in between is lost,
// and the Client must open another Subscription to know it listens.
func TestSubscription_brokenConnectionFails(t *testing.T) {
	srv := redistest.Shared(t)
	c := valkeyClient(t, valkey.ClientOption{InitAddress: []string{srv.Addr}})
	sub, err := uncomplicatedvalkey.NewDriver(c).Listen(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sub.Subscribe("broken")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if e, err := sub.Receive(ctx); err != nil || e.Kind != driver.EventSubscribed {
		t.Fatalf("Receive() = %+v, %v; want the subscription", e, err)
	}
	conn, err := redis.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	for {
		e, err := sub.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatal("Receive() still without an error 10s after the connection was killed")
			}
			return
		}
		t.Logf("event %+v before the failure", e)
	}
}
