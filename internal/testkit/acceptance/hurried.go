package acceptance

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/orders"
)

// The hurried load: request handlers that each make a Mutex for the order
// they serve and give up after a few milliseconds, as a web server's
// deadlines make them. 100 goroutines lock one of 10 orders each, a new
// Mutex per call, under a ctx of 0 to 20ms, and unlock what they got at
// once, for 4s; the same Client's callers that wait up to 2s, for 2s, are
// the measure of what hurried ones should get, per second. The two take
// turns, a second patient and two hurried at a time, so that a machine
// whose speed drifts (other processes, a shared host) slows both alike.

// A Hurried is one Client set-up under the hurried load.
type Hurried struct {
	// NewClient returns a new Client, as a process has one, and what closes
	// its client library; the load closes both.
	NewClient func(t *testing.T) (*uncomplicated.Client, func())
	// Other is a Client of the same Redis, which must get every lock after
	// the load.
	Other *uncomplicated.Client
	// Do runs a command on the Redis of the load, which holds nothing
	// else, on a connection of its own: DBSIZE, INFO.
	Do func(cmd string, args ...any) (any, error)
	// MostConnections bounds the connections the hurried callers may make
	// Redis accept; 0 for a pool that does not hold the callers, which
	// dials and closes connections as it must.
	MostConnections int64
}

// What the hurried load must not exceed, and the share of the patient
// callers' acquisitions it must reach.
const (
	hurriedCallers    = 100
	hurriedLocks      = 10
	hurriedFor        = 4 * time.Second
	patientFor        = 2 * time.Second
	hurriedTurns      = 2 // each of patientFor/hurriedTurns, then hurriedFor/hurriedTurns
	hurriedShare      = 0.5
	hurriedGoroutines = 500
	hurriedKeys       = 400
	hurriedSettle     = 15 * time.Second
	// standing are the goroutines a Client that has waited for a lock may
	// keep: its listening connection and its PINGs, its restart watch, and
	// those of the client library's connections.
	standing = 10
)

// HurriedLoad runs the hurried load on h, and the same load with callers
// that wait up to 2s, and fails t unless the hurried callers acquire at
// least half as often a second, keep at most 500 goroutines in the process
// and 400 keys in Redis, make Redis accept at most h.MostConnections, leave
// the process with no more goroutines than before (and a Client's standing
// ones) within 15s, and leave no lock held. Its figures are those of a
// process at full speed: under the race detector, which slows every
// goroutine several times while Redis keeps its pace, callers of 0 to 20ms
// cannot be served in time, so the load runs for a second and only what
// must hold at any speed is checked: no error but ErrNotObtained, the
// goroutines back, no lock left held. .ci/run runs it without, too.
func HurriedLoad(t *testing.T, h Hurried) {
	t.Helper()
	if raceDetector {
		r := runHurried(t, h, 20*time.Millisecond, time.Second)
		if r.settled >= hurriedSettle {
			t.Errorf("%d goroutines %v after the hurried load, %d before; want as many as before", r.left, hurriedSettle, r.before)
		}
		h.locksFree(t)
		return
	}
	var patient, hurried hurriedRun
	for range hurriedTurns {
		patient.add(runHurried(t, h, 2*time.Second, patientFor/hurriedTurns))
		hurried.add(runHurried(t, h, 20*time.Millisecond, hurriedFor/hurriedTurns))
	}
	accepted := hurried.accepted
	t.Logf("hurried: %d acquisitions of %d calls (patient: %d of %d); at most %d goroutines, %d keys; %d connections opened; goroutines back in %v",
		hurried.acquired, hurried.calls, patient.acquired, patient.calls, hurried.goroutines, hurried.keys, accepted, hurried.settled.Round(time.Millisecond))
	if rate, patientRate := hurried.rate(), patient.rate(); rate < hurriedShare*patientRate {
		t.Errorf("hurried callers acquired %.0f times a second, patient ones %.0f; want at least %v of it", rate, patientRate, hurriedShare)
	}
	if hurried.goroutines > hurriedGoroutines {
		t.Errorf("%d goroutines in the process under the hurried load; want at most %d", hurried.goroutines, hurriedGoroutines)
	}
	if hurried.keys > hurriedKeys {
		t.Errorf("%d keys in Redis under the hurried load; want at most %d", hurried.keys, hurriedKeys)
	}
	if h.MostConnections > 0 && accepted > h.MostConnections {
		t.Errorf("%d connections opened under the hurried load; want at most %d", accepted, h.MostConnections)
	}
	if hurried.settled >= hurriedSettle {
		t.Errorf("%d goroutines %v after the hurried load, %d before; want as many as before", hurried.left, hurriedSettle, hurried.before)
	}
	h.locksFree(t)
}

