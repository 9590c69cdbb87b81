package redigo

import (
	"context"
	"errors"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// The events of a listening connection, as redigo reads them.
func TestPubSubEvent(t *testing.T) {
	for _, tc := range []struct {
		reply any
		want  driver.Event
		err   bool
	}{
		{"PONG", driver.Event{}, false},
		{[]any{[]byte("pong"), []byte("")}, driver.Event{}, false},
		{[]any{[]byte("message"), []byte("c"), []byte("t 2")}, driver.Event{Kind: driver.EventMessage, Channel: "c", Data: []byte("t 2")}, false},
		{[]any{[]byte("smessage"), []byte("c"), []byte("t 2")}, driver.Event{Kind: driver.EventMessage, Channel: "c", Data: []byte("t 2")}, false},
		{[]any{[]byte("subscribe"), []byte("c"), int64(1)}, driver.Event{Kind: driver.EventSubscribed, Channel: "c"}, false},
		{[]any{[]byte("ssubscribe"), []byte("c"), int64(1)}, driver.Event{Kind: driver.EventSubscribed, Channel: "c"}, false},
		{[]any{[]byte("unsubscribe"), []byte("c"), int64(0)}, driver.Event{Kind: driver.EventUnsubscribed, Channel: "c"}, false},
		{[]any{[]byte("sunsubscribe"), []byte("c"), int64(0)}, driver.Event{Kind: driver.EventUnsubscribed, Channel: "c"}, false},
		{[]any{[]byte("pmessage"), []byte("p"), []byte("c"), []byte("x")}, driver.Event{}, true},
		{[]any{[]byte("sunsubscribe"), nil, int64(0)}, driver.Event{}, true},
		{[]any{[]byte("message")}, driver.Event{}, true},
		{int64(3), driver.Event{}, true},
		{nil, driver.Event{}, true},
	} {
		got, err := pubSubEvent(tc.reply)
		if (err != nil) != tc.err || got.Kind != tc.want.Kind || got.Channel != tc.want.Channel || string(got.Data) != string(tc.want.Data) {
			t.Errorf("pubSubEvent(%v) = %+v, %v; want %+v, error %v", tc.reply, got, err, tc.want, tc.err)
		}
		if tc.err && !errors.Is(err, driver.ErrUnexpectedReply) {
			t.Errorf("pubSubEvent(%v) = %v; want driver.ErrUnexpectedReply", tc.reply, err)
		}
	}
}

// The redigo driver ends a listening connection rather than give it back
// to the pool: redigo would hand it out still subscribed.
func TestRedigoSub_closeEndsConnection(t *testing.T) {
	srv := miniredis.RunT(t)
	pool := &redis.Pool{MaxIdle: 4, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", srv.Addr()) }}
	defer pool.Close()
	sub, err := New(pool).Listen(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	sub.Subscribe("c")
	sub.Close()
	if n := pool.IdleCount(); n != 0 {
		t.Errorf("%d idle connections after Close; want the listening one dropped", n)
	}
}

// A pool with no connection left says why when one of its connections
// listens for hand-offs, and not otherwise.
func TestExplainPool(t *testing.T) {
	srv := miniredis.RunT(t)
	pool := &redis.Pool{MaxActive: 2, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", srv.Addr()) }}
	defer pool.Close()
	d := New(pool).(*redigoDriver)
	if err := d.explainPool(redis.ErrPoolExhausted); err != redis.ErrPoolExhausted {
		t.Errorf("explainPool with nothing listening = %v; want the pool's error alone", err)
	}
	sub, err := d.Listen(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	err = d.explainPool(redis.ErrPoolExhausted)
	if !errors.Is(err, redis.ErrPoolExhausted) || err == redis.ErrPoolExhausted {
		t.Errorf("explainPool while listening = %v; want the pool's error, explained", err)
	}
	sub.Close()
	sub.Close()
	if err := d.explainPool(redis.ErrPoolExhausted); err != redis.ErrPoolExhausted {
		t.Errorf("explainPool after Close = %v; want the pool's error alone", err)
	}
}

// New of a nil pool, typed or not, is a nil driver, which the Client's
// locks report.
func TestNew_nil(t *testing.T) {
	if d := New(nil); d != nil {
		t.Errorf("New(nil) = %v; want nil", d)
	}
	if d := New((*redis.Pool)(nil)); d != nil {
		t.Errorf("New((*redis.Pool)(nil)) = %v; want nil", d)
	}
}

// A *redis.Pool tells the Client how many connections it keeps for its
// calls: MaxActive, or MaxIdle when unbounded, less the one that listens;
// none when it keeps none, or when MaxActive is 1 and the Client never
// listens.
func TestConnections(t *testing.T) {
	for _, tc := range []struct{ maxIdle, maxActive, want int }{
		{0, 0, 0}, {16, 1, 0}, {0, 2, 1}, {128, 128, 127}, {16, 64, 63}, {128, 0, 127}, {1, 0, 0},
	} {
		d := New(&redis.Pool{MaxIdle: tc.maxIdle, MaxActive: tc.maxActive}).(interface{ Connections() int })
		if got := d.Connections(); got != tc.want {
			t.Errorf("Connections() with MaxIdle %d, MaxActive %d = %d; want %d", tc.maxIdle, tc.maxActive, got, tc.want)
		}
	}
}
