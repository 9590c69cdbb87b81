package uncomplicated_test

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A Redis user whose ACL allows only the locks' keys and channels (those
// under the prefix) still gets wake-ups: the Client's probe for sharded
// pub/sub publishes under the prefix too, so its waiters listen and queue.
func TestRedis_aclOnlyForTheLocks(t *testing.T) {
	srv := redistest.Start(t)
	srv.Do(t, "ACL", "SETUSER", "locker", "on", ">secret", "~app:*", "&app:*", "+@all")
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", srv.Addr, redis.DialUsername("locker"), redis.DialPassword("secret"))
	}}
	t.Cleanup(func() { _ = pool.Close() })
	c := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithPrefix("app"), uncomplicated.WithTimeout(10*time.Second))
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	holder, _ := uncomplicated.New(c, uncomplicated.Named("acl"))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter, _ := uncomplicated.New(c, uncomplicated.Named("acl"))
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	queue := "app:queue:{" + holder.Name() + "}"
	deadline := time.Now().Add(5 * time.Second)
	for n, _ := redis.Int(srv.Do(t, "LLEN", queue), nil); n != 1; n, _ = redis.Int(srv.Do(t, "LLEN", queue), nil) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never queued: its Client does not listen")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
