package ulockcli_test

import (
	"strings"
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
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
