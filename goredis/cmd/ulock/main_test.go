package main

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/ulocktest"
)

// The tests run the go-redis build of ulock, built once by TestMain, as
// real processes; those of main_redis_test.go against one redis-server, a
// Cluster and Sentinel.

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // the tests' own go-redis clients, as ulock's
	ulocktest.Main(m)
}

// ulock runs ulock with args, for at most 20 s.
func ulock(t *testing.T, args ...string) ulocktest.Result {
	t.Helper()
	return ulocktest.Run(t, nil, args...)
}

func TestUlock_unreachable(t *testing.T) {
	for _, args := range [][]string{{"status", "job"}, {"run", "--wait", "0", "job", "--", "true"}, {"run", "job", "--", "true"}} {
		r := ulock(t, append(args[:1:1], append([]string{"--redis", "redis://127.0.0.1:1"}, args[1:]...)...)...)
		if r.Code != 1 || strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, "connection refused") {
			t.Errorf("ulock %q: exit %d, stderr %q; want 1 and one line", args, r.Code, r.Stderr)
		}
	}
}

func TestUlock_badURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"redis+sentinel://127.0.0.1:1", "needs ?master_name=NAME"},
		{"redis+cluster://127.0.0.1:1?bogus=1", "bogus"},
		{"redis://127.0.0.1:1/x", "invalid database number"},
		{"unix:///tmp/redis.sock", `unknown scheme "unix"`},
	} {
		r := ulock(t, "status", "--redis", tc.url, "job")
		if r.Code != 2 || strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("status --redis %s: exit %d, stderr %q; want 2 and one line with %q", tc.url, r.Code, r.Stderr, tc.want)
		}
	}
}
