package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
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

// TestTorture_short runs the whole torture briefly, every fault kind at
// least once, on every kind of lock, and checks the pass criteria. Two
// permits for the goroutines that share the Semaphore make them wait.
func TestTorture_short(t *testing.T) {
	requireRedis(t)
	defer goleak.VerifyNone(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts := options{
		Procs: 2, Goroutines: 6, Keys: 2, RWKeys: 1, SemKeys: 1, Permits: 2,
		Duration: 10 * time.Second, Timeout: 400 * time.Millisecond,
		Seed: uint64(time.Now().UnixNano()), Faults: faultKinds, Verbose: true, Log: testLog{t}, Exe: exe,
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
	for _, k := range faultKinds {
		if s.Faults[k] == 0 {
			t.Errorf("fault %s injected 0 times; want at least 1", k)
		}
	}
	if f := s.Roles[rolePermit]; f.Manual == 0 || f.Manual == f.Completed {
		t.Errorf("%d of %d permit sections with Acquire and Release; want some, not all", f.Manual, f.Completed)
	}
}

// testLog writes the coordinator's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
