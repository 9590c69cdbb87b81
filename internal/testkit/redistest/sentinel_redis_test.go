package redistest

import (
	"testing"
	"time"
)

func TestSentinel_Failover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := StartSentinel(t)
	t.Logf("StartSentinel took %v", time.Since(start))
	if got, err := s.CurrentMaster(); got != s.Master.Addr || err != nil {
		t.Fatalf("CurrentMaster() = %q, %v; want %s", got, err, s.Master.Addr)
	}
	// Back and forth: Failover leaves the sentinels ready for the next.
	for _, want := range []*Server{s.Replica, s.Master} {
		start = time.Now()
		if err := s.Failover(); err != nil {
			t.Fatal(err)
		}
		t.Logf("Failover took %v", time.Since(start))
		if got, err := s.CurrentMaster(); got != want.Addr || err != nil {
			t.Errorf("CurrentMaster() = %q, %v; want %s", got, err, want.Addr)
		}
	}
}
