package wire

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
)

// The RWMutex's and the Semaphore's scripts, run directly on miniredis and
// on a real server.

// rwKeys are the KEYS of the RWMutex's scripts in these tests: the writer,
// the readers, the waiting writers, the queue and its entries.
var rwKeys = []any{"w", "r", "ww", "rwqueue", "rwqueue:entries"}

// semKeys are the KEYS of lua.SemAcquire and lua.SemRelease in these
// tests: the holders, their fences (and the counter), the queue and its
// entries.
var semKeys = []any{"permits", "fences", "semqueue", "semqueue:entries"}

// enqueueAll queues waiters at queue, each "<kind> <token>", alive for an
// hour, with no lease, listening on "chan".
func enqueueAll(t *testing.T, conn redis.Conn, queue string, waiters ...string) {
	t.Helper()
	for _, w := range waiters {
		kind, token, _ := strings.Cut(w, " ")
		enqueue(t, conn, queue, token, kind+" 0 3600000 1 chan")
	}
}

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

// released runs a release script and reads its reply, failing the test on
// an error.
func released(t *testing.T, conn redis.Conn, s *driver.Script, keysAndArgs ...any) (ok bool, next []string) {
	t.Helper()
	ok, next, err := ParseRelease(must2(doScript(conn, s, keysAndArgs...)))
	if err != nil {
		t.Fatal(err)
	}
	return ok, next
}

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
		{"the writer it saw", "old 5", nil, "old", nil, true, nil},
		{"another writer", "other 6", nil, "old", nil, false, nil},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				if tc.writer != "" {
					must(t, conn, "SET", "w", tc.writer)
				}
				waiting(t, conn, "r", tc.readers...)
				args := with(rwKeys, "new", 0, "", "", 100, "x", tc.seenW)
				for _, s := range tc.seen {
					args = append(args, s)
				}
				reply, err := doScript(conn, lua.RWLock, args...)
				if err != nil {
					t.Fatal(err)
				}
				g, err := ParseGrant(reply, true)
				if err != nil || g.OK != tc.ok {
					t.Fatalf("take-over = %+v, %v; want ok %v", g, err, tc.ok)
				}
				if got := members(t, conn, "r"); !slices.Equal(got, tc.after) {
					t.Errorf("readers after = %v; want %v", got, tc.after)
				}
				w, _ := redis.String(conn.Do("GET", "w"))
				if token, fence := CutFence(w); tc.ok && (token != "new" || fence != g.Fence || fence <= 5) || !tc.ok && w != tc.writer {
					t.Errorf("writer after = %q; want new with its fence, above the old writer's, or %q", w, tc.writer)
				}
			})
		}
	}
}

// A writer's release lets in the reader queued before the next writer;
// that writer then waits for the reader, and a reader that joins the queue
// after it waits behind it.
func TestRWScripts_readersHandedOff(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			subscribe(t, pool, "chan")
			must(t, conn, "SET", "w", "writer 3")
			enqueueAll(t, conn, "rwqueue", "s reader", "x next")
			waiting(t, conn, "ww", "next")
			if ok, next := released(t, conn, lua.RWUnlock, with(rwKeys, "", "writer")...); !ok || !slices.Equal(next, []string{"reader"}) {
				t.Fatalf("unlock = %v, %v; want true, [reader]", ok, next)
			}
			if got := members(t, conn, "r"); !slices.Equal(got, []string{"reader"}) {
				t.Fatalf("readers = %v; want [reader]", got)
			}
			// The next writer waits for the reader.
			g, err := ParseGrant(must2(doScript(conn, lua.RWLock, with(rwKeys, "next", 0, "", "", 100, "", "")...)), true)
			if err != nil || g.OK {
				t.Fatalf("writer after the reader was let in = %+v, %v; want blocked", g, err)
			}
			// Another reader, joining the queue now, waits behind the writer.
			g, err = ParseGrant(must2(doScript(conn, lua.RWRLock, with(rwKeys, "other", 0, "s 0 100 1 chan", "q", 100, "")...)), false)
			if err != nil || g.OK {
				t.Fatalf("reader joining the queue = %+v, %v; want blocked", g, err)
			}
			g, err = ParseGrant(must2(doScript(conn, lua.RWRLock, with(rwKeys, "reader", 0, "", "", 100, "")...)), false)
			if err != nil || !g.OK {
				t.Fatalf("reader handed the lock = %+v, %v; want in", g, err)
			}
			if got := queued(t, conn, "rwqueue"); !slices.Equal(got, []string{"next", "other"}) {
				t.Errorf("queue after the reader came in = %v; want [next other]", got)
			}
			if !alive(t, conn, "rwqueue", "other") || alive(t, conn, "rwqueue", "reader") {
				t.Errorf("keys of other and reader there = %v, %v; want true, false", alive(t, conn, "rwqueue", "other"), alive(t, conn, "rwqueue", "reader"))
			}
		})
	}
}

