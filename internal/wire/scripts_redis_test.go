package wire

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// The scripts' rules, run directly on miniredis and on a real server.

// doScript runs s on conn with its KEYS and ARGV, as the driver does.
func doScript(conn redis.Conn, s *driver.Script, keysAndArgs ...any) (any, error) {
	return redis.NewScript(s.Keys(), s.Source()).Do(conn, keysAndArgs...)
}

// mutexKeys are the KEYS of the Mutex's scripts in these tests: the lock,
// its queue and the queue's entries.
var mutexKeys = []any{"lock", "queue", "queue:entries"}

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

// The tests' queues keep their entries in the hash queue+":entries", the
// key after the queue in the scripts' KEYS (see mutexKeys).

// enqueue queues token with entry at queue, alive for an hour by Redis's
// clock, as a waiter's attempt does.
func enqueue(t *testing.T, conn redis.Conn, queue, token, entry string) {
	t.Helper()
	must(t, conn, "RPUSH", queue, token)
	setEntry(t, conn, queue, token, entry, time.Hour)
}

// setEntry writes token's entry beside queue, alive for d (dead for d <= 0).
func setEntry(t *testing.T, conn redis.Conn, queue, token, entry string, d time.Duration) {
	t.Helper()
	deadline := int64(clockOf(t, conn)/1000) + d.Milliseconds()
	must(t, conn, "HSET", queue+":entries", token, strconv.FormatInt(deadline, 10)+" "+entry)
}

// entryOf returns token's entry beside queue, and whether it is alive by
// Redis's clock; "" when there is none.
func entryOf(t *testing.T, conn redis.Conn, queue, token string) (string, bool) {
	t.Helper()
	v, err := redis.String(conn.Do("HGET", queue+":entries", token))
	if err != nil && err != redis.ErrNil {
		t.Fatal(err)
	}
	deadline, entry, _ := strings.Cut(v, " ")
	d, _ := strconv.ParseInt(deadline, 10, 64)
	return entry, d > int64(clockOf(t, conn)/1000)
}

// alive reports whether token's entry beside queue is there and alive.
func alive(t *testing.T, conn redis.Conn, queue, token string) bool {
	t.Helper()
	_, ok := entryOf(t, conn, queue, token)
	return ok
}

// waiting makes tokens alive waiters in the sorted set key for an hour.
func waiting(t *testing.T, conn redis.Conn, key string, tokens ...string) {
	t.Helper()
	for _, tok := range tokens {
		must(t, conn, "ZADD", key, later(), tok)
	}
}

// grantsEqual reports whether two grants say the same.
func grantsEqual(a, b Grant) bool {
	return a.OK == b.OK && a.Free == b.Free && a.Fence == b.Fence && a.Writer == b.Writer && slices.Equal(a.Holders, b.Holders)
}

// clockOf returns Redis's clock in microseconds (TIME), which every new
// fence reaches.
func clockOf(t *testing.T, conn redis.Conn) uint64 {
	t.Helper()
	r, err := redis.Int64s(conn.Do("TIME"))
	if err != nil || len(r) != 2 {
		t.Fatalf("TIME = %v, %v", r, err)
	}
	return uint64(r[0])*1e6 + uint64(r[1])
}

// newFence checks that fence is a new one: at least Redis's clock before,
// and above above.
func newFence(t *testing.T, fence, before, above uint64) {
	t.Helper()
	if fence < before || fence <= above {
		t.Errorf("fence %d; want a new one: at least Redis's clock, %d, and above %d", fence, before, above)
	}
}

// holderOf returns the holder's value in the lock key, cut into its token
// and fence; "" when there is none.
func holderOf(t *testing.T, conn redis.Conn, key string) (string, uint64) {
	t.Helper()
	v, err := redis.String(conn.Do("GET", key))
	if err != nil && err != redis.ErrNil {
		t.Fatal(err)
	}
	return CutFence(v)
}

