package uncomplicated

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// The scripts' rules, run directly on miniredis and on a real server.

// doScript runs s on conn with its KEYS and ARGV, as the driver does.
func doScript(conn redis.Conn, s *driver.Script, keysAndArgs ...any) (any, error) {
	return redis.NewScript(s.Keys(), s.Source()).Do(conn, keysAndArgs...)
}

// mutexKeys are the KEYS of the Mutex's scripts in these tests: the lock,
// its fence counter and its queue.
var mutexKeys = []any{"lock", "fence", "queue"}

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

// A listening is a test's connection that listens as a Client's does:
// sharded where Redis has SPUBLISH (redis-server), else not (miniredis).
type listening struct {
	sub     driver.Subscription
	publish string // the command that reaches it
}

// subscribe listens on channels from a connection of pool, so that a
// publish there counts a subscriber.
func subscribe(t *testing.T, pool *redis.Pool, channels ...string) *listening {
	t.Helper()
	l := &listening{publish: "SPUBLISH"}
	if _, err := scriptConn(t, pool).Do("SPUBLISH", "probe", ""); err != nil {
		l.publish = "PUBLISH"
	}
	sub, err := redigo.New(pool).Listen(context.Background(), l.publish == "SPUBLISH")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	l.sub = sub
	for _, ch := range channels {
		sub.Subscribe(ch)
		if e := l.next(t); e.Kind != driver.EventSubscribed {
			t.Fatalf("%+v; want the subscription to %s", e, ch)
		}
	}
	return l
}

// next returns the next event l hears.
func (l *listening) next(t *testing.T) driver.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := l.sub.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// message returns the data of the next message l hears.
func message(t *testing.T, l *listening) string {
	t.Helper()
	e := l.next(t)
	if e.Kind != driver.EventMessage {
		t.Fatalf("%+v; want a message", e)
	}
	return string(e.Data)
}

// enqueue queues token with entry at queue, alive for an hour, as a
// waiter's attempt does.
func enqueue(t *testing.T, conn redis.Conn, queue, token, entry string) {
	t.Helper()
	must(t, conn, "RPUSH", queue, token)
	must(t, conn, "SET", queue+":"+token, entry, "PX", time.Hour.Milliseconds())
}

// alive reports whether token's key beside queue is there.
func alive(t *testing.T, conn redis.Conn, queue, token string) bool {
	t.Helper()
	n, err := redis.Int64(conn.Do("EXISTS", queue+":"+token))
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
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
				reply, err := doScript(conn, takeOverScript, with(mutexKeys, "new", 0, entry("new"), "x", 100, tc.stale)...)
				if err != nil {
					t.Fatal(err)
				}
				got, err := parseGrant(reply, true)
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
				script *driver.Script
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

// entry is the queue entry of a Mutex's waiter token with a 10 s lease
// and a 3.1 s expiry.
func entry(token string) string { return "x 10000 3100 wake:" + token }

func TestAcquireScript_queue(t *testing.T) {
	cases := []struct {
		name   string
		holder string   // the lock's value before; "" for none
		queue  []string // tokens in the queue before, all alive
		op     string
		expiry int // of the waiter w; 0 for an attempt that does not wait
		want   grant
		after  []string // tokens in the queue after
		alive  bool     // whether w's key is there after
	}{
		{"busy, plain attempt", "h", nil, "", 10000, grant{writer: "h"}, nil, false},
		{"busy, does not wait", "h", []string{"a"}, "", 0, grant{writer: "h"}, []string{"a"}, false},
		{"busy, joins", "h", []string{"a"}, "q", 10000, grant{writer: "h"}, []string{"a", "w"}, true},
		{"busy, still queued", "h", []string{"w", "a"}, "r", 10000, grant{seen: 7, writer: "h"}, []string{"w", "a"}, true},
		{"busy, skipped meanwhile", "h", []string{"a"}, "r", 10000, grant{seen: 7, writer: "h"}, []string{"a", "w"}, true},
		{"busy, not listening", "h", []string{"w"}, "x", 10000, grant{seen: 7, writer: "h"}, []string{"w"}, true},
		{"busy, not listening, skipped", "h", []string{"a"}, "x", 10000, grant{seen: 7, writer: "h"}, []string{"a"}, false},
		{"free, plain attempt", "", []string{"a"}, "", 10000, grant{ok: true, fence: 8}, []string{"a"}, false},
		{"free, joins not", "", []string{"a"}, "q", 10000, grant{ok: true, fence: 8}, []string{"a"}, false},
		{"free, leaves", "", []string{"a", "w"}, "r", 10000, grant{ok: true, fence: 8}, []string{"a"}, false},
		{"free, leaves unheard", "", []string{"w", "a"}, "x", 10000, grant{ok: true, fence: 8}, []string{"a"}, false},
		{"handed to us", "w", []string{"a"}, "r", 10000, grant{ok: true, fence: 7}, []string{"a"}, false},
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
					enqueue(t, conn, "queue", tok, entry(tok))
				}
				args := attemptArgs{token: "w", lease: 10000, entry: entry("w"), op: tc.op, expiry: int64(tc.expiry), form: mutexArgs}
				reply, err := doScript(conn, acquireScript, with(mutexKeys, args.argv()...)...)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := parseGrant(reply, true); err != nil || !grantsEqual(got, tc.want) {
					t.Errorf("acquire = %+v, %v; want %+v", got, err, tc.want)
				}
				if _, bare := reply.(int64); bare != (tc.holder == "" && tc.op != "r" && tc.op != "x") {
					t.Errorf("acquire replied %#v; want the bare fence exactly when an attempt not yet queued sets the lock", reply)
				}
				if got := queued(t, conn, "queue"); !slices.Equal(got, tc.after) {
					t.Errorf("queue after = %q; want %q", got, tc.after)
				}
				if alive := alive(t, conn, "queue", "w"); alive != tc.alive {
					t.Errorf("w's key there after = %v; want %v", alive, tc.alive)
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
			enqueue(t, conn, "queue", "a", "x 10000 3100 wake:a")
			enqueue(t, conn, "queue", "b", "x 0 3100 wake:b")
			enqueue(t, conn, "queue", "c", "x 10000 3100 wake:c")

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
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock", "queue", "queue:a", "queue:b", "queue:c")); n != 0 {
				t.Errorf("%d of lock, queue and the waiters' keys left; want none", n)
			}
		})
	}
}

