package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// TestMain makes the test binary a worker when the coordinator of
// TestTorture_short starts it as one.
func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(runWorker(spec))
	}
	redistest.Main(m)
}

// requireRedis skips the test when redis-server is missing, or fails it
// when UNCOMPLICATED_REQUIRE_REDIS=1.
func requireRedis(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv(redistest.RequireEnv) == "1" {
			t.Fatalf("redis-server is not on PATH and %s=1", redistest.RequireEnv)
		}
		t.Skipf("redis-server is not on PATH; %s=1 makes this a failure", redistest.RequireEnv)
	}
}

// TestTorture_short runs the whole torture briefly on each deployment,
// every fault kind of it at least once, on every kind of lock, and checks
// the pass criteria: on the lock server through redigo (10 s) and through
// go-redis (4 s), and on a Cluster (6 s, or longer: the first of each fault
// kind is always injected, and a master restarted takes 2 s to serve
// again). Two permits for the goroutines that share the Semaphore make
// them wait. Beside each worker's 6 goroutines, 3 hurried callers lock the
// Mutexes (see hurried.go).
func TestTorture_short(t *testing.T) {
	requireRedis(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		client   string
		cluster  bool
		keys     int // Mutexes: on a Cluster, one on each master
		duration time.Duration
	}{
		{"redigo", clientRedigo, false, 2, 10 * time.Second},
		{"goredis", clientGoRedis, false, 2, 4 * time.Second},
		{"cluster", clientGoRedis, true, 3, 6 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			opts := options{
				Procs: 2, Goroutines: 6, Hurried: 3, Keys: tt.keys, RWKeys: 1, SemKeys: 1, Permits: 2,
				Duration: tt.duration, Timeout: 400 * time.Millisecond, Seed: uint64(time.Now().UnixNano()),
				Faults: faultKinds(tt.cluster), Client: tt.client, Cluster: tt.cluster,
				Verbose: true, Log: testLog{t}, Exe: exe,
			}
			t.Logf("seed %d", opts.Seed)
			rec, err := run(opts)
			if err != nil {
				t.Fatalf("run() = %v", err)
			}
			s := rec.summarize(opts)
			var report strings.Builder
			s.print(&report, rec, opts)
			t.Log("\n" + report.String())
			for _, f := range s.Failures {
				t.Errorf("FAIL: %s", f)
			}
			for _, k := range opts.Faults {
				if s.Faults[k] == 0 {
					t.Errorf("fault %s injected 0 times; want at least 1", k)
				}
			}
			if f := s.Roles[rolePermit]; f.Manual == 0 || f.Manual == f.Completed {
				t.Errorf("%d of %d permit sections with Acquire and Release; want some, not all", f.Manual, f.Completed)
			}
			if f := s.Roles[colHurried]; f.GaveUp == 0 || f.Completed == 0 {
				t.Errorf("hurried callers gave up %d calls and completed %d sections; want some of each", f.GaveUp, f.Completed)
			}
			if tt.cluster {
				checkPlacement(t, rec.Masters)
			}
		})
	}
}

// checkPlacement checks that every master holds some locks and that the
// faulted one, the first, holds one of each kind.
func checkPlacement(t *testing.T, masters []masterLocks) {
	t.Helper()
	for i, m := range masters {
		if len(m.Locks) == 0 {
			t.Errorf("master %d (%s) holds no lock; want some", i, m.Addr)
		}
	}
	for _, prefix := range namePrefixes {
		n := 0
		for _, name := range masters[0].Locks {
			if strings.TrimRight(name, "0123456789") == lockName(prefix) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("the faulted master holds %v, no lock:%s<n>; want one", masters[0].Locks, prefix)
		}
	}
}

// testLog writes the coordinator's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
