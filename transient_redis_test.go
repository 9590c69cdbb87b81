package uncomplicated_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// While Redis refuses connections for 1.5 s (killed, then started again),
// the blocking acquisitions of every primitive, Lock and Do, keep trying on
// their ticks and get their locks within 3 s of Redis answering again; a
// Try form fails at once, within 2 s. A failed attempt is logged at most
// once a second per lock.
func TestRedis_waitsOutARestart(t *testing.T) {
	s := redistest.Start(t)
	rec := &logRecorder{}
	client := uncomplicated.NewClient(redigo.New(s.Pool(t)), uncomplicated.WithLogger(slog.New(rec)))
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	s.Kill()
	killed := time.Now()
	type got struct {
		what string
		err  error
		at   time.Time
	}
	done := make(chan got, 2*len(primitives))
	for _, p := range primitives {
		go func() {
			_, err := p.wait(ctx, client, "restart-wait-"+p.name)
			done <- got{p.name + " wait", err, time.Now()}
		}()
		go func() {
			var at time.Time
			err := p.do(ctx, client, "restart-do-"+p.name, func(context.Context) error { at = time.Now(); return nil })
			done <- got{p.name + " Do", err, at}
		}()
	}
	for _, p := range primitives {
		start := time.Now()
		if ok, err := p.try(ctx, client, "restart-try-"+p.name); ok || !errors.Is(err, uncomplicated.ErrNotObtained) || time.Since(start) > 2*time.Second {
			t.Errorf("%s try while Redis is down = %v, %v after %v; want ErrNotObtained within 2s", p.name, ok, err, time.Since(start))
		}
	}
	time.Sleep(1500*time.Millisecond - time.Since(killed))
	if err := s.Revive(); err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	for range 2 * len(primitives) {
		select {
		case g := <-done:
			if g.err != nil {
				t.Errorf("%s through the restart = %v; want the lock", g.what, g.err)
			} else if d := g.at.Sub(answered); d > 3*time.Second {
				t.Errorf("%s got the lock %v after Redis answered again; want within 3s", g.what, d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a blocking acquisition still waiting 10s after Redis answered again")
		}
	}
	perLock := map[string]int{}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, msg := range rec.msgs {
		if strings.HasSuffix(msg, "Redis call failed") && strings.Contains(rec.attrs[i]["lock"], "restart-wait-") {
			perLock[rec.attrs[i]["lock"]]++
		}
	}
	// Down for 1.5 s and the time Revive takes: 3 records a lock at most.
	for lock, n := range perLock {
		if n > 3+int(time.Since(killed)/time.Second) {
			t.Errorf("%d failures logged for %s in %v; want one a second at most", n, lock, time.Since(killed))
		}
	}
	if len(perLock) == 0 {
		t.Error("no failed attempt logged; want one a second per lock")
	}
}

// An error that trying again cannot fix fails a blocking acquisition at
// once: here the lock's key holds another type (WRONGTYPE).
func TestRedis_permanentErrorsFailAtOnce(t *testing.T) {
	s := redistest.Start(t)
	client := uncomplicated.NewClient(redigo.New(s.Pool(t)))
	t.Cleanup(func() { _ = client.Close() })
	m, err := uncomplicated.New(client, uncomplicated.Named("wrongtype"))
	if err != nil {
		t.Fatal(err)
	}
	s.Do(t, "SADD", m.Name(), "not a lock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := m.Lock(ctx); !errors.Is(err, uncomplicated.ErrNotObtained) || !strings.Contains(err.Error(), "WRONGTYPE") || time.Since(start) > time.Second {
		t.Errorf("Lock() = %v after %v; want WRONGTYPE at once", err, time.Since(start))
	}
}

// Through a network that refuses and resets every connection for 1.5s
// (a proxy of the test's own, Redis itself up), each primitive's blocking
// acquisition waits on and gets its lock within 3s of the network letting
// it through; a Try form fails within 2s.
func TestRedis_waitsOutARefusingNetwork(t *testing.T) {
	s := redistest.Start(t)
	p := redistest.StartProxy(t, s.Addr)
	client := uncomplicated.NewClient(redigo.New(redistest.Pool(t, p.Addr())))
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	p.Refuse(true)
	p.Reset()
	type got struct {
		what string
		err  error
		at   time.Time
	}
	done := make(chan got, len(primitives))
	for _, pr := range primitives {
		go func() {
			_, err := pr.wait(ctx, client, "refused-"+pr.name)
			done <- got{pr.name, err, time.Now()}
		}()
		start := time.Now()
		if ok, err := pr.try(ctx, client, "refused-try-"+pr.name); ok || !errors.Is(err, uncomplicated.ErrNotObtained) || time.Since(start) > 2*time.Second {
			t.Errorf("%s try while the network refuses = %v, %v after %v; want ErrNotObtained within 2s", pr.name, ok, err, time.Since(start))
		}
	}
	time.Sleep(1500 * time.Millisecond)
	p.Refuse(false)
	open := time.Now()
	for range primitives {
		select {
		case g := <-done:
			if g.err != nil {
				t.Errorf("%s through the refusing network = %v; want the lock", g.what, g.err)
			} else if d := g.at.Sub(open); d > 3*time.Second {
				t.Errorf("%s got the lock %v after the network let it through; want within 3s", g.what, d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a blocking acquisition still waiting 10s after the network let it through")
		}
	}
}