// The queue is served in order: a writer's release lets in the readers at
// the head up to the next writer, together; the last of them hands the
// lock to that writer, whose release lets in the reader behind it.
func TestRWScripts_handOffInOrder(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			psc := subscribe(t, pool, "chan")
			must(t, conn, "SET", "w", "holder 3")
			enqueueAll(t, conn, "rwqueue", "s A", "s B", "x W", "s C")
			waiting(t, conn, "ww", "W")

			if ok, next := released(t, conn, lua.RWUnlock, with(rwKeys, "", "holder")...); !ok || !slices.Equal(next, []string{"A", "B"}) {
				t.Fatalf("writer's unlock = %v, %v; want true, [A B]", ok, next)
			}
			var readers uint64 // the readers' fence, one for both
			for _, want := range []string{"A", "B"} {
				token, wu, _ := ParseWakeUp(message(t, psc))
				if token != want || wu.Fence <= 3 || readers != 0 && wu.Fence != readers {
					t.Errorf("message to %q, fence %d; want %s, one fence above the writer's", token, wu.Fence, want)
				}
				readers = wu.Fence
			}
			if got := members(t, conn, "r"); !slices.Equal(got, []string{"A", "B"}) {
				t.Errorf("readers = %v; want [A B]", got)
			}
			if got := queued(t, conn, "rwqueue"); !slices.Equal(got, []string{"W", "C"}) {
				t.Errorf("queue = %v; want [W C]", got)
			}

			if ok, next := released(t, conn, lua.RWRUnlock, with(rwKeys, "", "A")...); !ok || next != nil {
				t.Errorf("A's unlock = %v, %v; want true, nobody (B still reads)", ok, next)
			}
			if ok, next := released(t, conn, lua.RWRUnlock, with(rwKeys, "", "B")...); !ok || !slices.Equal(next, []string{"W"}) {
				t.Fatalf("B's unlock = %v, %v; want true, [W]", ok, next)
			}
			token, wu, _ := ParseWakeUp(message(t, psc))
			if token != "W" || wu.Fence <= readers {
				t.Errorf("message to %q, fence %d; want W, above the readers' %d", token, wu.Fence, readers)
			}
			if w, fence := holderOf(t, conn, "w"); w != "W" || fence != wu.Fence {
				t.Errorf("writer = %q %d; want W %d", w, fence, wu.Fence)
			}
			writer := wu.Fence
			if got := queued(t, conn, "rwqueue"); !slices.Equal(got, []string{"C"}) {
				t.Errorf("queue = %v; want [C]", got)
			}

			if ok, next := released(t, conn, lua.RWUnlock, with(rwKeys, "", "W")...); !ok || !slices.Equal(next, []string{"C"}) {
				t.Fatalf("W's unlock = %v, %v; want true, [C]", ok, next)
			}
			if token, wu, _ := ParseWakeUp(message(t, psc)); token != "C" || wu.Fence <= writer {
				t.Errorf("message to %q, fence %d; want C, above W's %d", token, wu.Fence, writer)
			}
			if got := members(t, conn, "r"); !slices.Equal(got, []string{"C"}) {
				t.Errorf("readers = %v; want [C]", got)
			}
			if n, _ := redis.Int(conn.Do("EXISTS", "w", "rwqueue", "ww", "rwqueue:entries")); n != 0 {
				t.Errorf("%d of writer, queue, waiting writers and waiters' keys left; want none", n)
			}
		})
	}
}