// locksFree checks that h.Other gets each lock of the load within 5s: no
// attempt that a caller left behind kept one.
func (h Hurried) locksFree(t *testing.T) {
	t.Helper()
	for i := range hurriedLocks {
		m := mustNew(t, h.Other, orders.Order{N: int64(900 + i)})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := m.Lock(ctx); err != nil {
			t.Errorf("another Client's Lock() after the load = %v; want the lock within 5s", err)
		} else {
			_ = m.Unlock(ctx)
		}
		cancel()
	}
}

// hurriedRun is what one run of the load measured.
type hurriedRun struct {
	took            time.Duration
	calls, acquired int64
	goroutines      int   // the most in the process during the run
	keys            int64 // the most in Redis during the run
	before, left    int   // goroutines before the run, and at the end of settled
	settled         time.Duration
	accepted        int64 // the connections Redis accepted during the run, after the warm-up
}

// add counts r in the runs of the same callers that s sums up: their
// time, calls and connections added, the most of their peaks, and the
// longest settling with its goroutines.
func (s *hurriedRun) add(r hurriedRun) {
	s.took += r.took
	s.calls += r.calls
	s.acquired += r.acquired
	s.accepted += r.accepted
	s.goroutines, s.keys = max(s.goroutines, r.goroutines), max(s.keys, r.keys)
	if r.settled >= s.settled {
		s.before, s.left, s.settled = r.before, r.left, r.settled
	}
}

// rate is the run's acquisitions per second.
func (r hurriedRun) rate() float64 { return float64(r.acquired) / r.took.Seconds() }

// runHurried runs the load for d with callers that wait up to most, on a
// new Client of h, which it closes once the process is back to its
// goroutines of before (or 15s have passed).
func runHurried(t *testing.T, h Hurried, most, d time.Duration) hurriedRun {
	t.Helper()
	client, closeLibrary := h.NewClient(t)
	warmUp(t, client)
	r := hurriedRun{before: runtime.NumGoroutine()}
	from := h.connections(t)
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		r.goroutines, r.keys = watchLoad(h.keys, stop)
	}()
	var calls, acquired atomic.Int64
	var wg sync.WaitGroup
	began, end := time.Now(), time.Now().Add(d)
	for i := range hurriedCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := orders.Order{N: int64(900 + i%hurriedLocks)}
			for time.Now().Before(end) {
				m, err := uncomplicated.New(client, order) // as a request handler makes it
				if err != nil {
					t.Errorf("New() = %v", err)
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.Int64N(int64(most))))
				err = m.Lock(ctx)
				cancel()
				calls.Add(1)
				switch {
				case err == nil:
					acquired.Add(1)
					if err := m.Unlock(context.Background()); err != nil {
						t.Errorf("Unlock() = %v", err)
					}
				case !errors.Is(err, uncomplicated.ErrNotObtained):
					t.Errorf("Lock() = %v; want nil or ErrNotObtained", err)
				}
			}
		}()
	}
	wg.Wait()
	r.calls, r.acquired, r.took = calls.Load(), acquired.Load(), time.Since(began)
	r.accepted = h.connections(t) - from
	began = time.Now()
	for r.left = runtime.NumGoroutine(); r.left > r.before+standing && time.Since(began) < hurriedSettle; r.left = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	r.settled = time.Since(began)
	close(stop)
	watch.Wait()
	if err := client.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	closeLibrary()
	return r
}

// warmUp has 100 goroutines lock the load's orders, patiently, for 0.2s,
// so that the client library has opened its connections before the load
// counts the process's goroutines.
func warmUp(t *testing.T, client *uncomplicated.Client) {
	t.Helper()
	var wg sync.WaitGroup
	end := time.Now().Add(200 * time.Millisecond)
	for i := range hurriedCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := mustNew(t, client, orders.Order{N: int64(900 + i%hurriedLocks)})
			for time.Now().Before(end) {
				if err := m.Lock(t.Context()); err != nil {
					t.Errorf("Lock() = %v", err)
					return
				}
				_ = m.Unlock(t.Context())
			}
		}()
	}
	wg.Wait()
}

// keys reads how many keys Redis holds.
func (h Hurried) keys() (int64, error) { return number(h.Do("DBSIZE")) }

// connections reads how many connections Redis has accepted since it
// started.
func (h Hurried) connections(t *testing.T) int64 {
	t.Helper()
	info, err := text(h.Do("INFO", "stats"))
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	n, err := strconv.ParseInt(infoField(info, "total_connections_received"), 10, 64)
	if err != nil {
		t.Fatalf("INFO stats: total_connections_received: %v", err)
	}
	return n
}

// watchLoad samples the process's goroutines every 10ms and Redis's keys
// every 100ms until stop is closed, and returns the most of each.
func watchLoad(keys func() (int64, error), stop <-chan struct{}) (goroutines int, most int64) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return goroutines, most
		case <-t.C:
		}
		goroutines = max(goroutines, runtime.NumGoroutine())
		if i%10 == 0 {
			if n, err := keys(); err == nil {
				most = max(most, n)
			}
		}
	}
}

// infoField returns the value of name in INFO's reply info; "" when it
// has none.
func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
