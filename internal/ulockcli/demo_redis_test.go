package ulockcli_test

import (
	"context"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

func TestDemo_realRedis(t *testing.T) {
	srv := redistest.Shared(t)
	t.Setenv("REDIS_URL", "redis://"+srv.Addr+"/0")
	out := runDemoT(t, quick...)
	wantLines(t, out, "Redis at redis://"+srv.Addr, "taken over", "store REJECTED", "; 0 jobs gave up")
	conn, err := srv.Pool(t).GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if keys, err := redis.Strings(conn.Do("KEYS", "ulock-demo:*")); err != nil || len(keys) > 0 {
		t.Errorf("keys left on the user's Redis = %q, %v; want none", keys, err)
	}
}
