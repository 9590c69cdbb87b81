package ulockcli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/ulocktest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// TestMain_runName checks what 'ulock help' says of run's NAME against
// what run does: NAME is a plain name, also when it looks like a full one.
func TestMain_runName(t *testing.T) {
	const claim = `"lock:x" is lock:lock%3Ax,`
	if overview := ulock(t, "help").Stdout; !strings.Contains(overview, "run      NAME is always a plain name") ||
		!strings.Contains(overview, claim) {
		t.Errorf("ulock help does not say that run's NAME is always a plain name, with %s", claim)
	}
	srv := redistest.Shared(t)
	r := ulock(t, "run", redisFlag(srv), "lock:x", "--", "sh", "-c", "echo $ULOCK_NAME")
	if r.Code != 0 || r.Stdout != "lock:lock%3Ax\n" {
		t.Errorf("run lock:x: exit %d, stdout %q, stderr %q; want 0 and lock:lock%%3Ax", r.Code, r.Stdout, r.Stderr)
	}
}

// redisFlag is the --redis flag of srv.
func redisFlag(srv *redistest.Server) string { return "--redis=redis://" + srv.Addr + "/0" }

// ulock run checks that the address answers, then waits for the lock as
// the library does: through a restart of Redis, which here also frees the
// lock (no persistence), it gets the lock once Redis is back.
func TestMain_runRidesOutARestart(t *testing.T) {
	srv := redistest.Start(t)
	c := uncomplicated.NewClient(redigo.New(srv.Pool(t)))
	t.Cleanup(func() { _ = c.Close() })
	m, err := uncomplicated.New(c, uncomplicated.Named("r"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan ulocktest.Result, 1)
	go func() { done <- ulock(t, "run", "--wait", "15s", redisFlag(srv), "r", "--", "true") }()
	time.Sleep(500 * time.Millisecond) // ulock finds the lock taken and waits
	srv.Kill()
	time.Sleep(time.Second)
	if err := srv.Revive(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Code != 0 {
		t.Errorf("run across a restart: exit %d, stderr %q; want 0", r.Code, r.Stderr)
	}
	srv.Kill()
	r := ulock(t, "run", "--wait", "15s", redisFlag(srv), "r", "--", "true")
	if r.Code == 0 || r.Took > 5*time.Second || !strings.Contains(r.Stderr, "refused") {
		t.Errorf("run with Redis down: exit %d after %v, stderr %q; want an error at once that names the refusal", r.Code, r.Took, r.Stderr)
	}
}
