package uncomplicated

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

// The scripts' rules, run directly on miniredis and on a real server.

// doScript runs s on conn with its KEYS and ARGV, as the driver does.
func doScript(conn redis.Conn, s *script, keysAndArgs ...any) (any, error) {
	return redis.NewScript(s.keys, s.src).Do(conn, keysAndArgs...)
}

// mutexKeys are the KEYS of the Mutex's scripts in these tests: the lock,
// its fence counter, its queue and its waiters.
var mutexKeys = []any{"lock", "fence", "queue", "waiters"}

// with returns keys followed by args, a script's KEYS and ARGV.
func with(keys []any, args ...any) []any {
	return append(slices.Clone(keys), args...)
}

// scriptConn takes a connection from pool, closed at the test's end.
func scriptConn(t *testing.T, pool *redis.Pool) redis.Conn {
	t.Helper()
	conn, err := pool.GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func scriptServers(t *testing.T) map[string]*redis.Pool {
	t.Helper()
	mr := miniredis.RunT(t)
	mini := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = mini.Close() })
	return map[string]*redis.Pool{"miniredis": mini, "redis-server": redistest.Start(t).Pool(t)}
}

// subscribe listens on channels from a connection of pool, so that a
// PUBLISH there counts a subscriber.
func subscribe(t *testing.T, pool *redis.Pool, channels ...any) redis.PubSubConn {
	t.Helper()
	psc := redis.PubSubConn{Conn: scriptConn(t, pool)}
	if err := psc.Subscribe(channels...); err != nil {
		t.Fatal(err)
	}
	for range channels {
		if _, ok := psc.Receive().(redis.Subscription); !ok {
			t.Fatal("no subscription")
		}
	}
	return psc
}

// message returns the data of the next message psc hears.
func message(t *testing.T, psc redis.PubSubConn) string {
	t.Helper()
	m, ok := psc.ReceiveWithTimeout(5 * time.Second).(redis.Message)
	if !ok {
		t.Fatal("no message")
	}
	return string(m.Data)
}

// waiting makes tokens alive waiters in the sorted set key for an hour.
func waiting(t *testing.T, conn redis.Conn, key string, tokens ...string) {
	t.Helper()
	for _, tok := range tokens {
		must(t, conn, "ZADD", key, later(), tok)
	}
}

// grantsEqual reports whether two grants say the same.
func grantsEqual(a, b grant) bool {
	return a.ok == b.ok && a.fence == b.fence && a.seen == b.seen && a.writer == b.writer && slices.Equal(a.holders, b.holders)
}

func TestTakeOverScript(t *testing.T) {
	cases := []struct {
		name   string
		holder string // the lock's value before; "" for none
		stale  string // the token the waiter watched
		want   grant
		after  string // the lock's value after
		fence  int64  // the fence counter after; it was 7
	}{
		{"still the stale holder", "old", "old", grant{ok: true, fence: 8}, "new", 8},
		{"lock gone", "", "old", grant{ok: true, fence: 8}, "new", 8},
		{"another waiter won", "winner", "old", grant{seen: 7, writer: "winner"}, "winner", 7},
		{"ours already, a lost reply asked again", "new", "old", grant{ok: true, fence: 7}, "new", 7},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				must(t, conn, "SET", "fence", 7)
				if tc.holder != "" {
					must(t, conn, "SET", "lock", tc.holder)
				}
				reply, err := doScript(conn, takeOverScript, with(mutexKeys, "new", 0, "", "", 100, tc.stale)...)
				if err != nil {
					t.Fatal(err)
				}
				got, err := parseGrant(reply)
				if err != nil || !grantsEqual(got, tc.want) {
					t.Errorf("take-over = %+v, %v; want %+v", got, err, tc.want)
				}
				if v, _ := redis.String(conn.Do("GET", "lock")); v != tc.after {
					t.Errorf("lock after = %q; want %q", v, tc.after)
				}
				if f, _ := redis.Int64(conn.Do("GET", "fence")); f != tc.fence {
					t.Errorf("fence counter after = %d; want %d", f, tc.fence)
				}
			})
		}
	}
}

