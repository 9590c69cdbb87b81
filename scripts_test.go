package uncomplicated

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

// The scripts' rules, run directly on miniredis and on a real server.

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

func TestTakeOverScript(t *testing.T) {
	cases := []struct {
		name   string
		holder string // the lock's value before; "" for none
		stale  string // the token the waiter watched
		want   outcome
		after  string // the lock's value after
		fence  int64  // the fence counter after; it was 7
	}{
		{"still the stale holder", "old", "old", outcome{fence: 8}, "new", 8},
		{"lock gone", "", "old", outcome{fence: 8}, "new", 8},
		{"another waiter won", "winner", "old", outcome{holder: "winner", seen: 7}, "winner", 7},
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
				reply, err := takeOverScript.Do(conn, "lock", "fence", "queue", tc.stale, "new", 0, "")
				if err != nil {
					t.Fatal(err)
				}
				got, err := parseOutcome(reply)
				if err != nil || got != tc.want {
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
				{releaseScript, []any{"lock", "fence", "queue", "a", "b"}, 0, "c"},
				{releaseScript, []any{"lock", "fence", "queue", "b", "c"}, 1, ""},
			}
			for i, s := range steps {
				got, err := redis.Int64(s.script.Do(conn, s.args...))
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

// queueArgs are acquireScript's KEYS and ARGV for token with a 10 s lease.
func queueArgs(token, mode string) []any {
	return []any{"lock", "fence", "queue", token, 10000, token + " 10000 wake:" + token, mode}
}

func TestAcquireScript_queue(t *testing.T) {
	cases := []struct {
		name   string
		holder string   // the lock's value before; "" for none
		queue  []string // tokens in the queue before
		mode   string
		want   outcome
		after  []string // tokens in the queue after
	}{
		{"busy, plain attempt", "h", nil, "", outcome{holder: "h", seen: 7}, nil},
		{"busy, joins", "h", []string{"a"}, "q", outcome{holder: "h", seen: 7}, []string{"a", "w"}},
		{"busy, still queued", "h", []string{"w", "a"}, "r", outcome{holder: "h", seen: 7}, []string{"w", "a"}},
		{"busy, skipped meanwhile", "h", []string{"a"}, "r", outcome{holder: "h", seen: 7}, []string{"a", "w"}},
		{"busy, not listening", "h", []string{"w"}, "x", outcome{holder: "h", seen: 7}, []string{"w"}},
		{"free, joins not", "", []string{"a"}, "q", outcome{fence: 8}, []string{"a"}},
		{"free, leaves", "", []string{"a", "w"}, "r", outcome{fence: 8}, []string{"a"}},
		{"free, leaves unheard", "", []string{"w", "a"}, "x", outcome{fence: 8}, []string{"a"}},
		{"handed to us", "w", []string{"a"}, "r", outcome{fence: 7}, []string{"a"}},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn := getConn(t, pool)
				must(t, conn, "FLUSHALL")
				must(t, conn, "SET", "fence", 7)
				if tc.holder != "" {
					must(t, conn, "SET", "lock", tc.holder)
				}
				for _, tok := range tc.queue {
					must(t, conn, "RPUSH", "queue", tok+" 10000 wake:"+tok)
				}
				reply, err := acquireScript.Do(conn, queueArgs("w", tc.mode)...)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := parseOutcome(reply); err != nil || got != tc.want {
					t.Errorf("acquire = %+v, %v; want %+v", got, err, tc.want)
				}
				if got := queued(t, conn); !slices.Equal(got, tc.after) {
					t.Errorf("queue after = %q; want %q", got, tc.after)
				}
			})
		}
	}
}

