package uncomplicated_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// TestDefaultLease_staleAtTheTimeout on a real redis-server, whose TTLs run
// on its own clock. The waiter comes d/2 after the holder took the lock: at
// its timeout, 1.5d after that, the lease has not ended, so the waiter
// finds the holder stale and, with WithTakeOver, takes it over rather than
// acquiring a lock that expired.
func TestRedis_defaultLease_staleAtTheTimeout(t *testing.T) {
	const d = 300 * time.Millisecond
	for _, p := range primitives {
		for _, policy := range policies {
			t.Run(p.name+"/"+fmt.Sprintf("takeover=%v", policy), func(t *testing.T) {
				r := newRig(t)
				held := p.take(t, r.client(uncomplicated.WithTimeout(d)), "report").fence
				time.Sleep(d / 2)
				rec := &logRecorder{}
				waiter := r.client(uncomplicated.WithTimeout(d), uncomplicated.WithTakeOver(policy),
					uncomplicated.WithLogger(slog.New(rec)))
				start := time.Now()
				f, err := p.wait(context.Background(), waiter, "report")
				took := time.Since(start)
				checkStalePolicy(t, policy, waited{f, err}, held)
				if took < d || took >= 2*d {
					t.Errorf("the waiter returned after %v; want between %v and the lease, %v", took, d, 2*d)
				}
				if policy && !rec.has("taken over") {
					t.Errorf("records = %q; want a take-over, not an acquisition of an expired lock", rec.all())
				}
			})
		}
	}
}
