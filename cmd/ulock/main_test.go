package main

import (
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/ulocktest"
)

// The tests run the ulock binary, built once by TestMain, as real
// processes; those of the _redis_test.go files against a real
// redis-server.

func TestMain(m *testing.M) { ulocktest.Main(m) }

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
