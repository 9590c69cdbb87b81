//go:build unix

package redistest

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Not parallel: it measures the process's CPU time, and the goroutines
// that parallel tests start would blur the count of goroutines.
func TestBusyCPUs(t *testing.T) {
	const perCPU, period = 2, 200 * time.Millisecond
	before := runtime.NumGoroutine()
	stop := BusyCPUs(t, perCPU)
	if got, want := runtime.NumGoroutine()-before, perCPU*runtime.NumCPU(); got < want {
		t.Errorf("BusyCPUs(%d) started %d goroutines; want %d", perCPU, got, want)
	}
	wall, cpu := time.Now(), cpuTime(t)
	time.Sleep(period)
	busy := float64(cpuTime(t)-cpu) / float64(time.Since(wall))
	// All CPUs busy, unless other processes on a shared machine take
	// their share; an idle process uses next to none.
	if want := 0.25; busy < want {
		t.Errorf("under BusyCPUs, the process used %.2f CPUs; want at least %.2f", busy, want)
	}
	t.Logf("under BusyCPUs, the process used %.2f of %d CPUs", busy, runtime.NumCPU())
	stop()
	stop() // again: no effect
	// A goroutine that has called Done still counts until it has returned.
	if err := await(time.Second, nil, func() error {
		if got := runtime.NumGoroutine(); got > before {
			return fmt.Errorf("after stop, %d goroutines; want at most %d as before", got, before)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}