// The readers let in together end at the next writer in the queue, also
// when dead entries lie between them and it.
func TestRWScripts_handOffStopsAtWriter(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			subscribe(t, pool, "chan")
			must(t, conn, "SET", "w", "holder 3")
			enqueueAll(t, conn, "rwqueue", "s A")
			must(t, conn, "RPUSH", "rwqueue", "dead")
			enqueueAll(t, conn, "rwqueue", "x W", "s C")
			waiting(t, conn, "ww", "W")
			if ok, next := released(t, conn, lua.RWUnlock, with(rwKeys, "", "holder")...); !ok || !slices.Equal(next, []string{"A"}) {
				t.Fatalf("writer's unlock = %v, %v; want true, [A]", ok, next)
			}
			if w, _ := redis.String(conn.Do("GET", "w")); w != "" {
				t.Errorf("writer = %q; want none while A reads", w)
			}
			if got := members(t, conn, "r"); !slices.Equal(got, []string{"A"}) {
				t.Errorf("readers = %v; want [A]", got)
			}
			if got := queued(t, conn, "rwqueue"); !slices.Equal(got, []string{"W", "C"}) || !alive(t, conn, "rwqueue", "W") {
				t.Errorf("queue = %v, W's key there %v; want [W C], true", got, alive(t, conn, "rwqueue", "W"))
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

// A waiter that gives up calls its release with "q", or "-" when it never
// joined the queue: it leaves the queue, its key goes, a writer leaves the
// waiting writers, and it wakes nobody; a reader that a release has just
// let in passes the lock on.
func TestRWUnlockScripts_leave(t *testing.T) {
	cases := []struct {
		name    string
		release *driver.Script
		kind    string
		queued  bool // whether the waiter that gives up joined the queue
	}{
		{"reader", lua.RWRUnlock, "s", true},
		{"writer", lua.RWUnlock, "x", true},
		{"writer not queued", lua.RWUnlock, "x", false},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				psc := subscribe(t, pool, "chan")
				gone := "-"
				if tc.queued {
					gone = "q"
					enqueueAll(t, conn, "rwqueue", tc.kind+" gone")
				}
				enqueueAll(t, conn, "rwqueue", tc.kind+" stays")
				if tc.kind == "x" {
					waiting(t, conn, "ww", "gone", "stays")
				}
				if ok, next := released(t, conn, tc.release, with(rwKeys, gone, "gone")...); ok || next != nil {
					t.Errorf("leave = %v, %v; want false, nobody", ok, next)
				}
				if alive(t, conn, "rwqueue", "gone") || !alive(t, conn, "rwqueue", "stays") {
					t.Errorf("keys of gone and stays there = %v, %v; want false, true", alive(t, conn, "rwqueue", "gone"), alive(t, conn, "rwqueue", "stays"))
				}
				if got := members(t, conn, "ww"); tc.kind == "x" && !slices.Equal(got, []string{"stays"}) {
					t.Errorf("waiting writers = %v; want [stays]", got)
				}
				if got := queued(t, conn, "rwqueue"); !slices.Equal(got, []string{"stays"}) {
					t.Errorf("queue = %v; want [stays]", got)
				}
				must(t, conn, psc.publish, "chan", "marker")
				if got := message(t, psc); got != "marker" {
					t.Errorf("first message = %q; want none before the marker", got)
				}
			})
		}
		t.Run(server+"/reader let in", func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			psc := subscribe(t, pool, "chan")
			must(t, conn, "ZADD", "r", "+inf", "gone")
			enqueueAll(t, conn, "rwqueue", "s stays")
			if ok, next := released(t, conn, lua.RWRUnlock, with(rwKeys, "q", "gone")...); !ok || !slices.Equal(next, []string{"stays"}) {
				t.Errorf("leave = %v, %v; want true, [stays]", ok, next)
			}
			if token, wu, _ := ParseWakeUp(message(t, psc)); token != "stays" || wu.Attempt != 1 {
				t.Errorf("message to %q, attempt %d; want stays, 1", token, wu.Attempt)
			}
			if got := members(t, conn, "r"); !slices.Equal(got, []string{"stays"}) {
				t.Errorf("readers = %v; want [stays]", got)
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
			before := clockOf(t, conn)
			g, err := ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, "new", 1000, "", "", 0, 1, "")...)), true)
			if err != nil || !g.OK {
				t.Fatalf("acquire past an expired holder = %+v, %v; want the permit", g, err)
			}
			newFence(t, g.Fence, before, 0)
			fields, _ := redis.StringMap(conn.Do("HGETALL", "fences"))
			if f := strconv.FormatUint(g.Fence, 10); len(fields) != 2 || fields["new"] != f || fields["fence"] != f {
				t.Errorf("fences %v; want new's fence and the counter at it, the expired holder's gone", fields)
			}
			if n, _ := redis.Int(doScript(conn, lua.Held, "permits", "dead")); n != 0 {
				t.Errorf("held(dead) = %d; want 0", n)
			}
			must(t, conn, "ZADD", "r", past, "dead")
			g, err = ParseGrant(must2(doScript(conn, lua.RWLock, with(rwKeys, "writer", 0, "", "", 100, "", "")...)), true)
			if err != nil || !g.OK {
				t.Errorf("writer past an expired reader = %+v, %v; want in", g, err)
			}
		})
	}
}

