// Package redistest starts throwaway redis-server processes on free
// loopback ports for tests.
//
// A test that needs Redis calls Shared (one server per test binary) or
// Start (a server of its own). When redis-server is not on PATH the test is
// skipped, or fails when UNCOMPLICATED_REQUIRE_REDIS=1. Test binaries call
// Main from TestMain so that no server outlives them.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// RequireEnv makes a missing redis-server fail tests instead of skipping them.
const RequireEnv = "UNCOMPLICATED_REQUIRE_REDIS"

// A Server is a running redis-server.
type Server struct {
	Addr string   // 127.0.0.1:port
	argv []string // redis-server and its arguments, for Restart
	cmd  *exec.Cmd
	dir  string
	done chan struct{} // closed when the process has exited
}

var (
	mu      sync.Mutex // guards shared and started
	shared  *Server
	started []*Server
)

// Shared returns the test binary's own server, starting it on first use.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if shared == nil {
		s, err := launch()
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
	s, err := launch(args...)
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
	return launch(args...)
}

// Main runs a test binary's tests and then stops its servers: call it from
// TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops every server this process started.
func Stop() {
	mu.Lock()
	all := started
	started, shared = nil, nil
	mu.Unlock()
	for _, s := range all {
		s.Stop()
	}
}

func fail(tb testing.TB, err error) {
	tb.Helper()
	if _, missing := err.(*exec.Error); missing && os.Getenv(RequireEnv) != "1" {
		tb.Skipf("redistest: skipped, redis-server is not on PATH (Debian: apt-get install redis-server); %s=1 makes this a failure", RequireEnv)
	}
	tb.Fatalf("redistest: %v", err)
}

// launch starts redis-server on a free port, trying a few ports in case
// another process takes the one picked. The caller holds mu.
func launch(args ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	for range 5 {
		var s *Server
		if s, err = launchOnce(bin, args); err == nil {
			started = append(started, s)
			return s, nil
		}
	}
	return nil, err
}

func launchOnce(bin string, args []string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	base := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
		"--logfile", filepath.Join(dir, "redis.log"),
	}
	s := &Server{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		argv: append(append([]string{bin}, base...), args...), dir: dir,
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
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	return nil
}

// Restart kills the server with SIGKILL, as a crash would, and starts it
// again on the same port with the same directory and arguments, so that it
// loads what it had persisted (start it with "--appendonly", "yes" for
// that). It returns once the new process answers PING, or an error that
// includes its log. It must not run concurrently with Stop or Restart.
func (s *Server) Restart() error {
	_ = s.cmd.Process.Kill()
	<-s.done
	if err := s.start(); err != nil {
		return err
	}
	return s.awaitReady(5 * time.Second)
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
	deadline := time.Now().Add(limit)
	for {
		c, err := redis.Dial("tcp", s.Addr, redis.DialConnectTimeout(time.Second))
		if err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server on %s exited at start; log:\n%s", s.Addr, s.log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s not ready after %v: %w; log:\n%s", s.Addr, limit, err, s.log())
		}
		time.Sleep(5 * time.Millisecond)
	}
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
func (s *Server) Pool(tb testing.TB) *redis.Pool {
	p := &redis.Pool{
		MaxIdle: 32,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", s.Addr)
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
