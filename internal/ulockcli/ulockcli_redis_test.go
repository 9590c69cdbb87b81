package ulockcli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
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

// A lock taken in one step and released in another, by handle: ulock
// acquire prints the handle and leaves the lock held (lease 20 s) after
// its process has gone; refresh and release --handle, each a process of
// its own, keep it and free it; the next ulock gets it at once, and a
// second release of the same handle exits 76. ulock run gives its command
// ULOCK_HANDLE.
func TestMain_handles(t *testing.T) {
	srv := redistest.Start(t)
	r := ulock(t, "acquire", "--lease", "20s", redisFlag(srv), "report")
	handle := strings.TrimSpace(r.Stdout)
	if r.Code != 0 || !strings.HasPrefix(handle, "uh1.") || strings.Count(r.Stdout, "\n") != 1 {
		t.Fatalf("acquire: exit %d, stdout %q, stderr %q; want 0 and one line, the handle", r.Code, r.Stdout, r.Stderr)
	}
	c := uncomplicated.NewClient(redigo.New(srv.Pool(t)))
	t.Cleanup(func() { _ = c.Close() })
	info, err := inspect.Lock(context.Background(), c, "lock:report")
	if err != nil || !info.Held() || info.Holders[0].LeaseLeft < 19*time.Second {
		t.Fatalf("after acquire exited: %+v, %v; want held, about 20s of lease left", info, err)
	}
	if r := ulock(t, "run", "--wait", "0", redisFlag(srv), "report", "--", "true"); r.Code != 75 {
		t.Errorf("run while acquired: exit %d; want 75", r.Code)
	}
	if r := ulock(t, "refresh", "--handle", handle, redisFlag(srv)); r.Code != 0 {
		t.Errorf("refresh --handle: exit %d, stderr %q; want 0", r.Code, r.Stderr)
	}
	if again, _ := inspect.Lock(context.Background(), c, "lock:report"); again.Fence != info.Fence {
		t.Errorf("fence after refresh %d; want %d, the same hold", again.Fence, info.Fence)
	}
	if r := ulock(t, "release", "--handle", handle, redisFlag(srv)); r.Code != 0 {
		t.Errorf("release --handle: exit %d, stderr %q; want 0", r.Code, r.Stderr)
	}
	if r := ulock(t, "run", "--wait", "0", redisFlag(srv), "report", "--", "sh", "-c", "echo $ULOCK_HANDLE"); r.Code != 0 || !strings.HasPrefix(r.Stdout, "uh1.") {
		t.Errorf("run after the release: exit %d, stdout %q; want 0 at once, and ULOCK_HANDLE", r.Code, r.Stdout)
	}
	if r := ulock(t, "release", "--handle", handle, redisFlag(srv)); r.Code != 76 {
		t.Errorf("second release --handle: exit %d, stderr %q; want 76", r.Code, r.Stderr)
	}
	if r := ulock(t, "release", "--handle", "not-a-handle", redisFlag(srv)); r.Code == 0 || r.Code == 76 {
		t.Errorf("release --handle of garbage: exit %d; want a failure", r.Code)
	}
}
