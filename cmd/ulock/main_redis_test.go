package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/ulocktest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// An env is a Redis, a lock prefix of the test's own, and ulock runs
// against them.
type env struct {
	srv    *redistest.Server
	prefix string
	dir    string // the test's temporary directory
}

// newEnv returns an env with a prefix of the test's own, also under
// -count: its locks are not those of an earlier run.
func newEnv(t *testing.T) *env {
	prefix := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	return &env{srv: redistest.Shared(t), prefix: prefix, dir: t.TempDir()}
}

// start starts ulock with args on the env's Redis and prefix.
func (e *env) start(t *testing.T, args ...string) *ulocktest.Proc {
	t.Helper()
	return ulocktest.Start(t, nil, e.args(args)...)
}

// args returns args with the flags of the env's Redis and prefix after
// the command, args[0], so that "--" and COMMAND stay last.
func (e *env) args(args []string) []string {
	return append([]string{args[0], "--redis=redis://" + e.srv.Addr + "/0", "--prefix", e.prefix}, args[1:]...)
}

// ulock runs ulock with args on the env's Redis and prefix.
func (e *env) ulock(t *testing.T, args ...string) ulocktest.Result {
	t.Helper()
	return e.start(t, args...).Wait(t)
}

// client returns a Client of the env's with label, closed at the test's
// end.
func (e *env) client(t *testing.T, label string, opts ...uncomplicated.Option) *uncomplicated.Client {
	c := uncomplicated.NewClient(redigo.New(e.srv.Pool(t)), append([]uncomplicated.Option{
		uncomplicated.WithPrefix(e.prefix), uncomplicated.WithHolderLabel(label)}, opts...)...)
	t.Cleanup(func() { c.Close() })
	return c
}

// hold locks the Mutex name from a Client labelled label, with opts.
func (e *env) hold(t *testing.T, name, label string, opts ...uncomplicated.Option) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(e.client(t, label, opts...), uncomplicated.Named(name))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

// inspect returns what Redis has of the lock name.
func (e *env) inspect(t *testing.T, name string) inspect.Info {
	t.Helper()
	info, err := inspect.Lock(context.Background(), e.client(t, ""), e.prefix+":"+name)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// path returns the path of a file in the test's directory.
func (e *env) path(name string) string { return filepath.Join(e.dir, name) }

// await waits, at most 5 s, until cond holds.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exists reports whether the file path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// read returns the trimmed content of the file path, "" when it is missing.
func read(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// runs reads a log of COMMAND runs, each a line "start PID ..." followed
// by its line "end PID ...", and returns each run's two lines split into
// fields; it fails the test when a start is not followed by its end.
func runs(t *testing.T, log string) [][2][]string {
	t.Helper()
	var lines [][]string
	for _, l := range strings.Split(read(log), "\n") {
		lines = append(lines, strings.Fields(l))
	}
	var rs [][2][]string
	for i := 0; i+1 < len(lines); i += 2 {
		s, e := lines[i], lines[i+1]
		if len(s) < 2 || len(e) < 2 || s[0] != "start" || e[0] != "end" || s[1] != e[1] {
			t.Fatalf("lines %d and %d = %q, %q; want the start and the end of one run", i, i+1, s, e)
		}
		rs = append(rs, [2][]string{s, e})
	}
	return rs
}

func TestStatus_binary(t *testing.T) {
	e := newEnv(t)
	m := e.hold(t, "job", "t-holder")
	r := e.ulock(t, "status", "--json", "job")
	want := `"name":"` + e.prefix + `:job","kind":"mutex","state":"held","fence":` + strconv.FormatUint(m.Fence(), 10) + `,"holders":[{"role":"holder","label":"t-holder"`
	if r.Code != 0 || !strings.Contains(r.Stdout, want) {
		t.Errorf("status --json: exit %d, stdout %q; want it to hold %q", r.Code, r.Stdout, want)
	}
	if r := e.ulock(t, "release", "--force", "job"); r.Code != 0 || !strings.Contains(r.Stdout, "t-holder") {
		t.Errorf("release --force: exit %d, stdout %q", r.Code, r.Stdout)
	}
	if err := m.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Unlock() after release --force = %v; want ErrNotHeld", err)
	}
}

// Three processes and one hold: ulock acquire locks with a 20 s lease,
// prints the handle and exits; this process resumes the handle, finds the
// hold with the same fence, refreshes it and releases it; a third process
// (ulock run --wait 0) then gets the lock at its first attempt, and a
// release of the spent handle exits 76.
func TestHandles_binary(t *testing.T) {
	e := newEnv(t)
	r := e.ulock(t, "acquire", "--lease", "20s", "job")
	handle := strings.TrimSpace(r.Stdout)
	if r.Code != 0 || !strings.HasPrefix(handle, "uh1.") {
		t.Fatalf("acquire: exit %d, stdout %q, stderr %q; want 0 and the handle", r.Code, r.Stdout, r.Stderr)
	}
	held := e.inspect(t, "job")
	if !held.Held() {
		t.Fatalf("after acquire exited: %+v; want the lock held", held)
	}
	ctx := context.Background()
	m, err := uncomplicated.Resume(ctx, e.client(t, "resumer"), handle)
	if err != nil || m.Fence() != held.Fence {
		t.Fatalf("Resume = %v, fence %d; want the hold, fence %d", err, m.Fence(), held.Fence)
	}
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if r := e.ulock(t, "run", "--wait", "0", "job", "--", "true"); r.Code != 0 {
		t.Errorf("run --wait 0 after the release: exit %d, stderr %q; want 0", r.Code, r.Stderr)
	}
	if r := e.ulock(t, "release", "--handle", handle); r.Code != 76 {
		t.Errorf("release --handle of a released hold: exit %d, stderr %q; want 76", r.Code, r.Stderr)
	}
}