// A writer's lean attempt that finds the lock taken counts among the
// waiting writers, unless it does not wait (TryLock: expiry 0), and names
// what blocks it: the writer, or the readers.
func TestRWLockScript_leanAttemptBlocked(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "SET", "w", Fenced("h", 7))
			attempt := func(token string, expiry int64, want Grant) {
				t.Helper()
				a := AttemptArgs{Token: token, Lease: 1000, Expiry: expiry, Form: WriterArgs}
				g, err := ParseGrant(must2(doScript(conn, lua.RWLock, with(rwKeys, a.Argv()...)...)), true)
				if err != nil || !grantsEqual(g, want) {
					t.Errorf("%s's attempt = %+v, %v; want %+v", token, g, err, want)
				}
				score, err := conn.Do("ZSCORE", "ww", token)
				if counted := score != nil; err != nil || counted != (expiry != 0) {
					t.Errorf("%s among the waiting writers = %v; want %v", token, counted, expiry != 0)
				}
			}
			attempt("waits", 100, Grant{Writer: "h"})
			attempt("tries", 0, Grant{Writer: "h"})
			must(t, conn, "DEL", "w")
			waiting(t, conn, "r", "reader")
			attempt("waits too", 100, Grant{Holders: []string{"reader"}})
			if n, _ := redis.Int(conn.Do("EXISTS", "w")); n != 0 {
				t.Error("a writer's attempt blocked by readers left the writer's key set")
			}
		})
	}
}

// The waiting writers' set lives until the latest expiry a blocked
// writer's attempt wrote into it: the first attempt gives the new set its
// expiry, a later expiry pushes it back, an earlier one leaves it, and a
// writer that leaves does not shorten it.
func TestRWLockScript_waitingWritersExpire(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "SET", "w", Fenced("h", 7))
			for _, step := range []struct {
				token  string
				expiry int64 // ms
				want   int64 // the set's expiry, ms from now
			}{
				{"a", 2000, 2000},
				{"b", 9000, 9000},
				{"a", 2000, 9000},
			} {
				now := int64(clockOf(t, conn) / 1000)
				a := AttemptArgs{Token: step.token, Lease: 1000, Expiry: step.expiry, Form: WriterArgs}
				must2(doScript(conn, lua.RWLock, with(rwKeys, a.Argv()...)...))
				at, err := redis.Int64(conn.Do("PEXPIRETIME", "ww"))
				if err != nil || at < now+step.want-500 || at > now+step.want+500 {
					t.Errorf("after %s's attempt for %d ms, the set expires in %d ms, %v; want about %d", step.token, step.expiry, at-now, err, step.want)
				}
			}
			must2(doScript(conn, lua.RWUnlock, with(rwKeys, "q", "b")...))
			now := int64(clockOf(t, conn) / 1000)
			if at, _ := redis.Int64(conn.Do("PEXPIRETIME", "ww")); at < now+9000-500 {
				t.Errorf("after b left, the set expires in %d ms; want about 9000: a leave does not shorten it", at-now)
			}
		})
	}
}

// A Semaphore's lean attempt on a semaphore with holders counts them
// against the permits it names.
func TestSemAcquireScript_leanAttempt(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "ZADD", "permits", "+inf", "a")
			must(t, conn, "HSET", "fences", "a", 1, "fence", 1)
			for _, tc := range []struct {
				permits int
				want    Grant
			}{
				{1, Grant{Holders: []string{"a"}}},
				{2, Grant{OK: true}},
			} {
				a := AttemptArgs{Token: "new", Form: PermitArgs, Permits: tc.permits}
				g, err := ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, a.Argv()...)...)), true)
				if tc.want.OK && err == nil && g.Fence > 1 {
					tc.want.Fence = g.Fence
				}
				if err != nil || !grantsEqual(g, tc.want) {
					t.Errorf("attempt on %d permits = %+v, %v; want %+v", tc.permits, g, err, tc.want)
				}
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
			g, err := ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, "new", 0, "", "", 0, 2, "a")...)), true)
			if err != nil || g.OK {
				t.Fatalf("take-over with 2 permits and 3 holders = %+v, %v; want refused", g, err)
			}
			if got := members(t, conn, "permits"); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Errorf("holders = %v; want all three", got)
			}
			g, err = ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, "new", 0, "", "", 0, 3, "a")...)), true)
			if err != nil || !g.OK {
				t.Fatalf("take-over with 3 permits = %+v, %v; want the permit", g, err)
			}
			if got := members(t, conn, "permits"); !slices.Equal(got, []string{"b", "c", "new"}) {
				t.Errorf("holders = %v; want b, c, new", got)
			}
			// Asked again after a lost reply: the same permit and fence.
			again, err := ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, "new", 0, "", "", 0, 3, "b")...)), true)
			if err != nil || !again.OK || again.Fence != g.Fence {
				t.Errorf("the same take-over again = %+v, %v; want fence %d and b kept", again, err, g.Fence)
			}
			if got := members(t, conn, "permits"); !slices.Equal(got, []string{"b", "c", "new"}) {
				t.Errorf("holders = %v; want b, c, new", got)
			}
		})
	}
}