func TestReleaseAndRefreshScripts_anyOfOurTokens(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "SET", "lock", "b")
			steps := []struct {
				script *script
				args   []any
				want   int64
				value  string
			}{
				{refreshScript, []any{"lock", 0, "c", "x", "y"}, 0, "b"},
				{refreshScript, []any{"lock", 0, "c", "a", "b"}, 1, "c"},
				{releaseScript, with(mutexKeys, "", "a", "b"), 0, "c"},
				{releaseScript, with(mutexKeys, "", "b", "c"), 1, ""},
			}
			for i, s := range steps {
				got, err := redis.Int64(doScript(conn, s.script, s.args...))
				v, _ := redis.String(conn.Do("GET", "lock"))
				if err != nil || got != s.want || v != s.value {
					t.Errorf("step %d: reply %d, %v, value %q; want %d, %q", i, got, err, v, s.want, s.value)
				}
			}
		})
	}
}

func must(t *testing.T, conn redis.Conn, cmd string, args ...any) {
	t.Helper()
	if _, err := conn.Do(cmd, args...); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
}

// entry is the queue entry of a Mutex's waiter token with a 10 s lease.
func entry(token string) string { return "x " + token + " 10000 wake:" + token }

func TestAcquireScript_queue(t *testing.T) {
	cases := []struct {
		name    string
		holder  string   // the lock's value before; "" for none
		queue   []string // tokens in the queue before
		waiting []string // tokens among the live waiters before
		op      string
		expiry  int // of the waiter w; 0 for an attempt that does not wait
		want    grant
		after   []string // tokens in the queue after
		alive   bool     // whether w is among the live waiters after
	}{
		{"busy, plain attempt", "h", nil, nil, "", 10000, grant{seen: 7, writer: "h"}, nil, false},
		{"busy, does not wait", "h", []string{"a"}, []string{"a"}, "", 0, grant{seen: 7, writer: "h"}, []string{"a"}, false},
		{"busy, joins", "h", []string{"a"}, []string{"a"}, "q", 10000, grant{seen: 7, writer: "h"}, []string{"a", "w"}, true},
		{"busy, still queued", "h", []string{"w", "a"}, []string{"w", "a"}, "r", 10000, grant{seen: 7, writer: "h"}, []string{"w", "a"}, true},
		{"busy, skipped meanwhile", "h", []string{"a"}, []string{"a"}, "r", 10000, grant{seen: 7, writer: "h"}, []string{"a", "w"}, true},
		{"busy, not listening", "h", []string{"w"}, []string{"w"}, "x", 10000, grant{seen: 7, writer: "h"}, []string{"w"}, true},
		{"free, joins not", "", []string{"a"}, []string{"a"}, "q", 10000, grant{ok: true, fence: 8}, []string{"a"}, false},
		{"free, leaves", "", []string{"a", "w"}, []string{"a", "w"}, "r", 10000, grant{ok: true, fence: 8}, []string{"a"}, false},
		{"free, leaves unheard", "", []string{"w", "a"}, []string{"w", "a"}, "x", 10000, grant{ok: true, fence: 8}, []string{"a"}, false},
		{"handed to us", "w", []string{"a"}, []string{"a"}, "r", 10000, grant{ok: true, fence: 7}, []string{"a"}, false},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				must(t, conn, "SET", "fence", 7)
				if tc.holder != "" {
					must(t, conn, "SET", "lock", tc.holder)
				}
				for _, tok := range tc.queue {
					must(t, conn, "RPUSH", "queue", entry(tok))
				}
				waiting(t, conn, "waiters", tc.waiting...)
				reply, err := doScript(conn, acquireScript, with(mutexKeys, "w", 10000, entry("w"), tc.op, tc.expiry)...)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := parseGrant(reply); err != nil || !grantsEqual(got, tc.want) {
					t.Errorf("acquire = %+v, %v; want %+v", got, err, tc.want)
				}
				if got := queued(t, conn, "queue"); !slices.Equal(got, tc.after) {
					t.Errorf("queue after = %q; want %q", got, tc.after)
				}
				if alive := slices.Contains(members(t, conn, "waiters"), "w"); alive != tc.alive {
					t.Errorf("w among the waiters after = %v; want %v", alive, tc.alive)
				}
			})
		}
	}
}

