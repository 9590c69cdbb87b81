package redistest

import (
	"testing"
	"time"
)

// With Sentinel's default periods, Switch returns once the sentinels and
// the promoted replica agree, while the old master is still a master;
// AwaitReplica returns once it is the new master's replica, so that the
// next Switch, back, can run.
func TestSentinelDefaults_Switch(t *testing.T) {
	t.Parallel()
	s := StartSentinelDefaults(t)
	for _, want := range []*Server{s.Replica, s.Master} {
		start := time.Now()
		old, next, err := s.Switch()
		if err != nil {
			t.Fatal(err)
		}
		switched := time.Now()
		if next != want {
			t.Fatalf("Switch promoted %s; want %s", next.Addr, want.Addr)
		}
		if got, err := s.CurrentMaster(); got != want.Addr || err != nil {
			t.Fatalf("CurrentMaster() after Switch = %q, %v; want %s", got, err, want.Addr)
		}
		if role := old.role(); role != "master" && role != "slave" {
			t.Fatalf("the old master %s has role %q", old.Addr, role)
		}
		if err := s.AwaitReplica(old, next); err != nil {
			t.Fatal(err)
		}
		if role := old.role(); role != "slave" {
			t.Fatalf("the old master %s has role %q after AwaitReplica; want slave", old.Addr, role)
		}
		t.Logf("%s -> %s: Switch took %v, AwaitReplica %v more", old.Addr, next.Addr,
			switched.Sub(start).Round(time.Millisecond), time.Since(switched).Round(time.Millisecond))
	}
}
