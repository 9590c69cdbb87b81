// Package redistest starts throwaway redis-server processes on free
// loopback ports for tests.
//
// A test that needs Redis calls Shared (one server per test binary), Start
// (a server of its own), StartShifted (one whose wall clock is off),
// StartCluster (a Redis Cluster) or StartSentinel (a master and replica
// watched by sentinels). When redis-server (or, for StartShifted, gcc) is not
// on PATH the test is skipped, or fails when UNCOMPLICATED_REQUIRE_REDIS=1.
// Test binaries call Main from TestMain so that no server outlives them.
//
// StartFake starts a server that accepts connections and answers nonsense,
// and BusyCPUs keeps every CPU busy while a test runs.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// RequireEnv makes a missing redis-server fail tests instead of skipping them.
const RequireEnv = "UNCOMPLICATED_REQUIRE_REDIS"

// A Server is a running redis-server (or redis-sentinel). Its methods that
// change the process (Stop, Restart, Kill, Revive, Pause, Resume) must not
// run concurrently with each other or with a Cluster's or Sentinel's
// methods.
type Server struct {
	Addr   string   // 127.0.0.1:port
	argv   []string // the program and its arguments, for Revive
	env    []string // added to the test binary's environment, for Revive
	cmd    *exec.Cmd
	dir    string
	done   chan struct{} // closed when the process has exited
	paused bool          // stopped by Pause, not yet resumed
}

var (
	mu      sync.Mutex // guards shared, started and shim
	shared  *Server
	started []*Server
	shim    string // the compiled clock shim, "" until StartShifted needs it
)

// Shared returns the test binary's own server, starting it on first use.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if shared == nil {
		s, err := launch("redis-server", after())
		if err != nil {
			fail(tb, err)
		}
		shared = s
	}
	return shared
}

// Start returns a server of the caller's own with extra redis-server
// arguments (such as "--cluster-enabled", "yes"), stopped at cleanup.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	mu.Lock()
	s, err := launch("redis-server", after(args...))
	mu.Unlock()
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Launch starts a server outside a test, for programs such as the
// benchmarks, with extra redis-server arguments. The caller stops it with
// Server.Stop or Stop; on Linux it also dies with the calling process.
func Launch(args ...string) (*Server, error) {
	mu.Lock()
	defer mu.Unlock()
	return launch("redis-server", after(args...))
}

// Main runs a test binary's tests and then stops its servers: call it from
// TestMain.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs a test binary's tests, stops its servers and returns the exit
// code. When tests were skipped for want of redis-server, the last test
// binary of the go command to end says how many on the terminal.
func Run(m *testing.M) int {
	t := goTally()
	t.start()
	code := m.Run()
	Stop()
	tell(t.end(skipped.Load()))
	return code
}

// Stop stops every server this process started, and removes the clock
// shim that StartShifted compiled.
func Stop() {
	mu.Lock()
	all, lib := started, shim
	started, shared, shim = nil, nil, ""
	mu.Unlock()
	for _, s := range all {
		s.Stop()
	}
	if lib != "" {
		_ = os.RemoveAll(filepath.Dir(lib))
	}
}

// fail skips the test when err says that a program (redis-server, or gcc
// for StartShifted) is not on PATH, unless RequireEnv is 1, and fails it
// otherwise.
func fail(tb testing.TB, err error) {
	tb.Helper()
	if missing, ok := err.(*exec.Error); ok && os.Getenv(RequireEnv) != "1" {
		skipped.Add(1)
		tb.Skipf("redistest: skipped, %[1]s is not on PATH (Debian: apt-get install %[1]s); %[2]s=1 makes this a failure", missing.Name, RequireEnv)
	}
	tb.Fatalf("redistest: %v", err)
}

// A setup returns a server's arguments besides the common ones (port, bind,
// dir, no persistence, log file): those before them, such as a config file,
// and those after them. It may write files into the server's directory dir
// and pick more ports; it runs again for each port launch tries.
type setup func(dir string) (before, after []string, err error)

// after is the setup of a server whose only own arguments are args, after
// the common ones.
func after(args ...string) setup {
	return func(string) ([]string, []string, error) { return nil, args, nil }
}

// launch starts program bin (redis-server or redis-sentinel) on a free port,
// trying a few ports in case another process takes the one picked. The
// caller holds mu.
func launch(bin string, set setup) (*Server, error) { return launchEnv(bin, nil, set) }

// launchEnv is launch with env ("NAME=value" entries) added to the test
// binary's environment for the server.
func launchEnv(bin string, env []string, set setup) (*Server, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, err
	}
	for range 5 {
		var s *Server
		if s, err = launchOnce(path, env, set); err == nil {
			started = append(started, s)
			return s, nil
		}
	}
	return nil, err
}

