package uncomplicated

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The RWMutex's and the Semaphore's scripts, run directly on miniredis and
// on a real server.

// rwKeys are the KEYS of rwLockScript and rwRLockScript in these tests.
var rwKeys = []any{"w", "r", "q", "f", "rq", "turn"}

// members returns the members of a sorted set.
func members(t *testing.T, conn redis.Conn, key string) []string {
	t.Helper()
	m, err := redis.Strings(conn.Do("ZRANGE", key, 0, -1))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// later is a score an hour from now, in milliseconds.
func later() string { return strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10) }

// A writer's take-over evicts exactly the blockers it saw, and nothing
// when another holder has come in meanwhile.
func TestRWLockScript_takeOver(t *testing.T) {
	cases := []struct {
		name    string
		writer  string   // the writer before
		readers []string // the readers before
		seenW   string
		seen    []string
		ok      bool
		after   []string // the readers after
	}{
		{"the readers it saw", "", []string{"a", "b"}, "", []string{"a", "b"}, true, nil},
		{"fewer than it saw", "", []string{"a"}, "", []string{"a", "b"}, true, nil},
		{"a reader it did not see", "", []string{"a", "c"}, "", []string{"a"}, false, []string{"a", "c"}},
		{"the writer it saw", "old", nil, "old", nil, true, nil},
		{"another writer", "other", nil, "old", nil, false, nil},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				if tc.writer != "" {
					must(t, conn, "SET", "w", tc.writer)
				}
				for _, r := range tc.readers {
					must(t, conn, "ZADD", "r", later(), r)
				}
				args := append(append([]any{}, rwKeys...), "new", 0, 100, "x", tc.seenW)
				for _, s := range tc.seen {
					args = append(args, s)
				}
				reply, err := rwLockScript.Do(conn, args...)
				if err != nil {
					t.Fatal(err)
				}
				g, err := parseGrant(reply)
				if err != nil || g.ok != tc.ok {
					t.Fatalf("take-over = %+v, %v; want ok %v", g, err, tc.ok)
				}
				if got := members(t, conn, "r"); !slices.Equal(got, tc.after) {
					t.Errorf("readers after = %v; want %v", got, tc.after)
				}
				w, _ := redis.String(conn.Do("GET", "w"))
				if want := map[bool]string{true: "new", false: tc.writer}[tc.ok]; w != want {
					t.Errorf("writer after = %q; want %q", w, want)
				}
			})
		}
	}
}

// A writer's release gives the readers waiting then their turn; a reader
// with its turn gets in past a waiting writer, and its turn ends.
func TestRWScripts_readersTurn(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "SET", "w", "writer")
			must(t, conn, "ZADD", "rq", later(), "reader")
			must(t, conn, "ZADD", "q", later(), "next")
			if n, err := redis.Int(rwUnlockScript.Do(conn, "w", "rq", "turn", "q", "chan", "writer")); n != 1 || err != nil {
				t.Fatalf("unlock = %d, %v; want 1", n, err)
			}
			if got := members(t, conn, "turn"); !slices.Equal(got, []string{"reader"}) {
				t.Fatalf("turn = %v; want [reader]", got)
			}
			// The next writer waits for the reader's turn.
			g, err := parseGrant(must2(rwLockScript.Do(conn, append(append([]any{}, rwKeys...), "next", 0, 100, "", "")...)))
			if err != nil || g.ok {
				t.Fatalf("writer during the readers' turn = %+v, %v; want blocked", g, err)
			}
			// Another reader without a turn waits behind the writer.
			g, err = parseGrant(must2(rwRLockScript.Do(conn, append(append([]any{}, rwKeys...), "other", 0, "", "chan", 100)...)))
			if err != nil || g.ok {
				t.Fatalf("reader without a turn = %+v, %v; want blocked", g, err)
			}
			g, err = parseGrant(must2(rwRLockScript.Do(conn, append(append([]any{}, rwKeys...), "reader", 0, "", "chan", 100)...)))
			if err != nil || !g.ok {
				t.Fatalf("reader with its turn = %+v, %v; want in", g, err)
			}
			if got := members(t, conn, "turn"); len(got) != 0 {
				t.Errorf("turn after the reader came in = %v; want none", got)
			}
			if got := members(t, conn, "rq"); !slices.Equal(got, []string{"other"}) {
				t.Errorf("waiting readers = %v; want [other]", got)
			}
		})
	}
}

func must2(reply any, err error) any {
	if err != nil {
		return err
	}
	return reply
}

// A waiter that gave up leaves the waiting set and the readers' turn, and
// wakes the others.
func TestRWLeaveScript(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "ZADD", "rq", later(), "gone")
			must(t, conn, "ZADD", "turn", later(), "gone")
			must(t, conn, "ZADD", "rq", later(), "stays")
			sub := scriptConn(t, pool)
			psc := redis.PubSubConn{Conn: sub}
			if err := psc.Subscribe("chan"); err != nil {
				t.Fatal(err)
			}
			if _, ok := psc.Receive().(redis.Subscription); !ok {
				t.Fatal("no subscription")
			}
			if _, err := leaveWaitScript.Do(conn, "rq", "turn", "chan", "gone"); err != nil {
				t.Fatal(err)
			}
			if got := members(t, conn, "rq"); !slices.Equal(got, []string{"stays"}) {
				t.Errorf("waiting readers = %v; want [stays]", got)
			}
			if got := members(t, conn, "turn"); len(got) != 0 {
				t.Errorf("turn = %v; want none", got)
			}
			if m, ok := psc.Receive().(redis.Message); !ok || string(m.Data) != wakeAll {
				t.Errorf("message = %v; want a wake-up", m)
			}
		})
	}
}

