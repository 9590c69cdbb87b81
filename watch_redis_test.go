package uncomplicated_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A Redis that restarts without persistence forgets the lock. The Client
// sees the new run_id and closes the Lost channels of the hold and of a
// permit without a call
// from the holder. Here the "restart" is a pool switched to a second
// server, which has another run_id and no keys.
func TestClient_restartLosesHolds(t *testing.T) {
	before, after := redistest.Start(t), redistest.Start(t)
	pool, switchTo := switchingPool(t, before)
	client := uncomplicated.NewClient(redigo.New(pool))
	t.Cleanup(func() { _ = client.Close() })
	m := mustNew(t, client, Order{1})
	mustLock(t, m)
	lost := m.Lost()
	p := mustAcquire(t, mustSemaphore(t, client, 1))

	polls := 0 // each counts as an INFO call itself
	eventually(t, "the run_id read", func() bool {
		polls++
		return infoCalls(t, before) >= polls
	})
	if uncomplicated.IsClosed(lost) {
		t.Fatal("Lost() closed before any restart")
	}
	switchTo(after)
	eventually(t, "the hold lost", func() bool { return uncomplicated.IsClosed(lost) })
	eventually(t, "the permit lost", func() bool { return uncomplicated.IsClosed(p.Lost()) })
	if ok, err := m.Held(context.Background()); ok || err != nil {
		t.Errorf("Held() after the restart = %v, %v; want false, nil", ok, err)
	}
}

// switchingPool returns a pool on s, and a func that switches it to
// another server, as a failover or a restart would. It keeps no idle
// connections: every command dials the current server.
func switchingPool(t *testing.T, s *redistest.Server) (*redis.Pool, func(*redistest.Server)) {
	var addr atomic.Value
	addr.Store(s.Addr)
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr.Load().(string))
	}}
	t.Cleanup(func() { _ = pool.Close() })
	return pool, func(s *redistest.Server) { addr.Store(s.Addr) }
}

// infoCalls is how many INFO commands s has run.
func infoCalls(t *testing.T, s *redistest.Server) int {
	return commandCalls(t, s, "info")
}

// commandCalls is how many cmd commands (lower case) s has run.
func commandCalls(t *testing.T, s *redistest.Server, cmd string) int {
	stats, _ := redis.String(s.Do(t, "INFO", "commandstats"), nil)
	for line := range strings.SplitSeq(stats, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n := 0
			for _, c := range rest {
				if c < '0' || c > '9' {
					break
				}
				n = n*10 + int(c-'0')
			}
			return n
		}
	}
	return 0
}