// A release hands the lock to the oldest live waiter whose Client listens,
// dropping the entries of those that do not, and frees it when none does.
func TestReleaseScript_handOff(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			psc := subscribe(t, pool, "wake:b")
			must(t, conn, "SET", "fence", 7)
			must(t, conn, "SET", "lock", "h")
			must(t, conn, "RPUSH", "queue", "x a 10000 wake:a", "x b 0 wake:b", "x c 10000 wake:c")
			waiting(t, conn, "waiters", "a", "b", "c")

			next, err := redis.String(doScript(conn, releaseScript, with(mutexKeys, "", "h")...))
			if err != nil || next != "b" {
				t.Fatalf("release = %q, %v; want b, the first waiter listening", next, err)
			}
			if got := message(t, psc); got != "b 9" {
				t.Errorf("wake-up = %q; want \"b 9\" (a's fence was spent on a)", got)
			}
			if v, _ := redis.String(conn.Do("GET", "lock")); v != "b" {
				t.Errorf("lock = %q; want b", v)
			}
			if ttl, _ := redis.Int64(conn.Do("PTTL", "lock")); ttl != -1 {
				t.Errorf("PTTL = %d; want -1 (b asked for no lease)", ttl)
			}
			if got := queued(t, conn, "queue"); !slices.Equal(got, []string{"c"}) {
				t.Errorf("queue = %q; want [c]", got)
			}

			freed, err := redis.Int64(doScript(conn, releaseScript, with(mutexKeys, "", "b")...))
			if err != nil || freed != 1 {
				t.Errorf("release with no one listening = %d, %v; want 1", freed, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock", "queue", "waiters")); n != 0 {
				t.Errorf("%d of lock, queue and waiters left; want none", n)
			}
		})
	}
}

// A release passes over any number of dead entries, whose waiters are not
// among the live ones or whose expiry has passed, without spending a fence
// on them, and hands the lock to the live waiter behind them in one call.
func TestReleaseScript_skipsDeadEntries(t *testing.T) {
	past := fmt.Sprint(time.Now().Add(-time.Second).UnixMilli())
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			psc := subscribe(t, pool, "chan")
			must(t, conn, "FLUSHALL")
			must(t, conn, "SET", "fence", 7)
			must(t, conn, "SET", "lock", "h")
			for i := range 200 {
				dead := fmt.Sprintf("dead%d", i)
				must(t, conn, "RPUSH", "queue", "x "+dead+" 0 chan")
				if i%2 == 1 {
					must(t, conn, "ZADD", "waiters", past, dead)
				}
			}
			must(t, conn, "RPUSH", "queue", "x live 0 chan")
			waiting(t, conn, "waiters", "live")

			next, err := redis.String(doScript(conn, releaseScript, with(mutexKeys, "", "h")...))
			if err != nil || next != "live" {
				t.Fatalf("release = %q, %v; want live, behind 200 dead entries", next, err)
			}
			if got := message(t, psc); got != "live 8" {
				t.Errorf("first message = %q; want \"live 8\": none to the dead, no fence spent on them", got)
			}
			if v, _ := redis.String(conn.Do("GET", "lock")); v != "live" {
				t.Errorf("lock = %q; want live", v)
			}
			if n, _ := redis.Int64(conn.Do("LLEN", "queue")); n != 0 {
				t.Errorf("queue length = %d; want 0", n)
			}
		})
	}
}