// A Semaphore's fence counter that is not an integer fails an acquisition
// and changes nothing. Neither an RWMutex nor a Semaphore keeps a counter
// key: one that an earlier version left changes nothing, and stays as it is.
func TestHolderScripts_badFence(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "HSET", "fences", "fence", "x")
			must(t, conn, "SET", "f", "x")
			if _, err := doScript(conn, lua.SemAcquire, with(semKeys, "new", 0, "", "", 0, 1, "")...); err == nil {
				t.Error("semaphore acquire with a broken counter succeeded")
			}
			if n, _ := redis.Int(conn.Do("EXISTS", "permits")); n != 0 {
				t.Error("a holder written; want none")
			}
			if fields, _ := redis.Strings(conn.Do("HGETALL", "fences")); !slices.Equal(fields, []string{"fence", "x"}) {
				t.Errorf("fences %q; want the broken counter alone", fields)
			}
			must(t, conn, "DEL", "fences")
			must(t, conn, "SET", "fences", "x")
			if _, err := doScript(conn, lua.SemAcquire, with(semKeys, "new", 0, "", "", 0, 1, "")...); err == nil {
				t.Error("semaphore acquire with a hash of fences that is a string succeeded")
			}
			if v, _ := redis.String(conn.Do("GET", "fences")); v != "x" {
				t.Errorf("fences = %q; want it untouched", v)
			}
			if n, _ := redis.Int(conn.Do("EXISTS", "permits")); n != 0 {
				t.Error("a holder written; want none")
			}
			must(t, conn, "DEL", "fences")
			must(t, conn, "SET", "fence", "x")
			if g, err := ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, "new", 0, "", "", 0, 1, "")...)), true); err != nil || !g.OK {
				t.Fatalf("semaphore acquire beside an earlier version's broken counter = %+v, %v; want the permit", g, err)
			}
			if ok, _ := released(t, conn, lua.SemRelease, with(semKeys, "", "new")...); !ok {
				t.Fatal("the permit's release = false; want true")
			}
			if n, _ := redis.Int(conn.Do("EXISTS", "permits", "fences")); n != 0 {
				t.Errorf("%d of the semaphore's keys left; want none", n)
			}
			if g, err := ParseGrant(must2(doScript(conn, lua.RWLock, with(rwKeys, "new", 0, "", "", 100, "", "")...)), true); err != nil || !g.OK {
				t.Fatalf("writer beside an earlier version's broken counter = %+v, %v; want in", g, err)
			}
			if ok, _ := released(t, conn, lua.RWUnlock, with(rwKeys, "", "new")...); !ok {
				t.Fatal("writer's release = false; want true")
			}
			if n, _ := redis.Int(conn.Do("EXISTS", "w")); n != 0 {
				t.Errorf("%d writer key left; want none", n)
			}
			for _, key := range []string{"fence", "f"} {
				if v, _ := redis.String(conn.Do("GET", key)); v != "x" {
					t.Errorf("the earlier counter %s = %q; want it as it was, x", key, v)
				}
			}
		})
	}
}

// A release publishes only to a waiter it hands over to: with none queued,
// it publishes nothing, so that an uncontended lock costs its Clients no
// messages.
func TestReleaseScripts_handOffOnlyToWaiters(t *testing.T) {
	cases := []struct {
		name    string
		release *driver.Script
		keys    []any
		hold    []any // the command that makes "h" a holder
		queue   string
		kind    string // of the queued waiter's entry
	}{
		{"semaphore", lua.SemRelease, semKeys, []any{"ZADD", "permits", "+inf", "h"}, "semqueue", "1"},
		{"writer", lua.RWUnlock, rwKeys, []any{"SET", "w", "h 3"}, "rwqueue", "x"},
		{"reader", lua.RWRUnlock, rwKeys, []any{"ZADD", "r", "+inf", "h"}, "rwqueue", "x"},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				psc := subscribe(t, pool, "chan")
				release := func() (bool, []string) {
					must(t, conn, tc.hold[0].(string), tc.hold[1:]...)
					return released(t, conn, tc.release, with(tc.keys, "", "h")...)
				}
				if ok, next := release(); !ok || next != nil {
					t.Errorf("release with nobody waiting = %v, %v; want true, nobody", ok, next)
				}
				must(t, conn, psc.publish, "chan", "marker")
				if got := message(t, psc); got != "marker" {
					t.Fatalf("first message = %q after a release with nobody waiting; want none before the marker", got)
				}
				enqueueAll(t, conn, tc.queue, tc.kind+" someone")
				if ok, next := release(); !ok || !slices.Equal(next, []string{"someone"}) {
					t.Errorf("release with a waiter = %v, %v; want true, [someone]", ok, next)
				}
				if token, wu, ok := ParseWakeUp(message(t, psc)); !ok || token != "someone" {
					t.Errorf("message to %q, %+v, after a release with a waiter; want its hand-off to someone", token, wu)
				}
			})
		}
	}
}