func TestTakeOverScript(t *testing.T) {
	cases := []struct {
		name   string
		holder string // the lock's value before; "" for none
		stale  string // the token the waiter watched
		ok     bool   // the waiter gets the lock
		above  uint64 // which its new fence is above; 0 when it is not new
		fence  uint64 // which it gets when it is not new
		blocks string // what blocks it when it does not
	}{
		{"still the stale holder", "old 7", "old", true, 7, 0, ""},
		{"still the stale holder, its fence ahead of the clock", "old 9000000000000000", "old", true, 9000000000000000, 0, ""},
		{"still the stale holder, of an earlier version", "old", "old", true, 0, 0, ""},
		{"lock gone", "", "old", true, 0, 0, ""},
		{"another waiter won", "winner 8", "old", false, 0, 0, "winner"},
		{"ours already, a lost reply asked again", "new 7", "old", true, 0, 7, ""},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				if tc.holder != "" {
					must(t, conn, "SET", "lock", tc.holder)
				}
				before := clockOf(t, conn)
				reply, err := doScript(conn, lua.TakeOver, with(mutexKeys, "new", 0, entry("new", 1), "x", 100, tc.stale)...)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ParseGrant(reply, true)
				if err != nil || got.OK != tc.ok || got.Writer != tc.blocks {
					t.Fatalf("take-over = %+v, %v; want ok %v, blocked by %q", got, err, tc.ok, tc.blocks)
				}
				token, fence := holderOf(t, conn, "lock")
				switch {
				case !tc.ok:
					if v, _ := redis.String(conn.Do("GET", "lock")); v != tc.holder { // its entry gone, "x" does not queue it
						t.Errorf("lock after = %q; want %q", v, tc.holder)
					}
				case tc.fence != 0:
					if got.Fence != tc.fence || token != "new" || fence != tc.fence {
						t.Errorf("fence %d, lock after %q %d; want fence %d kept", got.Fence, token, fence, tc.fence)
					}
				default:
					newFence(t, got.Fence, before, tc.above)
					if v, _ := redis.String(conn.Do("GET", "lock")); v != Fenced("new", got.Fence)+QueuedMark {
						t.Errorf("lock after = %q; want new's value under fence %d, marked", v, got.Fence)
					}
				}
			})
		}
	}
}

// A waiter that joins the queue marks the holder's value once, keeping
// its lease; a Refresh keeps the mark, and a hand-off and a take-over mark
// what they write. QuickRelease frees a lock that holds one of our values
// unmarked, leaves a marked one to Release (-1), which hands it on, and
// frees nothing of another holder's.
func TestQuickRelease_queuedMark(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "FLUSHALL")
			value := func() string {
				v, _ := redis.String(conn.Do("GET", "lock"))
				return v
			}
			quick := func(values ...any) int64 {
				t.Helper()
				r, err := redis.Int64(doScript(conn, lua.QuickRelease, append([]any{"lock"}, values...)...))
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			h := Fenced("h", 9000000000000000)
			must(t, conn, "SET", "lock", h, "PX", 60000)
			attempt := func(op string) {
				t.Helper()
				args := AttemptArgs{Token: "w", Lease: 10000, Entry: entry("w", 1), Op: op, Expiry: 10000, Form: MutexArgs}
				keys := mutexKeys
				if op == "" { // declares the lock alone (see AttemptArgs.Keys)
					keys = keys[:1]
				}
				reply, err := redis.NewScript(len(keys), lua.Acquire.Source()).Do(conn, with(keys, args.Argv()...)...)
				if g, perr := ParseGrant(reply, true); err != nil || perr != nil || g.OK || g.Writer != "h" {
					t.Fatalf("attempt %q = %+v, %v, %v; want blocked by h", op, g, err, perr)
				}
			}
			attempt("")
			if v := value(); v != h {
				t.Fatalf("lock after an attempt that does not queue = %q; want %q", v, h)
			}
			for _, op := range []string{"q", "r", "x"} {
				attempt(op)
				if v := value(); v != h+QueuedMark {
					t.Fatalf("lock after attempt %q = %q; want %q, marked once", op, v, h+QueuedMark)
				}
			}
			if ttl, _ := redis.Int64(conn.Do("PTTL", "lock")); ttl < 50000 {
				t.Errorf("PTTL after the mark = %d; want the holder's lease kept", ttl)
			}
			if r, err := redis.Int64(doScript(conn, lua.Refresh, "lock", 60000, "h2", "h")); err != nil || r != 1 {
				t.Fatalf("refresh = %d, %v", r, err)
			}
			h = Fenced("h2", 9000000000000000)
			if v := value(); v != h+QueuedMark {
				t.Fatalf("lock after a Refresh = %q; want %q", v, h+QueuedMark)
			}
			if r := quick(Fenced("x", 9000000000000000)); r != 0 || value() != h+QueuedMark {
				t.Fatalf("quick release of another holder = %d, lock %q; want 0, unchanged", r, value())
			}
			if r := quick(Fenced("h", 9000000000000000), h); r != -1 || value() != h+QueuedMark {
				t.Fatalf("quick release behind a waiter = %d, lock %q; want -1, unchanged", r, value())
			}
			psc := subscribe(t, pool, "wake:w")
			if next, err := redis.String(doScript(conn, lua.Release, with(mutexKeys, "", h)...)); err != nil || next != "w" {
				t.Fatalf("release = %q, %v; want the lock handed to w", next, err)
			}
			_, wu, _ := ParseWakeUp(message(t, psc))
			if v := value(); v != Fenced("w", wu.Fence)+QueuedMark {
				t.Errorf("lock after the hand-off = %q; want w's value, marked", v)
			}

			must(t, conn, "SET", "lock", Fenced("f", 5))
			if r := quick(Fenced("f", 5)); r != 1 {
				t.Errorf("quick release = %d; want 1", r)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock")); n != 0 {
				t.Error("the lock is left after its quick release")
			}
		})
	}
}

