package uncomplicated_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// When Redis loses its data, by a restart without persistence or by
// FLUSHALL, the next holder's fence is above every earlier one all the
// same, so a fenced store takes its writes; a holder whose hold a restart
// took learns it within 2 s of Redis answering again, and within 150ms
// once its hold is a second old (see TestRedis_restartHeardAtOnce). The other ways to
// lose or roll back a lock's keys are tested on every deployment
// (internal/testkit/acceptance: fencesAcrossLoss), failovers in goredis.
func TestRedis_dataLost(t *testing.T) {
	s := redistest.Start(t)
	client := uncomplicated.NewClient(redigo.New(s.Pool(t)))
	t.Cleanup(func() { _ = client.Close() })
	losses := []struct {
		name string
		lose func(t *testing.T)
	}{
		{"restart", func(t *testing.T) {
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
		}},
		{"FLUSHALL", func(t *testing.T) { s.Do(t, "FLUSHALL") }},
	}
	for _, p := range primitives {
		for _, loss := range losses {
			t.Run(p.name+"/"+loss.name, func(t *testing.T) {
				name := p.name + "-" + loss.name
				var stored uint64 // the highest fence a store has taken
				for range 3 {
					h := p.take(t, client, name)
					if h.fence <= stored {
						t.Fatalf("fence %d; want above %d", h.fence, stored)
					}
					stored = h.fence
					if err := h.release(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				h := p.take(t, client, name)
				stored = h.fence
				loss.lose(t)
				answered := time.Now()
				if loss.name == "restart" {
					select {
					case <-h.lost():
						if d := time.Since(answered); d > 2*time.Second {
							t.Errorf("Lost() closed %v after Redis answered again; want within 2s", d)
						}
					case <-time.After(5 * time.Second):
						t.Fatal("Lost() still open 5s after Redis answered again")
					}
				}
				fence := waitAfterLoss(t, p, client, name)
				if fence <= stored {
					t.Errorf("fence after the loss = %d; want above every earlier one, %d", fence, stored)
				}
			})
		}
	}
}

// A holder whose Redis restarted without its data hears it at once: its
// Client's listening connection breaks, it asks Redis every 25ms until it
// answers, and then checks its holds, so Lost() and the ctx of Do's
// function end within 150ms of Redis answering again, in every run, with
// the default options (no auto-refresh), for holds over a second old.
// Before, 673 to 980ms: the restart watch read Redis once a second.
func TestRedis_restartHeardAtOnce(t *testing.T) {
	s := redistest.Start(t)
	client := uncomplicated.NewClient(redigo.New(s.Pool(t)))
	t.Cleanup(func() { _ = client.Close() })
	for run := range 3 {
		locked, err := uncomplicated.New(client, uncomplicated.Named(fmt.Sprintf("restart-lock-%d", run)))
		if err != nil {
			t.Fatal(err)
		}
		mustLock(t, locked)
		doing, err := uncomplicated.New(client, uncomplicated.Named(fmt.Sprintf("restart-do-%d", run)))
		if err != nil {
			t.Fatal(err)
		}
		inFn, fnEnded := make(chan struct{}), make(chan time.Time, 1)
		go func() {
			_ = doing.Do(context.Background(), func(ctx context.Context) error {
				close(inFn)
				select {
				case <-ctx.Done():
					fnEnded <- time.Now()
				case <-time.After(10 * time.Second):
				}
				return nil
			})
		}()
		<-inFn
		time.Sleep(1200 * time.Millisecond) // the holds are a second old: their Client keeps a listening connection
		s.Kill()
		answered := make(chan time.Time, 1)
		go func() {
			for {
				if c, err := redis.Dial("tcp", s.Addr); err == nil {
					if _, err := c.Do("PING"); err == nil {
						answered <- time.Now()
						c.Close()
						return
					}
					c.Close()
				}
				time.Sleep(time.Millisecond)
			}
		}()
		if err := s.Revive(); err != nil {
			t.Fatal(err)
		}
		at := <-answered
		var lost time.Duration
		select {
		case <-locked.Lost():
			if lost = time.Since(at); lost > 150*time.Millisecond {
				t.Errorf("run %d: Lost() closed %v after Redis answered again; want within 150ms", run, lost)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: Lost() still open 5s after Redis answered again", run)
		}
		select {
		case ended := <-fnEnded:
			if d := ended.Sub(at); d > 150*time.Millisecond {
				t.Errorf("run %d: Do's ctx ended %v after Redis answered again; want within 150ms", run, d)
			} else {
				t.Logf("run %d: Lost() closed %v, Do's ctx ended %v after Redis answered again", run, lost.Round(time.Millisecond), d.Round(time.Millisecond))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: Do's ctx still open 5s after Redis answered again", run)
		}
		_ = locked.Unlock(context.Background())
	}
}

// waitAfterLoss acquires the lock name once Redis answers again: a
// connection that the restart broke fails the first call.
func waitAfterLoss(t *testing.T, p primitive, c *uncomplicated.Client, name string) uint64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fence, err := p.wait(ctx, c, name)
		cancel()
		if err == nil {
			return fence
		}
		if time.Now().After(deadline) {
			t.Fatalf("acquiring after the loss: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Locking many objects once each leaves nothing behind: 10,000 Mutexes
// locked and released leave DBSIZE where it was and used_memory within
// 1 MB of it. (The benchmark's fleet workload reports the same for
// 100,000 and more: see docs/benchmarks.md.)
func TestRedis_manyObjectsLeaveNothing(t *testing.T) {
	s := redistest.Start(t)
	pool := s.Pool(t)
	client := uncomplicated.NewClient(redigo.New(pool))
	t.Cleanup(func() { _ = client.Close() })
	keys := func() int64 { n, _ := redis.Int64(s.Do(t, "DBSIZE"), nil); return n }
	keysBefore, memBefore := keys(), usedMemory(t, s)
	const objects, workers = 10_000, 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < objects; i += workers {
				m, err := uncomplicated.New(client, Order{int64(i)})
				if err == nil {
					err = m.Lock(context.Background())
				}
				if err == nil {
					err = m.Unlock(context.Background())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := keys(); n != keysBefore {
		t.Errorf("DBSIZE after %d objects locked and released = %d; want %d, as before", objects, n, keysBefore)
	}
	if grew := usedMemory(t, s) - memBefore; grew > 1<<20 {
		t.Errorf("used_memory grew by %d bytes; want at most 1 MB", grew)
	}
}

// usedMemory is the used_memory of s, in bytes.
func usedMemory(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	info, _ := redis.String(s.Do(t, "INFO", "memory"), nil)
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal(fmt.Errorf("no used_memory in INFO memory"))
	return 0
}