// A release passes over any number of dead entries, whose waiters' keys
// expired, or are not there, or hold no entry, without spending a fence on
// them, and hands the lock to the live waiter behind them in one call.
func TestReleaseScript_skipsDeadEntries(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			psc := subscribe(t, pool, "chan")
			must(t, conn, "FLUSHALL")
			must(t, conn, "SET", "fence", 7)
			must(t, conn, "SET", "lock", "h")
			for i := range 200 {
				dead := fmt.Sprintf("dead%d", i)
				must(t, conn, "RPUSH", "queue", dead)
				switch {
				case i%3 == 1 && server == "redis-server": // miniredis's keys expire only when told
					must(t, conn, "SET", "queue:"+dead, "x 0 1 chan", "PX", 1)
				case i%3 == 2:
					must(t, conn, "SET", "queue:"+dead, "not an entry")
				}
			}
			time.Sleep(5 * time.Millisecond) // the keys of PX 1 expire
			enqueue(t, conn, "queue", "live", "x 0 3100 chan")

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
	enqueue(t, conn, "lease:queue", "w", "x 5000 3100 lease:w")
	if _, err := doScript(conn, releaseScript, "lease:lock", "lease:fence", "lease:queue", "", "h"); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := redis.Int64(conn.Do("PTTL", "lease:lock")); ttl <= 4000 || ttl > 5000 {
		t.Errorf("PTTL = %d; want about 5000", ttl)
	}
}