// Refresh and release accept any of the hold's tokens, and the lock's
// value keeps its fence through a Refresh. A hold's release passes its
// tokens as the key holds them, with the fence; a release of tokens alone
// ("-", a waiter's or one whose fence is unknown) finds them too.
func TestReleaseAndRefreshScripts_anyOfOurTokens(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			must(t, conn, "SET", "lock", "b 5")
			steps := []struct {
				script *driver.Script
				args   []any
				want   int64
				value  string
			}{
				{lua.Refresh, []any{"lock", 0, "c", "x", "y"}, 0, "b 5"},
				{lua.Refresh, []any{"lock", 0, "c", "a", "b"}, 1, "c 5"},
				{lua.Release, with(mutexKeys, "", "a 5", "b 5"), 0, "c 5"},
				{lua.Release, with(mutexKeys, "", "c"), 0, "c 5"}, // a hold passes its values
				{lua.Release, with(mutexKeys, "", "b 5", "c 5"), 1, ""},
				{lua.Refresh, []any{"lock", 0, "d", "c"}, 0, ""},
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

// entry is the queue entry, written by its attempt-th attempt, of a
// Mutex's waiter token with a 10 s lease and a 3.1 s expiry.
func entry(token string, attempt uint64) string {
	return QueueEntry(EntryExclusive, 10*time.Second, 3100*time.Millisecond, attempt, "wake:"+token)
}

func TestAcquireScript_queue(t *testing.T) {
	cases := []struct {
		name   string
		holder string   // the lock's value before; "" for none
		queue  []string // tokens in the queue before, all alive
		op     string
		expiry int // of the waiter w; 0 for an attempt that does not wait
		want   Grant
		after  []string // tokens in the queue after
		alive  bool     // whether w's key is there after
	}{
		{"busy, plain attempt", "h 3", nil, "", 10000, Grant{Writer: "h"}, nil, false},
		{"busy, does not wait", "h 3", []string{"a"}, "", 0, Grant{Writer: "h"}, []string{"a"}, false},
		{"busy, joins", "h 3", []string{"a"}, "q", 10000, Grant{Writer: "h"}, []string{"a", "w"}, true},
		{"busy, still queued", "h 3", []string{"w", "a"}, "r", 10000, Grant{Writer: "h"}, []string{"w", "a"}, true},
		{"busy, skipped meanwhile", "h 3", []string{"a"}, "r", 10000, Grant{Writer: "h"}, []string{"a", "w"}, true},
		{"busy, not listening", "h 3", []string{"w"}, "x", 10000, Grant{Writer: "h"}, []string{"w"}, true},
		{"busy, not listening, skipped", "h 3", []string{"a"}, "x", 10000, Grant{Writer: "h"}, []string{"a"}, false},
		{"busy, by the gem", "0cc175b9c0f1b6a831c399e269772661", nil, "", 10000, Grant{Writer: "0cc175b9c0f1b6a831c399e269772661"}, nil, false},
		{"free, plain attempt", "", []string{"a"}, "", 10000, Grant{OK: true}, []string{"a"}, false},
		{"free, joins not", "", []string{"a"}, "q", 10000, Grant{OK: true}, []string{"a"}, false},
		{"free, leaves", "", []string{"a", "w"}, "r", 10000, Grant{OK: true}, []string{"a"}, false},
		{"free, leaves unheard", "", []string{"w", "a"}, "x", 10000, Grant{OK: true}, []string{"a"}, false},
		{"handed to us", "w 7", []string{"a"}, "r", 10000, Grant{OK: true, Fence: 7}, []string{"a"}, false},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				if tc.holder != "" {
					must(t, conn, "SET", "lock", tc.holder)
				}
				for _, tok := range tc.queue {
					enqueue(t, conn, "queue", tok, entry(tok, 1))
				}
				before := clockOf(t, conn)
				args := AttemptArgs{Token: "w", Lease: 10000, Entry: entry("w", 2), Op: tc.op, Expiry: int64(tc.expiry), Form: MutexArgs}
				reply, err := doScript(conn, lua.Acquire, with(mutexKeys, args.Argv()...)...)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ParseGrant(reply, true)
				tc.want.Free = tc.holder == "" && tc.op != "r" && tc.op != "x"
				if tc.want.OK && tc.want.Fence == 0 && err == nil { // a new fence
					newFence(t, got.Fence, before, 0)
					tc.want.Fence = got.Fence
				}
				if err != nil || !grantsEqual(got, tc.want) {
					t.Errorf("acquire = %+v, %v; want %+v", got, err, tc.want)
				}
				if token, fence := holderOf(t, conn, "lock"); got.OK && (token != "w" || fence != got.Fence) {
					t.Errorf("lock = %q %d; want w %d", token, fence, got.Fence)
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
				if tc.alive {
					if v, _ := entryOf(t, conn, "queue", "w"); v != entry("w", 2) {
						t.Errorf("w's entry = %q; want the one its attempt wrote, %q", v, entry("w", 2))
					}
				}
				if ttl, _ := redis.Int64(conn.Do("PTTL", "queue")); tc.alive && (ttl < int64(tc.expiry)-1000 || ttl > 2*int64(tc.expiry)) {
					t.Errorf("queue's PTTL = %d; want at least the waiter's expiry, %d, at most twice that", ttl, tc.expiry)
				}
			})
		}
	}
}

