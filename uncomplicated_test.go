package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// Integration tests, in the _redis_test.go files, run on a real
// redis-server that the tests start on a free loopback port: TTLs, scripts
// and concurrency as Redis really has them. They skip when redis-server is
// not on PATH, and fail instead when UNCOMPLICATED_REQUIRE_REDIS=1.

var prefixes atomic.Int64

// rig is a test's corner of the shared server: a prefix of its own, so that
// tests never meet each other's locks, and a connection for checks.
type rig struct {
	t      *testing.T
	pool   *redis.Pool
	prefix string
	conn   redis.Conn
}

func newRig(t *testing.T) *rig {
	t.Helper()
	pool := redistest.Shared(t).Pool(t)
	conn, err := pool.GetContext(context.Background())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &rig{t: t, pool: pool, prefix: fmt.Sprintf("t%d", prefixes.Add(1)), conn: conn}
}

// client returns a Client with opts, as one process would have.
func (r *rig) client(opts ...uncomplicated.Option) *uncomplicated.Client {
	c := uncomplicated.NewClient(redigo.New(r.pool), append([]uncomplicated.Option{uncomplicated.WithPrefix(r.prefix)}, opts...)...)
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (r *rig) do(cmd string, args ...any) any {
	r.t.Helper()
	reply, err := r.conn.Do(cmd, args...)
	if err != nil {
		r.t.Fatalf("%s: %v", cmd, err)
	}
	return reply
}

// A Redis that refuses connections, or accepts and never answers, ends Lock
// by its ctx deadline: no hang.
func TestRedis_unreachable(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		silent.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused.Close()

	for name, addr := range map[string]string{"silent": silent.Addr().String(), "refused": refused.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr)
			}}
			defer pool.Close()
			m, err := uncomplicated.New(uncomplicated.NewClient(redigo.New(pool)), uncomplicated.Named("x"))
			if err != nil {
				t.Fatal(err)
			}
			const limit = 200 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			start := time.Now()
			err = m.Lock(ctx)
			if took := time.Since(start); err == nil || took > limit+100*time.Millisecond {
				t.Errorf("Lock() = %v after %v; want an error within %v", err, took, limit)
			}
			if name == "silent" && !(errors.Is(err, uncomplicated.ErrNotObtained) && errors.Is(err, context.DeadlineExceeded)) {
				t.Errorf("Lock() = %v; want ErrNotObtained and context.DeadlineExceeded", err)
			}
			if m.Fence() != 0 {
				t.Errorf("Fence() = %d after a failed Lock", m.Fence())
			}
		})
	}
}

// A Client that Redis has never answered says so once, at Warn, within 2 s
// of its first wait, naming the failure: on its logger, or on
// slog.Default() when it has none, so that a first run against a wrong
// address does not wait in silence.
func TestClient_unreachedSaysSo(t *testing.T) {
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := refused.Addr().String()
	refused.Close()
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr)
	}}
	defer pool.Close()
	count := func(r *logRecorder) (n int) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, m := range r.msgs {
			if strings.HasPrefix(m, "WARN uncomplicated: Redis has not answered") {
				n++
			}
		}
		return n
	}
	lock := func(c *uncomplicated.Client, d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		if err := mustNew(t, c, Order{1}).Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock = %v; want the deadline", err)
		}
	}

	own := &logRecorder{}
	c := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithLogger(slog.New(own)))
	defer c.Close()
	lock(c, 2*time.Second)
	lock(c, 500*time.Millisecond)
	if n := count(own); n != 1 {
		t.Errorf("%d records that Redis has not answered on the Client's logger over two Locks, the first of 2s; want 1 (%q)", n, own.msgs)
	}
	own.mu.Lock()
	named := slices.ContainsFunc(own.attrs, func(a map[string]string) bool { return strings.Contains(a["error"], "connection refused") })
	own.mu.Unlock()
	if !named {
		t.Errorf("no record names the refused connection: %v", own.attrs)
	}

	def := &logRecorder{}
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(def))
	silent := uncomplicated.NewClient(redigo.New(pool))
	defer silent.Close()
	lock(silent, 2*time.Second)
	if n := count(def); n != 1 {
		t.Errorf("%d records that Redis has not answered on slog.Default() for a Client without a logger, in a Lock of 2s; want 1 (%q)", n, def.msgs)
	}
}
