package redistest

import (
	"runtime"
	"sync"
	"testing"
)

// BusyCPUs starts perCPU spinning goroutines per CPU (runtime.NumCPU), so
// that a test can check how timers and timeouts behave under load. They
// keep the process's threads busy, competing with its other goroutines and
// with other processes, redis-server among them. The returned stop ends them and waits for them; it may be
// called more than once, and runs at cleanup. perCPU must be at least 1.
func BusyCPUs(tb testing.TB, perCPU int) (stop func()) {
	tb.Helper()
	if perCPU < 1 {
		tb.Fatalf("redistest: BusyCPUs(%d); want at least 1 per CPU", perCPU)
	}
	quit := make(chan struct{})
	var spinners sync.WaitGroup
	for range perCPU * runtime.NumCPU() {
		spinners.Add(1)
		go func() {
			defer spinners.Done()
			spin(quit)
		}()
	}
	stop = sync.OnceFunc(func() {
		close(quit)
		spinners.Wait()
	})
	tb.Cleanup(stop)
	return stop
}

// spin polls quit until it is closed: a busy loop, which the runtime
// preempts like any other goroutine.
func spin(quit <-chan struct{}) {
	for {
		select {
		case <-quit:
			return
		default:
		}
	}
}