// A release hands the lock to the oldest live waiter whose Client listens,
// dropping the entries of those that do not, under a fence above its own,
// and frees it when none does.
func TestReleaseScript_handOff(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			psc := subscribe(t, pool, "wake:b")
			must(t, conn, "SET", "lock", "h 9000000000000000")
			enqueue(t, conn, "queue", "a", "x 10000 3100 4 wake:a")
			enqueue(t, conn, "queue", "b", "x 0 3100 5 wake:b")
			enqueue(t, conn, "queue", "c", "x 10000 3100 6 wake:c")

			next, err := redis.String(doScript(conn, lua.Release, with(mutexKeys, "", "h 9000000000000000")...))
			if err != nil || next != "b" {
				t.Fatalf("release = %q, %v; want b, the first waiter listening", next, err)
			}
			token, wu, ok := ParseWakeUp(message(t, psc))
			if !ok || token != "b" || wu.Attempt != 5 || wu.Fence <= 9000000000000000 {
				t.Errorf("wake-up = %q %+v; want b, attempt 5, a fence above h's", token, wu)
			}
			if token, fence := holderOf(t, conn, "lock"); token != "b" || fence != wu.Fence {
				t.Errorf("lock = %q %d; want b %d", token, fence, wu.Fence)
			}
			if ttl, _ := redis.Int64(conn.Do("PTTL", "lock")); ttl != -1 {
				t.Errorf("PTTL = %d; want -1 (b asked for no lease)", ttl)
			}
			if got := queued(t, conn, "queue"); !slices.Equal(got, []string{"c"}) {
				t.Errorf("queue = %q; want [c]", got)
			}

			freed, err := redis.Int64(doScript(conn, lua.Release, with(mutexKeys, "", Fenced("b", wu.Fence))...))
			if err != nil || freed != 1 {
				t.Errorf("release with no one listening = %d, %v; want 1", freed, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock", "queue", "queue:entries")); n != 0 {
				t.Errorf("%d of lock, queue and its entries left; want none", n)
			}
		})
	}
}

// A release passes over any number of dead entries, whose waiters' keys
// expired, or are not there, or hold no entry, without a message to them,
// and hands the lock to the live waiter behind them in one call.
func TestReleaseScript_skipsDeadEntries(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			psc := subscribe(t, pool, "chan")
			must(t, conn, "FLUSHALL")
			must(t, conn, "SET", "lock", "h 3")
			for i := range 200 {
				dead := fmt.Sprintf("dead%d", i)
				must(t, conn, "RPUSH", "queue", dead)
				switch {
				case i%3 == 1:
					setEntry(t, conn, "queue", dead, "x 0 1 1 chan", -time.Millisecond)
				case i%3 == 2:
					must(t, conn, "HSET", "queue:entries", dead, "not an entry")
				}
			}
			enqueue(t, conn, "queue", "live", "x 0 3100 1 chan")

			next, err := redis.String(doScript(conn, lua.Release, with(mutexKeys, "", "h 3")...))
			if err != nil || next != "live" {
				t.Fatalf("release = %q, %v; want live, behind 200 dead entries", next, err)
			}
			if token, _, _ := ParseWakeUp(message(t, psc)); token != "live" {
				t.Errorf("first message to %q; want live: none to the dead", token)
			}
			if token, _ := holderOf(t, conn, "lock"); token != "live" {
				t.Errorf("lock = %q; want live", token)
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
	must(t, conn, "SET", "lease:lock", "h 3")
	enqueue(t, conn, "lease:queue", "w", "x 5000 3100 1 lease:w")
	if _, err := doScript(conn, lua.Release, "lease:lock", "lease:queue", "lease:queue:entries", "", "h 3"); err != nil {
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
			enqueue(t, conn, "queue", "w", "x 0 3100 1 wake:w")
			enqueue(t, conn, "queue", "a", "x 0 3100 1 wake:a")
			if n, err := redis.Int64(doScript(conn, lua.Release, with(mutexKeys, "q", "w")...)); err != nil || n != 0 {
				t.Errorf("leave = %d, %v; want 0", n, err)
			}
			if got := queued(t, conn, "queue"); !slices.Equal(got, []string{"a"}) {
				t.Errorf("queue = %q; want [a]", got)
			}
			if alive(t, conn, "queue", "w") || !alive(t, conn, "queue", "a") {
				t.Errorf("keys of w and a there = %v, %v; want false, true", alive(t, conn, "queue", "w"), alive(t, conn, "queue", "a"))
			}
			must(t, conn, "SET", "lock", "w 8")
			if n, err := redis.Int64(doScript(conn, lua.Release, with(mutexKeys, "q", "w")...)); err != nil || n != 1 {
				t.Errorf("leave holding the lock = %d, %v; want 1 (released, a does not listen)", n, err)
			}
			if n, _ := redis.Int64(conn.Do("EXISTS", "lock", "queue", "queue:entries")); n != 0 {
				t.Errorf("%d of lock, queue and its entries left; want none", n)
			}
		})
	}
}