// A waiter that gives up calls the release with "q": it leaves the queue,
// its key goes, and it passes the lock on when a release has just handed
// it over.
func TestReleaseScript_leave(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			enqueue(t, conn, "queue", "w", "x 0 3100 wake:w")
			enqueue(t, conn, "queue", "a", "x 0 3100 wake:a")
			if n, err := redis.Int64(doScript(conn, releaseScript, with(mutexKeys, "q", "w")...)); err != nil || n != 0 {
				t.Errorf("leave = %d, %v; want 0", n, err)
			}
			if got := queued(t, conn, "queue"); !slices.Equal(got, []string{"a"}) {
				t.Errorf("queue = %q; want [a]", got)
			}
			if alive(t, conn, "queue", "w") || !alive(t, conn, "queue", "a") {
				t.Errorf("keys of w and a there = %v, %v; want false, true", alive(t, conn, "queue", "w"), alive(t, conn, "queue", "a"))
			}
			must(t, conn, "SET", "lock", "w")
			if n, err := redis.Int64(doScript(conn, releaseScript, with(mutexKeys, "q", "w")...)); err != nil || n != 1 {
				t.Errorf("leave holding the lock = %d, %v; want 1 (released, a does not listen)", n, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock", "queue", "queue:a", "queue:w")); n != 0 {
				t.Errorf("%d of lock, queue and the waiters' keys left; want none", n)
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
			enqueue(t, conn, "queue", "w", "x 0 3100 wake:w")
			if n, err := redis.Int64(doScript(conn, releaseScript, with(mutexKeys, "", "h")...)); err != nil || n != 1 {
				t.Errorf("release = %d, %v; want 1", n, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock")); n != 0 {
				t.Error("lock still set")
			}
			if got := queued(t, conn, "queue"); !slices.Equal(got, []string{"w"}) || !alive(t, conn, "queue", "w") {
				t.Errorf("queue = %q, w's key there %v; want [w], true", got, alive(t, conn, "queue", "w"))
			}
		})
	}
}

// queued returns the tokens in the queue at key.
func queued(t *testing.T, conn redis.Conn, key string) []string {
	t.Helper()
	tokens, err := redis.Strings(conn.Do("LRANGE", key, 0, -1))
	if err != nil {
		t.Fatal(err)
	}
	if len(tokens) == 0 {
		return nil
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
			if got, err := parseGrant(reply, true); err != nil || !got.ok || got.fence != 7 {
				t.Errorf("attempt = %+v, %v; want fence 7", got, err)
			}
			if ttl, _ := redis.Int64(conn.Do("PTTL", "lock")); ttl < 59000 {
				t.Errorf("PTTL = %dms; want the lease restarted, about 60000ms", ttl)
			}
		})
	}
}

// argv lays out each primitive's ARGV as its scripts read them: the five
// of every attempt, then what a take-over evicts.
func TestAttemptArgs_argv(t *testing.T) {
	head := []any{"tok", int64(5), "e", "q", int64(7)}
	for _, tc := range []struct {
		name  string
		form  argForm
		stale []string
		want  []any
	}{
		{"mutex attempt", mutexArgs, nil, nil},
		{"mutex take-over", mutexArgs, []string{"w:old"}, []any{"old"}},
		{"writer attempt", writerArgs, nil, []any{"", ""}},
		{"writer take-over of readers", writerArgs, []string{"r1", "r2"}, []any{"x", "", "r1", "r2"}},
		{"writer take-over of a writer", writerArgs, []string{"w:old"}, []any{"x", "old"}},
		{"reader attempt", readerArgs, nil, []any{""}},
		{"reader take-over", readerArgs, []string{"w:old"}, []any{"old"}},
		{"permit attempt", permitArgs, nil, []any{3, ""}},
		{"permit take-over", permitArgs, []string{"p1"}, []any{3, "p1"}},
	} {
		a := attemptArgs{token: "tok", lease: 5, entry: "e", op: "q", expiry: 7, form: tc.form, stale: tc.stale, permits: 3}
		if got, want := a.argv(), append(slices.Clone(head), tc.want...); !slices.Equal(got, want) {
			t.Errorf("%s: argv() = %q; want %q", tc.name, got, want)
		}
	}
	// A Mutex's attempt with no op sends its token and lease only; any
	// other form, or a take-over, sends the whole head.
	first := attemptArgs{token: "tok", lease: 5, entry: "e", expiry: 7, form: mutexArgs}
	if got, want := first.argv(), []any{"tok", int64(5)}; !slices.Equal(got, want) {
		t.Errorf("mutex attempt with no op: argv() = %q; want %q", got, want)
	}
	for _, a := range []attemptArgs{
		{token: "tok", lease: 5, entry: "e", expiry: 7, form: mutexArgs, stale: []string{"old"}},
		{token: "tok", lease: 5, entry: "e", expiry: 7, form: readerArgs},
		{token: "tok", lease: 5, entry: "e", expiry: 7, form: permitArgs},
	} {
		if got := a.argv(); len(got) < 5 {
			t.Errorf("%+v: argv() = %q; want the five of every attempt first", a, got)
		}
	}
}