// A Semaphore's release hands its permit to the oldest queued waiter, and
// the next release to the one behind it.
func TestSemReleaseScript_handOffInOrder(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			psc := subscribe(t, pool, "chan")
			must(t, conn, "ZADD", "permits", "+inf", "h")
			must(t, conn, "HSET", "fences", "h", 1, "fence", 1)
			enqueueAll(t, conn, "semqueue", "1 a", "1 b")
			fence := uint64(1) // the last granted
			steps := []struct {
				holder  string
				next    []string
				message string   // the token it hands the permit to; "" for none
				after   []string // the holders after
				queue   []string // the queue after
			}{
				{"h", []string{"a"}, "a", []string{"a"}, []string{"b"}},
				{"a", []string{"b"}, "b", []string{"b"}, nil},
				{"b", nil, "", nil, nil},
			}
			for _, s := range steps {
				if ok, next := released(t, conn, lua.SemRelease, with(semKeys, "", s.holder)...); !ok || !slices.Equal(next, s.next) {
					t.Fatalf("%s's release = %v, %v; want true, %v", s.holder, ok, next, s.next)
				}
				if s.message != "" {
					token, wu, _ := ParseWakeUp(message(t, psc))
					if token != s.message || wu.Fence <= fence {
						t.Errorf("message to %q, fence %d; want %s, above %d", token, wu.Fence, s.message, fence)
					}
					fence = wu.Fence
				}
				if got := members(t, conn, "permits"); !slices.Equal(got, s.after) {
					t.Errorf("holders after %s's release = %v; want %v", s.holder, got, s.after)
				}
				if got := queued(t, conn, "semqueue"); !slices.Equal(got, s.queue) {
					t.Errorf("queue after %s's release = %v; want %v", s.holder, got, s.queue)
				}
			}
			if fence, _ := redis.Int(conn.Do("HGET", "fences", "b")); fence != 0 {
				t.Errorf("b's fence after its release = %d; want none", fence)
			}
			if n, _ := redis.Int(conn.Do("EXISTS", "semqueue", "semqueue:entries")); n != 0 {
				t.Errorf("%d of queue and waiters' keys left; want none", n)
			}
		})
	}
}

// Above 64 permits, an attempt counts the live holders without reading
// them, and reads them only when they block it.
func TestSemAcquireScript_manyPermits(t *testing.T) {
	past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "ZADD", "permits", past, "expired")
			for i := range 65 {
				must(t, conn, "ZADD", "permits", "+inf", fmt.Sprintf("h%02d", i))
			}
			g, err := ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, "new", 0, "", "", 0, 65, "")...)), true)
			if err != nil || g.OK || len(g.Holders) != 65 || slices.Contains(g.Holders, "expired") {
				t.Fatalf("attempt on 65 permits, all taken = ok %v, %d holders, %v; want blocked by the 65 live ones", g.OK, len(g.Holders), err)
			}
			g, err = ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, "new", 0, "", "", 0, 66, "")...)), true)
			if err != nil || !g.OK {
				t.Fatalf("attempt on 66 permits = %+v, %v; want the permit", g, err)
			}
			if n, _ := redis.Int(conn.Do("ZCARD", "permits")); n != 66 {
				t.Errorf("%d holders after; want 66: the expired one dropped", n)
			}
		})
	}
}