// A fence counter that an earlier version left, a number or not, changes
// nothing: fences go on above it, and the scripts leave it as it is.
func TestMutexScripts_earlierFenceCounter(t *testing.T) {
	for server, pool := range scriptServers(t) {
		for _, counter := range []string{"588", "not a number"} {
			t.Run(server+"/"+counter, func(t *testing.T) {
				conn := scriptConn(t, pool)
				must(t, conn, "FLUSHALL")
				must(t, conn, "SET", "fence", counter)
				before := clockOf(t, conn)
				reply, err := doScript(conn, lua.Acquire, with(mutexKeys, "w", 10000)...)
				if err != nil {
					t.Fatal(err)
				}
				g, err := ParseGrant(reply, true)
				if err != nil || !g.OK {
					t.Fatalf("acquire = %+v, %v; want the lock", g, err)
				}
				newFence(t, g.Fence, before, 588)
				if n, err := redis.Int64(doScript(conn, lua.Release, with(mutexKeys, "", Fenced("w", g.Fence))...)); err != nil || n != 1 {
					t.Errorf("release = %d, %v; want 1", n, err)
				}
				left, _ := redis.String(conn.Do("GET", "fence"))
				if n, _ := redis.Int64(conn.Do("EXISTS", "lock")); n != 0 || left != counter {
					t.Errorf("after the release: %d lock key, counter %q; want none, the counter as it was (%q)", n, left, counter)
				}
			})
		}
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
			must(t, conn, "SET", "lock", "mine 7", "PX", 100)
			reply, err := doScript(conn, lua.Acquire, with(mutexKeys, "mine", 60000, "", "", 0)...)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ParseGrant(reply, true); err != nil || !got.OK || got.Fence != 7 {
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
		form  ArgForm
		stale []string
		want  []any
	}{
		{"mutex attempt", MutexArgs, nil, nil},
		{"mutex take-over", MutexArgs, []string{"w:old"}, []any{"old"}},
		{"writer attempt", WriterArgs, nil, []any{"", ""}},
		{"writer take-over of readers", WriterArgs, []string{"r1", "r2"}, []any{"x", "", "r1", "r2"}},
		{"writer take-over of a writer", WriterArgs, []string{"w:old"}, []any{"x", "old"}},
		{"reader attempt", ReaderArgs, nil, []any{""}},
		{"reader take-over", ReaderArgs, []string{"w:old"}, []any{"old"}},
		{"permit attempt", PermitArgs, nil, []any{3, ""}},
		{"permit take-over", PermitArgs, []string{"p1"}, []any{3, "p1"}},
	} {
		a := AttemptArgs{Token: "tok", Lease: 5, Entry: "e", Op: "q", Expiry: 7, Form: tc.form, Stale: tc.stale, Permits: 3}
		if got, want := a.Argv(), append(slices.Clone(head), tc.want...); !slices.Equal(got, want) {
			t.Errorf("%s: argv() = %q; want %q", tc.name, got, want)
		}
	}
	// An attempt with no op and no take-over sends the lean form: its token
	// and lease, then what its script reads besides (a writer's expiry, a
	// Semaphore's permits); a reader's, or a take-over, the whole head.
	noOp := []any{"tok", int64(5), "", "", int64(7)}
	for _, tc := range []struct {
		name  string
		form  ArgForm
		stale []string
		want  []any
	}{
		{"mutex attempt", MutexArgs, nil, []any{"tok", int64(5)}},
		{"writer attempt", WriterArgs, nil, []any{"tok", int64(5), int64(7)}},
		{"permit attempt", PermitArgs, nil, []any{"tok", int64(5), 3}},
		{"reader attempt", ReaderArgs, nil, append(slices.Clone(noOp), "")},
		{"mutex take-over", MutexArgs, []string{"w:old"}, append(slices.Clone(noOp), "old")},
		{"writer take-over", WriterArgs, []string{"w:old"}, append(slices.Clone(noOp), "x", "old")},
		{"permit take-over", PermitArgs, []string{"p1"}, append(slices.Clone(noOp), 3, "p1")},
	} {
		a := AttemptArgs{Token: "tok", Lease: 5, Expiry: 7, Form: tc.form, Stale: tc.stale, Permits: 3}
		if got := a.Argv(); !slices.Equal(got, tc.want) {
			t.Errorf("%s with no op: argv() = %q; want %q", tc.name, got, tc.want)
		}
	}
}

// The wire formats that Go and Lua share agree: a holder's value (fenced,
// CutFence; internal/lua/fenced.lua, fenceOf), and a queue entry and its hand-off
// message (QueueEntry, nextWaiter, offer, ParseWakeUp).
func TestWireFormats(t *testing.T) {
	values := driver.NewScript(0, lua.Source("fenced")+lua.Source("fence_of")+`
return {fenced(ARGV[1], tonumber(ARGV[2])), fenceOf(ARGV[3]) or 0}
`)
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			for _, fence := range []uint64{1, 1795836806281263, 1<<53 - 1} {
				r, err := redis.Values(doScript(conn, values, "tok", fence, Fenced("tok", fence)))
				if err != nil {
					t.Fatal(err)
				}
				lua, _ := redis.String(r[0], nil)
				read, _ := redis.Uint64(r[1], nil)
				if lua != Fenced("tok", fence) || read != fence {
					t.Errorf("Lua made %q and read %d; Go makes %q of fence %d", lua, read, Fenced("tok", fence), fence)
				}
				if token, f := CutFence(lua); token != "tok" || f != fence {
					t.Errorf("cutFence(%q) = %q, %d; want tok, %d", lua, token, f, fence)
				}
			}
			for _, v := range []string{"tok", "tok x", "tok 9007199254740992", "a b c", "tok 7*", "tok*", "tok 7**", "tok 7 *"} {
				r, _ := redis.Values(doScript(conn, values, "", 0, v))
				read, _ := redis.Uint64(r[1], nil)
				if _, f := CutFence(v); f != read {
					t.Errorf("fence of %q: Lua %d, Go %d", v, read, f)
				}
			}

			must(t, conn, "FLUSHALL")
			psc := subscribe(t, pool, "wake:{x}:c1")
			must(t, conn, "SET", "lock", Fenced("h", 7))
			entry := QueueEntry(EntryExclusive, 1500*time.Millisecond, 3100*time.Millisecond, 42, "wake:{x}:c1")
			enqueue(t, conn, "queue", "w", entry)
			if next, err := redis.String(doScript(conn, lua.Release, with(mutexKeys, "", Fenced("h", 7))...)); err != nil || next != "w" {
				t.Fatalf("release = %q, %v; want the lock handed to w", next, err)
			}
			token, wu, ok := ParseWakeUp(message(t, psc))
			holder, fence := holderOf(t, conn, "lock")
			ttl, _ := redis.Int64(conn.Do("PTTL", "lock"))
			if !ok || token != "w" || wu.Attempt != 42 || holder != "w" || fence != wu.Fence || ttl <= 1000 || ttl > 1500 {
				t.Errorf("message to %q %+v (ok %v), lock %q %d with PTTL %d; want w's attempt 42, its fence, and its claim, 1500 ms",
					token, wu, ok, holder, fence, ttl)
			}
		})
	}
}

