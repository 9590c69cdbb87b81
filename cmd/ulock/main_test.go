package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/ulocktest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// The tests run the ulock binary, built once by TestMain, as real
// processes against a real redis-server.

func TestMain(m *testing.M) { ulocktest.Main(m) }

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
		r := ulocktest.Run(t, nil, tc.args...)
		ulocktest.WantOneLine(t, r, 2, tc.want, "run 'ulock help")
	}
}

func TestUlock_clusterURL(t *testing.T) {
	for _, url := range []string{"redis+cluster://127.0.0.1:7000", "rediss+sentinel://127.0.0.1:26379?master_name=m"} {
		r := ulocktest.Run(t, nil, "status", "--redis", url, "job")
		ulocktest.WantOneLine(t, r, 2, "in the repository: cd goredis && go run ./cmd/ulock; "+
			"once the modules are tagged: go install github.com/uncomplicated-mutex/uncomplicated/goredis/cmd/ulock@latest")
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
		r := ulocktest.Run(t, []string{"REDIS_URL=redis://" + addr}, args...)
		ulocktest.WantOneLine(t, r, 1, "connection refused")
		if r.Took > 5*time.Second {
			t.Errorf("ulock %s took %v; want a prompt failure", args[0], r.Took)
		}
	}
}

// hungRedis listens on a loopback port as a Redis that accepts
// connections and reads what comes but never answers. It returns the
// port's address, and a channel on which a value comes after something
// came from a client.
func hungRedis(t *testing.T) (addr string, asked <-chan struct{}) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex // guards conns
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					select {
					case ch <- struct{}{}:
					default:
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String(), ch
}

// TestUlock_interrupted checks that a signal stops status, list and
// release while they wait for Redis, with one line and exit 128+N, rather
// than killing them.
func TestUlock_interrupted(t *testing.T) {
	addr, asked := hungRedis(t)
	cases := []struct {
		args []string
		sig  syscall.Signal
		want string
	}{
		{[]string{"status", "job"}, syscall.SIGINT, "ulock status: interrupted by SIGINT\n"},
		{[]string{"list"}, syscall.SIGTERM, "ulock list: interrupted by SIGTERM\n"},
		{[]string{"release", "--force", "job"}, syscall.SIGINT,
			"ulock release: interrupted by SIGINT; lock:job may or may not be broken: see 'ulock status lock:job'\n"},
	}
	for _, tc := range cases {
		select { // what the last case sent
		case <-asked:
		default:
		}
		p := ulocktest.Start(t, []string{"REDIS_URL=redis://" + addr}, tc.args...)
		select {
		case <-asked:
		case <-time.After(5 * time.Second):
			t.Fatalf("ulock %s sent Redis nothing within 5s", tc.args[0])
		}
		p.Signal(t, tc.sig)
		r := p.Wait(t)
		if r.Code != 128+int(tc.sig) || r.Stderr != tc.want || r.Stdout != "" {
			t.Errorf("ulock %s, %v: exit %d, stderr %q, stdout %q; want %d and %q", tc.args[0], tc.sig, r.Code, r.Stderr, r.Stdout, 128+int(tc.sig), tc.want)
		}
		if r.Took > 5*time.Second {
			t.Errorf("ulock %s took %v; want it to stop on the signal, before its call's 10s", tc.args[0], r.Took)
		}
	}
}

func TestUlock_demo(t *testing.T) {
	r := ulocktest.Run(t, []string{"REDIS_URL="}, "demo", "-timeout", "300ms", "-work", "40ms")
	if r.Code != 0 || !strings.Contains(r.Stdout, "embedded in-memory Redis") || !strings.Contains(r.Stdout, "taken over") {
		t.Errorf("ulock demo: exit %d, stdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestUlock_help(t *testing.T) {
	r := ulocktest.Run(t, nil, "help", "run")
	if r.Code != 0 || !strings.Contains(r.Stdout, "ULOCK_FENCE") {
		t.Errorf("ulock help run: exit %d, stdout:\n%s", r.Code, r.Stdout)
	}
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
