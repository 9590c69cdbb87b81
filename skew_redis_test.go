package uncomplicated_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A failover to a replica whose clock is 5s ahead of the master's, or
// behind it, is told: the Client that holds a lock compares Redis's clock
// with its own at its restart watch's reading, and logs a Warn naming the
// step and the node within 3s of the new master answering. Before, nothing
// was logged while leases ran 5s short on the one ahead and fences stepped
// back on the one behind.
func TestRedis_skewedClockTold(t *testing.T) {
	for _, shift := range []time.Duration{5 * time.Second, -5 * time.Second} {
		t.Run(shift.String(), func(t *testing.T) {
			master := redistest.Start(t)
			host, port, _ := net.SplitHostPort(master.Addr)
			replica := redistest.StartShifted(t, shift, "--replicaof", host, port)
			var addr atomic.Value // where the pool dials: the master, then the replica
			addr.Store(master.Addr)
			pool := &redis.Pool{MaxIdle: 4, DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr.Load().(string))
			}}
			t.Cleanup(func() { _ = pool.Close() })
			rec := &logRecorder{}
			client := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithLogger(slog.New(rec)))
			t.Cleanup(func() { _ = client.Close() })
			m := mustNew(t, client, Order{900})
			mustLock(t, m)
			time.Sleep(1500 * time.Millisecond) // the restart watch has read the master's clock
			if rec.has("Redis clock stepped") {
				t.Fatalf("a Warn of a clock step before the failover: %v", rec.all())
			}
			replica.Do(t, "REPLICAOF", "NO", "ONE")
			addr.Store(replica.Addr)
			master.Kill() // its connections fail, and the pool dials the replica
			failedOver := time.Now()
			deadline := failedOver.Add(3 * time.Second)
			for !rec.has("Redis clock stepped") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if !rec.has("Redis clock stepped") {
				t.Fatalf("no Warn of the clock step 3s after the failover; logged: %v", rec.all())
			}
			t.Logf("Warn of the clock step %v after the failover", time.Since(failedOver).Round(time.Millisecond))
			a := rec.attrsOf("Redis clock stepped")
			step, _ := time.ParseDuration(a["step"])
			if (step-shift).Abs() > 500*time.Millisecond || !strings.HasPrefix(a["node"], "run_id ") {
				t.Errorf("Warn of the clock step: step %s, node %q; want about %v and the node's run_id", a["step"], a["node"], shift)
			}
		})
	}
}