// A release whose offers nobody hears, to waiters whose Clients stopped
// listening, spends no fence on them: the waiter that takes the lock gets
// the fence of one grant, so that a later grant, at a clock only a little
// further on, is still above it. Run where Redis's clock stands still.
func TestHandOffs_offersNobodyHeardSpendNoFence(t *testing.T) {
	mr := miniredis.RunT(t)
	now := time.Now().Truncate(time.Second)
	mr.SetTime(now)
	clock := uint64(now.UnixMicro())
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	conn := scriptConn(t, pool)
	psc := subscribe(t, pool, "chan")
	cases := []struct {
		name    string
		kind    string // of the waiters' entries
		queue   string
		hold    func() // makes "h" the holder, under fence clock
		release []any
	}{
		{"Mutex", EntryExclusive, "queue", func() {
			must(t, conn, "SET", "lock", Fenced("h", clock))
		}, with(mutexKeys, "", Fenced("h", clock))},
		{"RWMutex", EntryExclusive, "rwqueue", func() {
			must(t, conn, "SET", "w", Fenced("h", clock))
		}, with(rwKeys, "", "h")},
		{"Semaphore", "1", "semqueue", func() {
			must(t, conn, "ZADD", "permits", "+inf", "h")
			must(t, conn, "HSET", "fences", "h", clock, "fence", clock)
		}, with(semKeys, "", "h")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			must(t, conn, "FLUSHALL")
			c.hold()
			for i := range 3 {
				enqueue(t, conn, c.queue, fmt.Sprintf("gone%d", i), c.kind+" 0 3600000 1 nobody")
			}
			enqueue(t, conn, c.queue, "live", c.kind+" 0 3600000 1 chan")
			must2(doScript(conn, releaseScriptOf(c.name), c.release...))
			token, wu, _ := ParseWakeUp(message(t, psc))
			if token != "live" || wu.Fence != clock+1 {
				t.Errorf("message to %q, fence %d; want live, %d: one above the releaser's, none spent on the three offers nobody heard",
					token, wu.Fence, clock+1)
			}
		})
	}
}