func launchOnce(bin string, env []string, set setup) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	before, args, err := set(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	base := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
		"--logfile", filepath.Join(dir, "redis.log"),
	}
	s := &Server{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		argv: slices.Concat([]string{bin}, before, base, args), env: env, dir: dir,
	}
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.awaitReady(5 * time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// start runs the server's process and a goroutine that closes done when it
// exits.
func (s *Server) start() error {
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	if s.env != nil {
		cmd.Env = append(os.Environ(), s.env...)
	}
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done, s.paused = cmd, done, false
	return nil
}

// Restart kills the server with SIGKILL, as a crash would, and starts it
// again on the same port with the same directory and arguments, so that it
// loads what it had persisted (start it with "--appendonly", "yes" for
// that; a cluster node rejoins with its nodes.conf). It returns once the new
// process answers PING, or an error that includes its log.
func (s *Server) Restart() error {
	s.Kill()
	return s.Revive()
}

// Kill kills the server with SIGKILL, as a crash would, and keeps its
// directory for Revive.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Revive starts a killed server again as Restart does. It returns an error
// if the server is running.
func (s *Server) Revive() error {
	if !s.exited() {
		return fmt.Errorf("redistest: revive %s: it is running", s.Addr)
	}
	if err := s.start(); err != nil {
		return err
	}
	return s.awaitReady(5 * time.Second)
}

// Pause stops the server with SIGSTOP, as a long stall would: connections
// to it open but get no reply. Resume continues it.
func (s *Server) Pause() error {
	if err := signal(s.cmd.Process, sigStop); err != nil {
		return err
	}
	s.paused = true
	return nil
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() error {
	if err := signal(s.cmd.Process, sigCont); err != nil {
		return err
	}
	s.paused = false
	return nil
}

// up reports whether the server's process runs and is not paused, so that
// it should answer.
func (s *Server) up() bool { return !s.exited() && !s.paused }

func (s *Server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) awaitReady(limit time.Duration) error {
	err := await(limit, s.done, func() error { _, err := s.do("PING"); return err })
	if s.exited() {
		return fmt.Errorf("%s on %s exited at start; log:\n%s", filepath.Base(s.argv[0]), s.Addr, s.log())
	}
	if err != nil {
		return fmt.Errorf("%s on %s not ready: %w; log:\n%s", filepath.Base(s.argv[0]), s.Addr, err, s.log())
	}
	return nil
}

// await calls try every few milliseconds until it returns nil, stop is
// closed or limit has passed, and returns try's last error, saying after how
// long.
func await(limit time.Duration, stop <-chan struct{}, try func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := try()
		if err == nil {
			return nil
		}
		select {
		case <-stop:
			return err
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", limit, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// do runs one command on a new connection, with timeouts so that a dead or
// paused server makes it fail rather than hang.
func (s *Server) do(cmd string, args ...any) (any, error) {
	c, err := s.dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(cmd, args...)
}

func (s *Server) dial() (redis.Conn, error) {
	return redis.Dial("tcp", s.Addr, redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(10*time.Second), redis.DialWriteTimeout(time.Second))
}

// role returns the role INFO gives, "master" or "slave", or "" when the
// server does not answer.
func (s *Server) role() string {
	info, _ := redis.String(s.do("INFO", "replication"))
	return field(info, "role")
}

// linkUp returns nil once replica r is in sync with its master.
func linkUp(r *Server) error {
	info, err := redis.String(r.do("INFO", "replication"))
	if err != nil {
		return fmt.Errorf("%s: INFO: %w", r.Addr, err)
	}
	if field(info, "master_link_status") != "up" {
		return fmt.Errorf("%s: replication link not up", r.Addr)
	}
	return nil
}

// field returns a field of an INFO reply, or "".
func field(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// logs returns the logs of servers, each under its address.
func logs(servers []*Server) string {
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "--- %s:\n%s", s.Addr, s.log())
	}
	return b.String()
}

// log returns the server's log file.
func (s *Server) log() []byte {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return b
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
	_ = os.RemoveAll(s.dir)
}

// Pool returns a pool of connections to the server, closed at cleanup.
func (s *Server) Pool(tb testing.TB) *redis.Pool { return Pool(tb, s.Addr) }

// Pool returns a redigo pool of connections to addr, closed at the end of
// the test.
func Pool(tb testing.TB, addr string) *redis.Pool {
	p := &redis.Pool{
		MaxIdle: 32,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr)
		},
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// Do runs one command on a new connection, failing the test on error.
func (s *Server) Do(tb testing.TB, cmd string, args ...any) any {
	tb.Helper()
	c, err := redis.Dial("tcp", s.Addr)
	if err != nil {
		tb.Fatalf("redistest: dial %s: %v", s.Addr, err)
	}
	defer c.Close()
	reply, err := c.Do(cmd, args...)
	if err != nil {
		tb.Fatalf("redistest: %s: %v", cmd, err)
	}
	return reply
}
