package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

// The tests run the ulock binary, built once by TestMain, as real
// processes against a real redis-server.

var (
	bin        string   // the ulock binary
	buildFlags []string // of go build, besides -o
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ulock-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "ulock")
	build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", bin, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ulock: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	redistest.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// A proc is a running ulock.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	started        time.Time
	done           chan struct{} // closed when it has exited
}

// result is how a ulock ended.
type result struct {
	code           int // its exit code; -1 when a signal killed it
	stdout, stderr string
	took           time.Duration
}

// start starts ulock with args, and env added to the test's environment;
// it is killed at the test's end if it still runs.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	// A -race build sleeps a second at exit unless told not to.
	p.cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	return p
}

// wait waits, at most 20 s, for p to exit.
func (p *proc) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("ulock %q still ran after 20s; killed it; stderr:\n%s", p.cmd.Args[1:], &p.stderr)
	}
	return result{p.cmd.ProcessState.ExitCode(), p.stdout.String(), p.stderr.String(), time.Since(p.started)}
}

// signal sends sig to p.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

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

// start starts ulock with args on the env's Redis and prefix; they come
// before the args, so that "--" and COMMAND stay last.
func (e *env) start(t *testing.T, args ...string) *proc {
	t.Helper()
	return start(t, nil, append([]string{args[0], "--redis=redis://" + e.srv.Addr + "/0", "--prefix", e.prefix}, args[1:]...)...)
}

// ulock runs ulock with args on the env's Redis and prefix.
func (e *env) ulock(t *testing.T, args ...string) result {
	t.Helper()
	return e.start(t, args...).wait(t)
}

// client returns a Client of the env's with label, closed at the test's
// end.
func (e *env) client(t *testing.T, label string, opts ...uncomplicated.Option) *uncomplicated.Client {
	c := uncomplicated.NewClient(e.srv.Pool(t), append([]uncomplicated.Option{
		uncomplicated.WithPrefix(e.prefix), uncomplicated.WithHolderLabel(label)}, opts...)...)
	t.Cleanup(func() { c.Close() })
	return c
}

// hold locks the Mutex name from a Client labelled label.
func (e *env) hold(t *testing.T, name, label string) *uncomplicated.Mutex {
	t.Helper()
	m, err := e.client(t, label).Named(name)
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
func (e *env) inspect(t *testing.T, name string) uncomplicated.LockInfo {
	t.Helper()
	info, err := e.client(t, "").Inspect(context.Background(), e.prefix+":"+name)
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

// wantOneLine fails t unless r ended with code and one line on stderr that
// holds each of wants.
func wantOneLine(t *testing.T, r result, code int, wants ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d; want %d; stderr: %q", r.code, code, r.stderr)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("stderr = %q; want one line", r.stderr)
	}
	for _, w := range wants {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr = %q; want it to hold %q", r.stderr, w)
		}
	}
}

func TestUlock_usage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"run", "job"}, "missing -- before COMMAND"},
		{[]string{"status", "--json"}, "missing NAME"},
		{[]string{"run", "--wait", "x", "job", "--", "true"}, `invalid value "x" for flag -wait`},
	}
	for _, tc := range cases {
		r := start(t, nil, tc.args...).wait(t)
		wantOneLine(t, r, 2, tc.want, "run 'ulock help")
	}
}

func TestUlock_clusterURL(t *testing.T) {
	for _, url := range []string{"redis+cluster://127.0.0.1:7000", "rediss+sentinel://127.0.0.1:26379?master_name=m"} {
		r := start(t, nil, "status", "--redis", url, "job").wait(t)
		wantOneLine(t, r, 2, "go install github.com/uncomplicated-mutex/uncomplicated/goredis/cmd/ulock@latest",
			"go run ./goredis/cmd/ulock")
	}
}

func TestUlock_unreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, args := range [][]string{{"status", "job"}, {"list"}, {"release", "--force", "job"}, {"run", "job", "--", "true"}} {
		r := start(t, []string{"REDIS_URL=redis://" + addr}, args...).wait(t)
		wantOneLine(t, r, 1, "connection refused")
		if r.took > 5*time.Second {
			t.Errorf("ulock %s took %v; want a prompt failure", args[0], r.took)
		}
	}
}

func TestUlock_demo(t *testing.T) {
	r := start(t, []string{"REDIS_URL="}, "demo", "-timeout", "300ms", "-work", "40ms").wait(t)
	if r.code != 0 || !strings.Contains(r.stdout, "embedded in-memory Redis") || !strings.Contains(r.stdout, "taken over") {
		t.Errorf("ulock demo: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestUlock_help(t *testing.T) {
	r := start(t, nil, "help", "run").wait(t)
	if r.code != 0 || !strings.Contains(r.stdout, "ULOCK_FENCE") {
		t.Errorf("ulock help run: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

func TestStatus_binary(t *testing.T) {
	e := newEnv(t)
	m := e.hold(t, "job", "t-holder")
	r := e.ulock(t, "status", "--json", "job")
	want := `"name":"` + e.prefix + `:job","kind":"mutex","state":"held","fence":1,"holders":[{"role":"holder","label":"t-holder"`
	if r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("status --json: exit %d, stdout %q; want it to hold %q", r.code, r.stdout, want)
	}
	if r := e.ulock(t, "release", "--force", "job"); r.code != 0 || !strings.Contains(r.stdout, "t-holder") {
		t.Errorf("release --force: exit %d, stdout %q", r.code, r.stdout)
	}
	if err := m.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Unlock() after release --force = %v; want ErrNotHeld", err)
	}
}