// A hold's release passes its Client's channel ("here"): the first live
// waiter, when it listens there, is handed the lock in the reply, its
// message in place of its token, with nothing published and no
// subscriber asked for; a waiter of another Client is told by a message,
// and the reply is its token.
func TestHandOffs_toTheReleasersClientInTheReply(t *testing.T) {
	for server, pool := range scriptServers(t) {
		t.Run(server, func(t *testing.T) {
			conn := scriptConn(t, pool)
			psc := subscribe(t, pool, "chan")
			clock := clockOf(t, conn)
			cases := []struct {
				name  string
				kind  string // of the waiters' entries
				queue string
				hold  func(holder string) []any // makes holder the holder; returns its release's KEYS and tokens
			}{
				{"Mutex", EntryExclusive, "queue", func(holder string) []any {
					must(t, conn, "SET", "lock", Fenced(holder, clock))
					return with(mutexKeys, Fenced(holder, clock))
				}},
				{"RWMutex", EntryExclusive, "rwqueue", func(holder string) []any {
					must(t, conn, "SET", "w", Fenced(holder, clock))
					return with(rwKeys, holder)
				}},
				{"Semaphore", "1", "semqueue", func(holder string) []any {
					must(t, conn, "DEL", "permits", "fences")
					must(t, conn, "ZADD", "permits", "+inf", holder)
					must(t, conn, "HSET", "fences", holder, clock, "fence", clock)
					return with(semKeys, holder)
				}},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					must(t, conn, "FLUSHALL")
					release := c.hold("h")
					enqueue(t, conn, c.queue, "mine", c.kind+" 0 3600000 4 here")
					enqueue(t, conn, c.queue, "theirs", c.kind+" 0 3600000 1 chan")
					keys, tokens := release[:len(release)-1], release[len(release)-1]
					reply, err := redis.String(doScript(conn, releaseScriptOf(c.name), with(keys, "here", tokens)...))
					token, wu, ok := ParseWakeUp(reply)
					if err != nil || !ok || token != "mine" || wu.Attempt != 4 || wu.Fence <= clock {
						t.Fatalf("release = %q, %v; want mine's hand-off message, attempt 4, a fence above %d", reply, err, clock)
					}

					release = c.hold("mine")
					keys, tokens = release[:len(release)-1], release[len(release)-1]
					if c.name == "Mutex" {
						tokens = Fenced("mine", wu.Fence)
						must(t, conn, "SET", "lock", tokens)
					}
					reply, err = redis.String(doScript(conn, releaseScriptOf(c.name), with(keys, "here", tokens)...))
					if err != nil || reply != "theirs" {
						t.Fatalf("second release = %q, %v; want theirs, a token: its Client is another", reply, err)
					}
					if token, _, _ := ParseWakeUp(message(t, psc)); token != "theirs" {
						t.Errorf("message to %q; want theirs, and none before it", token)
					}
				})
			}
		})
	}
}

// releaseScriptOf returns the release script of a primitive, by name.
func releaseScriptOf(primitive string) *driver.Script {
	return map[string]*driver.Script{"Mutex": lua.Release, "RWMutex": lua.RWUnlock, "Semaphore": lua.SemRelease}[primitive]
}

// lua.Acquire writes the holder's value itself, without fenced: at a
// clock whose microseconds have fewer than six digits it pads them as
// fenced writes the fence it replies.
func TestAcquireScript_writesTheValueAsFencedDoes(t *testing.T) {
	mr := miniredis.RunT(t)
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	conn := scriptConn(t, pool)
	for _, us := range []int{0, 7, 42_000, 99_999, 100_000, 999_999} {
		must(t, conn, "FLUSHALL")
		at := time.Unix(1795836806, int64(us)*1000)
		mr.SetTime(at)
		fence, err := redis.Uint64(doScript(conn, lua.Acquire, with(mutexKeys, "tok", 1000)...))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := redis.String(conn.Do("GET", "lock"))
		if fence != uint64(at.UnixMicro()) || v != Fenced("tok", fence) {
			t.Errorf("at %d µs: fence %d, lock %q; want %d, %q", us, fence, v, at.UnixMicro(), Fenced("tok", uint64(at.UnixMicro())))
		}
	}
}