// A Semaphore's release that hands the permit to a waiter who then holds
// alone leaves the keys as an attempt of that waiter, with its claim as
// lease, would on a free semaphore; one that leaves another holder keeps
// the keys until the later of the two leases.
func TestSemReleaseScript_handOffWritesAsAGrant(t *testing.T) {
	const claim = 1500 // ms
	for server, pool := range scriptServers(t) {
		for _, others := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/other holder %v", server, others), func(t *testing.T) {
				conn := scriptConn(t, pool)
				psc := subscribe(t, pool, "chan")
				prepare := func() {
					must(t, conn, "FLUSHALL")
					if others {
						must(t, conn, "ZADD", "permits", later(), "other")
						must(t, conn, "HSET", "fences", "other", 1)
					}
				}
				prepare()
				must(t, conn, "ZADD", "permits", later(), "h")
				must(t, conn, "HSET", "fences", "h", 2, "fence", 2)
				enqueue(t, conn, "semqueue", "w", fmt.Sprintf("2 %d 3600000 1 chan", claim))
				if ok, next := released(t, conn, lua.SemRelease, with(semKeys, "", "h")...); !ok || !slices.Equal(next, []string{"w"}) {
					t.Fatalf("h's release = %v, %v; want the permit handed to w", ok, next)
				}
				_, wu, _ := ParseWakeUp(message(t, psc))
				handed := stateOf(t, conn, semKeys, wu.Fence)

				prepare()
				whole := AttemptArgs{Token: "w", Lease: claim, Entry: entry("w", 1), Op: "x", Expiry: 100, Form: PermitArgs, Permits: 2}
				g, err := ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, whole.Argv()...)...)), true)
				if err != nil || !g.OK {
					t.Fatalf("w's attempt = %+v, %v; want the permit", g, err)
				}
				granted := stateOf(t, conn, semKeys, g.Fence)
				// Plus the slack of a loaded machine: the other holder's
				// expiry is written by the test's clock, each time anew.
				apart := int64(g.Fence/1000-wu.Fence/1000) + 50
				if !handed.like(granted, apart) {
					t.Errorf("hand-off wrote %+v; a grant %+v", handed, granted)
				}
			})
		}
	}
}

// A Semaphore's release drops its holder and those whose lease ended,
// hands the permit on only if the live holders left let the waiter in,
// and counts as lost a holder whose lease ended: with few holders, read
// at once (64 at most), and with more.
func TestSemReleaseScript_countsLiveHolders(t *testing.T) {
	past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
	for server, pool := range scriptServers(t) {
		for _, others := range []int{2, 60, 61, 70} { // with h and 3 expired: 64 holders, read at once; 65, not
			for _, tc := range []struct {
				permits int // the waiter's
				handed  bool
			}{{others + 1, true}, {others, false}} {
				t.Run(fmt.Sprintf("%s/%d others/waiter of %d", server, others, tc.permits), func(t *testing.T) {
					conn := scriptConn(t, pool)
					must(t, conn, "FLUSHALL")
					psc := subscribe(t, pool, "chan")
					for i := range others {
						must(t, conn, "ZADD", "permits", later(), fmt.Sprint("other", i))
						must(t, conn, "HSET", "fences", fmt.Sprint("other", i), 1)
					}
					for _, dead := range []string{"dead1", "dead2", "gone"} {
						must(t, conn, "ZADD", "permits", past, dead)
						must(t, conn, "HSET", "fences", dead, 1)
					}
					must(t, conn, "ZADD", "permits", later(), "h")
					must(t, conn, "HSET", "fences", "h", 2, "fence", 2)
					enqueue(t, conn, "semqueue", "w", fmt.Sprintf("%d 1500 3600000 1 chan", tc.permits))
					ok, next := released(t, conn, lua.SemRelease, with(semKeys, "", "h")...)
					if want := []string(nil); tc.handed {
						want = []string{"w"}
						if !ok || !slices.Equal(next, want) {
							t.Errorf("h's release = %v, %v; want true, %v", ok, next, want)
						}
						if token, _, _ := ParseWakeUp(message(t, psc)); token != "w" {
							t.Errorf("message to %q; want w's hand-off", token)
						}
					} else if !ok || next != nil {
						t.Errorf("h's release = %v, %v; want true, nobody", ok, next)
					}
					held := members(t, conn, "permits")
					want := others
					if tc.handed {
						want++
					}
					if n, _ := redis.Int(conn.Do("HLEN", "fences")); len(held) != want || n != want+1 || slices.Contains(held, "h") || slices.Contains(held, "dead1") {
						t.Errorf("holders %v, %d fields of fences after the release; want the %d others alive, and w if handed, and the counter", held, n, others)
					}
					must(t, conn, "ZADD", "permits", past, "gone")
					if ok, _ := released(t, conn, lua.SemRelease, with(semKeys, "", "gone")...); ok {
						t.Error("the release of a holder whose lease ended succeeded; want it lost")
					}
				})
			}
		}
	}
}