// A handed-off lock gets the waiter's lease.
func TestReleaseScript_handOffLease(t *testing.T) {
	srv := redistest.Shared(t)
	conn := scriptConn(t, srv.Pool(t))
	subscribe(t, srv.Pool(t), "lease:w")
	must(t, conn, "SET", "lease:lock", "h")
	must(t, conn, "RPUSH", "lease:queue", "x w 5000 lease:w")
	waiting(t, conn, "lease:waiters", "w")
	if _, err := doScript(conn, releaseScript, "lease:lock", "lease:fence", "lease:queue", "lease:waiters", "", "h"); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := redis.Int64(conn.Do("PTTL", "lease:lock")); ttl <= 4000 || ttl > 5000 {
		t.Errorf("PTTL = %d; want about 5000", ttl)
	}
}

// A waiter that gives up calls the release with its entry: it leaves the
// queue and the live waiters, and passes the lock on when a release has
// just handed it over.
func TestReleaseScript_leave(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "RPUSH", "queue", "x w 0 wake:w", "x a 0 wake:a")
			waiting(t, conn, "waiters", "w", "a")
			if n, err := redis.Int64(doScript(conn, releaseScript, with(mutexKeys, "x w 0 wake:w", "w")...)); err != nil || n != 0 {
				t.Errorf("leave = %d, %v; want 0", n, err)
			}
			if got := queued(t, conn, "queue"); !slices.Equal(got, []string{"a"}) {
				t.Errorf("queue = %q; want [a]", got)
			}
			if got := members(t, conn, "waiters"); !slices.Equal(got, []string{"a"}) {
				t.Errorf("waiters = %q; want [a]", got)
			}
			must(t, conn, "SET", "lock", "w")
			if n, err := redis.Int64(doScript(conn, releaseScript, with(mutexKeys, "x w 0 wake:w", "w")...)); err != nil || n != 1 {
				t.Errorf("leave holding the lock = %d, %v; want 1 (released, a does not listen)", n, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock", "queue", "waiters")); n != 0 {
				t.Errorf("%d of lock, queue and waiters left; want none", n)
			}
		})
	}
}

// A broken fence counter does not strand the lock: the release frees it and
// keeps the waiter's entry.
func TestReleaseScript_badFence(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "SET", "fence", "not a number")
			must(t, conn, "SET", "lock", "h")
			must(t, conn, "RPUSH", "queue", "x w 0 wake:w")
			waiting(t, conn, "waiters", "w")
			if n, err := redis.Int64(doScript(conn, releaseScript, with(mutexKeys, "", "h")...)); err != nil || n != 1 {
				t.Errorf("release = %d, %v; want 1", n, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock")); n != 0 {
				t.Error("lock still set")
			}
			if got := queued(t, conn, "queue"); !slices.Equal(got, []string{"w"}) {
				t.Errorf("queue = %q; want [w]", got)
			}
		})
	}
}

// queued returns the tokens in the queue at key.
func queued(t *testing.T, conn redis.Conn, key string) []string {
	t.Helper()
	entries, err := redis.Strings(conn.Do("LRANGE", key, 0, -1))
	if err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for _, e := range entries {
		tokens = append(tokens, strings.Fields(e)[1])
	}
	return tokens
}

// An attempt that finds the lock already ours (handed over before the
// attempt, its wake-up missed) restarts the lease, so that the lease the
// caller counts from before its attempt is never longer than Redis's.
func TestAcquireScript_oursRestartsLease(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			must(t, conn, "SET", "fence", 7)
			must(t, conn, "SET", "lock", "mine", "PX", 100)
			reply, err := doScript(conn, acquireScript, with(mutexKeys, "mine", 60000, "", "", 0)...)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := parseGrant(reply); err != nil || !got.ok || got.fence != 7 {
				t.Errorf("attempt = %+v, %v; want fence 7", got, err)
			}
			if ttl, _ := redis.Int64(conn.Do("PTTL", "lock")); ttl < 59000 {
				t.Errorf("PTTL = %dms; want the lease restarted, about 60000ms", ttl)
			}
		})
	}
}