// A release hands the lock to the oldest waiter whose Client listens,
// dropping the entries of those that do not, and frees it when none does.
func TestReleaseScript_handOff(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := getConn(t, pool)
			psc := redis.PubSubConn{Conn: getConn(t, pool)}
			if err := psc.Subscribe("wake:b"); err != nil {
				t.Fatal(err)
			}
			if _, ok := psc.Receive().(redis.Subscription); !ok {
				t.Fatal("no subscription")
			}
			must(t, conn, "SET", "fence", 7)
			must(t, conn, "SET", "lock", "h")
			must(t, conn, "RPUSH", "queue", "a 10000 wake:a", "b 0 wake:b", "c 10000 wake:c")

			next, err := redis.String(releaseScript.Do(conn, "lock", "fence", "queue", "h"))
			if err != nil || next != "b" {
				t.Fatalf("release = %q, %v; want b, the first waiter listening", next, err)
			}
			msg, ok := psc.Receive().(redis.Message)
			if !ok || string(msg.Data) != "b 9" {
				t.Errorf("wake-up = %+v; want \"b 9\" (a's fence was spent on a)", msg)
			}
			if v, _ := redis.String(conn.Do("GET", "lock")); v != "b" {
				t.Errorf("lock = %q; want b", v)
			}
			if ttl, _ := redis.Int64(conn.Do("PTTL", "lock")); ttl != -1 {
				t.Errorf("PTTL = %d; want -1 (b asked for no lease)", ttl)
			}
			if got := queued(t, conn); !slices.Equal(got, []string{"c"}) {
				t.Errorf("queue = %q; want [c]", got)
			}

			freed, err := redis.Int64(releaseScript.Do(conn, "lock", "fence", "queue", "b"))
			if err != nil || freed != 1 {
				t.Errorf("release with no one listening = %d, %v; want 1", freed, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock", "queue")); n != 0 {
				t.Errorf("%d of lock and queue left; want none", n)
			}
		})
	}
}

// A handed-off lock gets the waiter's lease.
func TestReleaseScript_handOffLease(t *testing.T) {
	srv := redistest.Shared(t)
	conn := getConn(t, srv.Pool(t))
	psc := redis.PubSubConn{Conn: getConn(t, srv.Pool(t))}
	if err := psc.Subscribe("lease:w"); err != nil {
		t.Fatal(err)
	}
	psc.Receive()
	must(t, conn, "SET", "lease:lock", "h")
	must(t, conn, "RPUSH", "lease:queue", "w 5000 lease:w")
	if _, err := releaseScript.Do(conn, "lease:lock", "lease:fence", "lease:queue", "h"); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := redis.Int64(conn.Do("PTTL", "lease:lock")); ttl <= 4000 || ttl > 5000 {
		t.Errorf("PTTL = %d; want about 5000", ttl)
	}
}

// A waiter that gives up leaves the queue, and passes the lock on when a
// release has just handed it over.
func TestLeaveScript(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := getConn(t, pool)
			must(t, conn, "RPUSH", "queue", "w 0 wake:w", "a 0 wake:a")
			if n, err := redis.Int64(leaveScript.Do(conn, "lock", "fence", "queue", "w 0 wake:w", "w")); err != nil || n != 0 {
				t.Errorf("leave = %d, %v; want 0", n, err)
			}
			if got := queued(t, conn); !slices.Equal(got, []string{"a"}) {
				t.Errorf("queue = %q; want [a]", got)
			}
			must(t, conn, "SET", "lock", "w")
			if n, err := redis.Int64(leaveScript.Do(conn, "lock", "fence", "queue", "w 0 wake:w", "w")); err != nil || n != 1 {
				t.Errorf("leave holding the lock = %d, %v; want 1 (released, a does not listen)", n, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock", "queue")); n != 0 {
				t.Errorf("%d of lock and queue left; want none", n)
			}
		})
	}
}

// A broken fence counter does not strand the lock: the release frees it and
// keeps the waiter's entry.
func TestReleaseScript_badFence(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := getConn(t, pool)
			must(t, conn, "SET", "fence", "not a number")
			must(t, conn, "SET", "lock", "h")
			must(t, conn, "RPUSH", "queue", "w 0 wake:w")
			if n, err := redis.Int64(releaseScript.Do(conn, "lock", "fence", "queue", "h")); err != nil || n != 1 {
				t.Errorf("release = %d, %v; want 1", n, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock")); n != 0 {
				t.Error("lock still set")
			}
			if got := queued(t, conn); !slices.Equal(got, []string{"w"}) {
				t.Errorf("queue = %q; want [w]", got)
			}
		})
	}
}

func getConn(t *testing.T, pool *redis.Pool) redis.Conn {
	t.Helper()
	conn, err := pool.GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// queued returns the tokens in the queue.
func queued(t *testing.T, conn redis.Conn) []string {
	t.Helper()
	entries, err := redis.Strings(conn.Do("LRANGE", "queue", 0, -1))
	if err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for _, e := range entries {
		tokens = append(tokens, strings.Fields(e)[0])
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
			reply, err := acquireScript.Do(conn, "lock", "fence", "queue", "mine", 60000, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if got, err := parseOutcome(reply); err != nil || got.fence != 7 {
				t.Errorf("attempt = %+v, %v; want fence 7", got, err)
			}
			if ttl, _ := redis.Int64(conn.Do("PTTL", "lock")); ttl < 59000 {
				t.Errorf("PTTL = %dms; want the lease restarted, about 60000ms", ttl)
			}
		})
	}
}