// A Semaphore keeps its fence counter in its hash of fences: every grant
// (a first attempt on a free semaphore, one beside a holder, a hand-off
// beside a holder and one to a waiter who then holds alone) writes it
// there with the holder's fence and writes no counter key, and each fence
// is above the counter, even one far ahead of Redis's clock; and so does
// a forced release's hand-off.
func TestSemScripts_counterInFences(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			psc := subscribe(t, pool, "chan")
			granted := func(step string, fence, floor uint64) {
				t.Helper()
				counter, _ := redis.Uint64(conn.Do("HGET", "fences", "fence"))
				if n, _ := redis.Int(conn.Do("EXISTS", "fence")); fence <= floor || counter != fence || n != 0 {
					t.Errorf("%s: fence %d, counter %d, %d counter keys; want a fence above %d, the counter at it, no key", step, fence, counter, n, floor)
				}
			}
			attempt := func(a AttemptArgs) uint64 {
				t.Helper()
				g, err := ParseGrant(must2(doScript(conn, lua.SemAcquire, with(semKeys, a.Argv()...)...)), true)
				if err != nil || !g.OK {
					t.Fatalf("%s's attempt = %+v, %v; want a permit", a.Token, g, err)
				}
				return g.Fence
			}
			handOff := func(from, to string) uint64 {
				t.Helper()
				enqueue(t, conn, "semqueue", to, "2 1500 3600000 1 chan")
				if ok, next := released(t, conn, lua.SemRelease, with(semKeys, "", from)...); !ok || !slices.Equal(next, []string{to}) {
					t.Fatalf("%s's release = %v, %v; want the permit handed to %s", from, ok, next, to)
				}
				_, wu, _ := ParseWakeUp(message(t, psc))
				return wu.Fence
			}
			fa := attempt(AttemptArgs{Token: "a", Lease: 60000, Form: PermitArgs, Permits: 2})
			granted("a first attempt", fa, 0)
			ahead := fa + 1_000_000_000 // 1000 s ahead of Redis's clock
			must(t, conn, "HSET", "fences", "fence", ahead)
			fb := attempt(AttemptArgs{Token: "b", Lease: 60000, Entry: entry("b", 1), Op: "q", Expiry: 100, Form: PermitArgs, Permits: 2})
			granted("an attempt beside a holder", fb, ahead)
			fw := handOff("a", "w")
			granted("a hand-off beside a holder", fw, fb)
			if ok, next := released(t, conn, lua.SemRelease, with(semKeys, "", "b")...); !ok || next != nil {
				t.Fatalf("b's release = %v, %v; want true, nobody", ok, next)
			}
			fv := handOff("w", "v")
			granted("a hand-off to a waiter alone", fv, fw)
			ahead = fv + 1_000_000_000
			must(t, conn, "HSET", "fences", "fence", ahead)
			enqueue(t, conn, "semqueue", "u", "1 1500 3600000 1 chan")
			if gone, err := redis.Strings(doScript(conn, lua.ForceSem, semKeys...)); err != nil || !slices.Equal(gone, []string{"v"}) {
				t.Fatalf("ForceSem = %q, %v; want v removed", gone, err)
			}
			_, wu, _ := ParseWakeUp(message(t, psc))
			granted("a forced release's hand-off", wu.Fence, ahead)
		})
	}
}

// A Semaphore's release that finds more holders than it reads at once,
// all of them expired but its own, frees the semaphore: it hands the
// permit to a waiter, under a fence above the counter, who then holds
// alone, or, with nobody waiting, deletes every key.
func TestSemReleaseScript_manyExpired(t *testing.T) {
	past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
	for server, pool := range scriptServers(t) {
		for _, waiter := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/waiter %v", server, waiter), func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				psc := subscribe(t, pool, "chan")
				for i := range 70 {
					must(t, conn, "ZADD", "permits", past, fmt.Sprint("dead", i))
					must(t, conn, "HSET", "fences", fmt.Sprint("dead", i), 1)
				}
				ahead := uint64(time.Now().Add(time.Hour).UnixMicro())
				must(t, conn, "ZADD", "permits", later(), "h")
				must(t, conn, "HSET", "fences", "h", 2, "fence", ahead)
				if waiter {
					enqueue(t, conn, "semqueue", "w", "1 1500 3600000 1 chan")
				}
				ok, next := released(t, conn, lua.SemRelease, with(semKeys, "", "h")...)
				if !waiter {
					if n, _ := redis.Int(conn.Do("EXISTS", "permits", "fences")); !ok || next != nil || n != 0 {
						t.Errorf("h's release = %v, %v, %d keys left; want true, nobody, none", ok, next, n)
					}
					return
				}
				if !ok || !slices.Equal(next, []string{"w"}) {
					t.Fatalf("h's release = %v, %v; want the permit handed to w", ok, next)
				}
				_, wu, _ := ParseWakeUp(message(t, psc))
				fields, _ := redis.StringMap(conn.Do("HGETALL", "fences"))
				f := strconv.FormatUint(wu.Fence, 10)
				if held := members(t, conn, "permits"); wu.Fence <= ahead || !slices.Equal(held, []string{"w"}) || len(fields) != 2 || fields["w"] != f || fields["fence"] != f {
					t.Errorf("w's fence %d, holders %v, fences %v; want w alone above %d, its fence and the counter", wu.Fence, held, fields, ahead)
				}
			})
		}
	}
}
