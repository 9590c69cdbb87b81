package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// slowEnv runs the slow reproductions of library bugs the torture found,
// now fixed; the library's own tests cover them fast.
const slowEnv = "TORTURE_SLOW"

// TestDo_frozenPastLeaseAndDeadline reproduces what the 5-minute torture
// found as a stopped holder taken over whose Do returned only "context
// deadline exceeded". fn is frozen (a child SIGSTOPs this process and
// SIGCONTs it a second later) past its 300 ms lease and its ctx's 400 ms
// deadline: the lease ends while fn runs, and the library knows it by its
// own clock, so Do must wrap ErrLost. On resuming, auto-refresh's select
// sees both fn's end (done) and its expiry timer ready and picks one at
// random (lost.go, refreshUntil); when it picks done, the lost signal never
// fires, and the release, past ctx's deadline, is not sent: Do returns a
// plain deadline error about half the time, for each kind of Do. Fixed:
// Do now checks the lease when fn returns (TestMutex_Do_returnsAfterLeaseEnded
// in the library is the fast test). It takes about 25 s.
func TestDo_frozenPastLeaseAndDeadline(t *testing.T) {
	if os.Getenv(slowEnv) != "1" {
		t.Skipf("slow (25 s); %s=1 runs it", slowEnv)
	}
	if runtime.GOOS != "linux" {
		t.Skip("needs sh and kill -STOP")
	}
	requireRedis(t)
	srv := redistest.Start(t)
	c := uncomplicated.NewClient(redigo.New(srv.Pool(t)), uncomplicated.WithLease(300*time.Millisecond),
		uncomplicated.WithAutoRefresh(100*time.Millisecond))
	defer c.Close()
	m, _ := uncomplicated.New(c, uncomplicated.Named("m"))
	rw, _ := uncomplicated.NewRW(c, uncomplicated.Named("rw"))
	sem, _ := uncomplicated.NewSemaphore(c, uncomplicated.Named("s"), 2)
	for _, d := range []struct {
		name string
		do   func(context.Context, func(context.Context) error) error
	}{{"Mutex.Do", m.Do}, {"RWMutex.Do", rw.Do}, {"RWMutex.RDo", rw.RDo}, {"Semaphore.Do", sem.Do}} {
		untold := 0
		const trials = 6
		for range trials {
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			var freeze *exec.Cmd
			err := d.do(ctx, func(context.Context) error {
				freeze = exec.Command("sh", "-c", "kill -STOP $PPID; sleep 1; kill -CONT $PPID")
				if err := freeze.Start(); err != nil {
					return err
				}
				time.Sleep(100 * time.Millisecond) // frozen in here
				return nil
			})
			cancel()
			if freeze != nil {
				_ = freeze.Wait()
			}
			if !errors.Is(err, uncomplicated.ErrLost) {
				untold++
				t.Logf("%s = %v", d.name, err)
			}
		}
		if untold > 0 {
			t.Errorf("%s returned no ErrLost in %d of %d trials; want ErrLost: the lease ended while fn ran", d.name, untold, trials)
		}
	}
}
