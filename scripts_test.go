package uncomplicated

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

// The scripts' rules, run directly on miniredis and on a real server.

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
		{"another waiter won", "winner", "old", outcome{holder: "winner"}, "winner", 7},
	}
	for server, pool := range scriptServers(t) {
		for _, tc := range cases {
			t.Run(server+"/"+tc.name, func(t *testing.T) {
				conn, err := pool.GetContext(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				do(t, conn, "FLUSHALL")
				do(t, conn, "SET", "fence", 7)
				if tc.holder != "" {
					do(t, conn, "SET", "lock", tc.holder)
				}
				reply, err := takeOverScript.Do(conn, "lock", "fence", tc.stale, "new", 0)
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
			conn, err := pool.GetContext(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			do(t, conn, "SET", "lock", "b")
			steps := []struct {
				script *redis.Script
				args   []any
				want   int64
				value  string
			}{
				{refreshScript, []any{"lock", 0, "c", "x", "y"}, 0, "b"},
				{refreshScript, []any{"lock", 0, "c", "a", "b"}, 1, "c"},
				{releaseScript, []any{"lock", "a", "b"}, 0, "c"},
				{releaseScript, []any{"lock", "b", "c"}, 1, ""},
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

func do(t *testing.T, conn redis.Conn, cmd string, args ...any) {
	t.Helper()
	if _, err := conn.Do(cmd, args...); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
}
