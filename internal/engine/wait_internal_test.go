package engine

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A queued waiter's attempts each write its entry with their number, and
// so does a take-over that finds the lock taken after all: a hand-off of
// an older entry came before that attempt, and is not trusted.
func TestWaiter_takeOverWritesTheEntry(t *testing.T) {
	mr := miniredis.RunT(t)
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	c := NewClient(redigo.New(pool))
	t.Cleanup(func() { _ = c.Close() })
	m, err := New(c, wire.Named("taken"))
	if err != nil {
		t.Fatal(err)
	}
	rw, err := NewRW(c, wire.Named("taken"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSemaphore(c, wire.Named("taken"), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		b       *base
		c       *spec
		holder  func() // makes another, live holder take the lock
		stale   []string
		entries string // the queue's entries
	}{
		{"Mutex", &m.base, m.x.spec, func() { mr.Set(m.Name(), "other 5") }, []string{wire.WriterMark + "old"}, m.x.spec.keys[2]},
		{"RWMutex", &rw.base, rw.x.spec, func() { mr.Set(rw.x.spec.keys[0], "other 5") }, []string{wire.WriterMark + "old"}, rw.x.spec.keys[4]},
		{"Semaphore", &s.base, s.spec, func() { _, _ = mr.ZAdd(s.spec.keys[0], 1e15, "other") }, []string{"old"}, s.spec.keys[3]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.holder()
			w := waiter{b: tc.b, c: tc.c, token: "waiter", inQueue: true, entries: 1}
			first := wire.QueueEntry(tc.c.entry, w.b.cfg.Claim(), w.b.cfg.Expiry(), 1, tc.c.channel)
			mr.HSet(tc.entries, "waiter", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)+" "+first)
			g, err := w.attempt(context.Background(), tc.stale)
			if err != nil || g.OK {
				t.Fatalf("take-over = %+v, %v; want blocked by the other holder", g, err)
			}
			_, entry, _ := strings.Cut(mr.HGet(tc.entries, "waiter"), " ")
			if fields := strings.Fields(entry); w.entries != 2 || len(fields) != 5 || fields[3] != "2" {
				t.Errorf("after the take-over: entries %d, entry %q; want 2, and the entry of attempt 2", w.entries, entry)
			}
			if w.handedOver(wire.WakeUp{Fence: 9, Attempt: 1}, c.settings().Clock.Now()) {
				t.Error("a hand-off of the entry before the take-over was trusted")
			}
		})
	}
}