// The lean grant of an attempt with no op writes what the whole script
// writes for a queued waiter: the same keys, values and expiries, the
// fence aside. Also for a writer that counted among the waiting writers,
// and with no lease.
func TestAcquireScripts_leanGrantWritesAsTheWholeScriptDoes(t *testing.T) {
	const waiting = 4102444800000 // a waiting writer's expiry, in 2100, in ms
	cases := []struct {
		name   string
		script *driver.Script
		keys   []any
		form   ArgForm
		before []any // a command run before each attempt; nil for none
	}{
		{"Mutex", lua.Acquire, mutexKeys, MutexArgs, nil},
		{"RWMutex", lua.RWLock, rwKeys, WriterArgs, nil},
		{"RWMutex, a waiting writer", lua.RWLock, rwKeys, WriterArgs, []any{"ZADD", "ww", waiting, "tok", waiting, "other"}},
		{"Semaphore", lua.SemAcquire, semKeys, PermitArgs, nil},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			for _, lease := range []int64{60000, 0} {
				t.Run(fmt.Sprintf("%s/%s/lease %d", server, tc.name, lease), func(t *testing.T) {
					conn := scriptConn(t, pool)
					lean := AttemptArgs{Token: "tok", Lease: lease, Expiry: 100, Form: tc.form, Permits: 1}
					whole := lean
					whole.Entry, whole.Op = entry("tok", 1), "x" // queued, not listening
					var states [2]lockState
					var fences [2]uint64
					var took time.Duration // the longest from a script to its state read
					for i, a := range []AttemptArgs{lean, whole} {
						must(t, conn, "FLUSHALL")
						if tc.before != nil {
							must(t, conn, tc.before[0].(string), tc.before[1:]...)
						}
						sent := time.Now()
						reply, err := doScript(conn, tc.script, with(tc.keys, a.Argv()...)...)
						if err != nil {
							t.Fatal(err)
						}
						g, err := ParseGrant(reply, true)
						if _, bare := reply.(int64); err != nil || !g.OK || bare != (i == 0) {
							t.Fatalf("attempt %q = %#v, %v; want a grant, the bare fence exactly for the lean form", a.Argv(), reply, err)
						}
						states[i], fences[i] = stateOf(t, conn, tc.keys, g.Fence), g.Fence
						took = max(took, time.Since(sent))
					}
					// Times apart by as long as the grants were, Redis's
					// clock in ms, and its rounding; and, as miniredis
					// reads an expiry as its TTL from the moment it is
					// asked, by as long as a script and its read took.
					apart := int64(fences[1]/1000-fences[0]/1000) + 2 + took.Milliseconds() + 1
					if !states[0].like(states[1], apart) {
						t.Errorf("lean grant wrote %+v; the whole script %+v", states[0], states[1])
					}
				})
			}
		}
	}
}

// A lockState is what a lock's keys hold, read beside the fence of a
// grant: their contents with the fence as "F", and their times (scores,
// expiries) in ms from the fence's.
type lockState struct {
	contents map[string]string
	times    map[string]int64
}

// stateOf reads the state of keys beside fence.
func stateOf(t *testing.T, conn redis.Conn, keys []any, fence uint64) lockState {
	t.Helper()
	s := lockState{contents: map[string]string{}, times: map[string]int64{}}
	ms := int64(fence / 1000)
	for _, k := range keys {
		key := k.(string)
		kind, err := redis.String(conn.Do("TYPE", key))
		if err != nil {
			t.Fatal(err)
		}
		var read []string
		switch kind {
		case "none":
			continue
		case "string":
			v, _ := redis.String(conn.Do("GET", key))
			read = []string{v}
		case "hash": // field and value pairs, in order: a hash has none
			r, _ := redis.Strings(conn.Do("HGETALL", key))
			for i := 0; i+1 < len(r); i += 2 {
				read = append(read, r[i]+" "+r[i+1])
			}
			slices.Sort(read)
		case "list":
			read, _ = redis.Strings(conn.Do("LRANGE", key, 0, -1))
		case "zset":
			r, _ := redis.Strings(conn.Do("ZRANGE", key, 0, -1, "WITHSCORES"))
			for i := 0; i+1 < len(r); i += 2 {
				score, err := strconv.ParseFloat(r[i+1], 64)
				if err != nil || math.IsInf(score, 1) {
					read = append(read, r[i]+" "+r[i+1])
					continue
				}
				read = append(read, r[i])
				s.times[key+" "+r[i]] = int64(score) - ms
			}
		}
		s.contents[key] = kind + " " + strings.ReplaceAll(strings.Join(read, " "), strconv.FormatUint(fence, 10), "F")
		if at, _ := redis.Int64(conn.Do("PEXPIRETIME", key)); at >= 0 {
			s.times[key] = at - ms
		} else {
			s.contents[key] += ", no expiry"
		}
	}
	return s
}

// like reports whether s and o hold the same, their times within apart ms.
func (s lockState) like(o lockState, apart int64) bool {
	if !maps.Equal(s.contents, o.contents) || len(s.times) != len(o.times) {
		return false
	}
	for k, v := range s.times {
		w, ok := o.times[k]
		if !ok || v-w > apart || w-v > apart {
			return false
		}
	}
	return true
}