// Expired holders are dropped by every script, so they neither block nor
// count; their fences go with them.
func TestHolderScripts_prune(t *testing.T) {
	past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "ZADD", "permits", past, "dead")
			must(t, conn, "HSET", "fences", "dead", 1)
			g, err := parseGrant(must2(semAcquireScript.Do(conn, "permits", "fences", "fence", "waiting", "new", 1000, 1, "", 0)))
			if err != nil || !g.ok || g.fence != 1 {
				t.Fatalf("acquire past an expired holder = %+v, %v; want fence 1", g, err)
			}
			if n, _ := redis.Int(conn.Do("HLEN", "fences")); n != 1 {
				t.Errorf("fences = %d; want 1: the expired holder's is gone", n)
			}
			if n, _ := redis.Int(heldScript.Do(conn, "permits", "dead")); n != 0 {
				t.Errorf("held(dead) = %d; want 0", n)
			}
			must(t, conn, "ZADD", "r", past, "dead")
			g, err = parseGrant(must2(rwLockScript.Do(conn, append(append([]any{}, rwKeys...), "writer", 0, 100, "", "")...)))
			if err != nil || !g.ok {
				t.Errorf("writer past an expired reader = %+v, %v; want in", g, err)
			}
		})
	}
}

// A take-over of a permit evicts the stale holder only if that leaves a
// permit for the caller: a caller asking for fewer permits than are held
// evicts nobody.
func TestSemAcquireScript_takeOver(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			for _, h := range []string{"a", "b", "c"} {
				must(t, conn, "ZADD", "permits", "+inf", h)
				must(t, conn, "HSET", "fences", h, 1)
			}
			g, err := parseGrant(must2(semAcquireScript.Do(conn, "permits", "fences", "fence", "waiting", "new", 0, 2, "a", 0)))
			if err != nil || g.ok {
				t.Fatalf("take-over with 2 permits and 3 holders = %+v, %v; want refused", g, err)
			}
			if got := members(t, conn, "permits"); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Errorf("holders = %v; want all three", got)
			}
			g, err = parseGrant(must2(semAcquireScript.Do(conn, "permits", "fences", "fence", "waiting", "new", 0, 3, "a", 0)))
			if err != nil || !g.ok {
				t.Fatalf("take-over with 3 permits = %+v, %v; want the permit", g, err)
			}
			if got := members(t, conn, "permits"); !slices.Equal(got, []string{"b", "c", "new"}) {
				t.Errorf("holders = %v; want b, c, new", got)
			}
			// Asked again after a lost reply: the same permit and fence.
			again, err := parseGrant(must2(semAcquireScript.Do(conn, "permits", "fences", "fence", "waiting", "new", 0, 3, "b", 0)))
			if err != nil || !again.ok || again.fence != g.fence {
				t.Errorf("the same take-over again = %+v, %v; want fence %d and b kept", again, err, g.fence)
			}
			if got := members(t, conn, "permits"); !slices.Equal(got, []string{"b", "c", "new"}) {
				t.Errorf("holders = %v; want b, c, new", got)
			}
		})
	}
}

// A fence counter that is not an integer fails an acquisition and changes
// nothing.
func TestHolderScripts_badFence(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "SET", "fence", "x")
			must(t, conn, "SET", "f", "x")
			if _, err := semAcquireScript.Do(conn, "permits", "fences", "fence", "waiting", "new", 0, 1, "", 0); err == nil {
				t.Error("semaphore acquire with a broken counter succeeded")
			}
			if _, err := rwLockScript.Do(conn, append(append([]any{}, rwKeys...), "new", 0, 100, "", "")...); err == nil {
				t.Error("writer with a broken counter succeeded")
			}
			if n, _ := redis.Int(conn.Do("EXISTS", "permits", "fences", "w")); n != 0 {
				t.Errorf("%d keys written; want none", n)
			}
		})
	}
}

// A release wakes waiters only when some wait: with none, it publishes
// nothing, so that an uncontended lock costs its Clients no messages.
func TestReleaseScripts_wakeOnlyWaiters(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			psc := redis.PubSubConn{Conn: scriptConn(t, pool)}
			if err := psc.Subscribe("chan"); err != nil {
				t.Fatal(err)
			}
			if _, ok := psc.Receive().(redis.Subscription); !ok {
				t.Fatal("no subscription")
			}
			next := func() string {
				m, ok := psc.Receive().(redis.Message)
				if !ok {
					t.Fatal("no message")
				}
				return string(m.Data)
			}
			release := func(waiting bool) {
				if waiting {
					must(t, conn, "ZADD", "waiting", later(), "someone")
					must(t, conn, "ZADD", "q", later(), "someone")
				}
				must(t, conn, "ZADD", "permits", "+inf", "p")
				must(t, conn, "SET", "w", "writer")
				_, _ = semReleaseScript.Do(conn, "permits", "fences", "waiting", "chan", "p")
				_, _ = rwUnlockScript.Do(conn, "w", "rq", "turn", "q", "chan", "writer")
				must(t, conn, "ZADD", "r", "+inf", "reader")
				_, _ = rwRUnlockScript.Do(conn, "r", "q", "chan", "reader")
			}
			release(false)
			must(t, conn, "PUBLISH", "chan", "marker")
			if got := next(); got != "marker" {
				t.Fatalf("first message = %q after releases with nobody waiting; want none before the marker", got)
			}
			release(true)
			for i := range 3 {
				if got := next(); got != wakeAll {
					t.Errorf("message %d = %q after a release with waiters; want a wake-up", i, got)
				}
			}
		})
	}
}
