package inspect_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Inspect shows each holder's label, escaped and unescaped on the way, or
// the host and pid by default, and none for "" or a token of an older
// version; when it began and how much lease it has left, on the mock clock.
func TestInspect_labels(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithLease(time.Minute))
	ctx := context.Background()
	host, _ := os.Hostname()
	pid := ":" + strconv.Itoa(os.Getpid())
	cases := []struct {
		opts []uncomplicated.Option
		want string
	}{
		{nil, host[:min(len(host), limits.Label-len(pid))] + pid},
		{[]uncomplicated.Option{uncomplicated.WithHolderLabel("")}, ""},
		{[]uncomplicated.Option{uncomplicated.WithHolderLabel("café 1:{x} %41.")}, "café 1:{x} %41."},
		{[]uncomplicated.Option{uncomplicated.WithHolderLabel(strings.Repeat("x", limits.Label))}, strings.Repeat("x", limits.Label)},
	}
	for i, tc := range cases {
		m := mustNamed(t, env.NewClient(append(tc.opts, uncomplicated.WithLease(time.Minute))...), "labelled"+strconv.Itoa(i))
		start := env.Clock.Now()
		mustLock(t, m)
		env.Advance(10 * time.Second)
		info, err := inspect.Lock(ctx, env.Client, m.Name())
		if err != nil || len(info.Holders) != 1 {
			t.Fatalf("Inspect(%s) = %+v, %v", m.Name(), info, err)
		}
		h := info.Holders[0]
		if h.Label != tc.want || !h.Since.Equal(start.Truncate(time.Millisecond)) || h.LeaseLeft != 50*time.Second || h.Fence != m.Fence() || h.Timeout != limits.Timeout {
			t.Errorf("holder = %+v; want label %q, since %v, 50s left, fence %d, the default timeout", h, tc.want, start, m.Fence())
		}
	}
	// A lock's own label and timeout, not its Client's, which a lock
	// without them shares.
	own, err := uncomplicated.New(env.Client, uncomplicated.Named("own"), uncomplicated.WithHolderLabel("own-label"), uncomplicated.WithTimeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mustLock(t, own)
	if info, err := inspect.Lock(ctx, env.Client, own.Name()); err != nil || len(info.Holders) != 1 || info.Holders[0].Label != "own-label" || info.Holders[0].Timeout != 90*time.Second {
		t.Errorf("Inspect of a lock with its own label and timeout = %+v, %v; want own-label, 90s", info, err)
	}
	for _, old := range []string{"BybxwByeTVOxNCHlXuxt2w", "BybxwByeTVOxNCHlXuxt2w.loyw3v5n.web-1"} {
		env.Redis.Set("lock:old", old)
		if info, err := inspect.Lock(ctx, env.Client, "lock:old"); err != nil || len(info.Holders) != 1 || info.Holders[0].Timeout != 0 || info.Holders[0].Label != strings.TrimPrefix(old, "BybxwByeTVOxNCHlXuxt2w.loyw3v5n.") && old != "BybxwByeTVOxNCHlXuxt2w" {
			t.Errorf("Inspect of an older version's token %q = %+v, %v; want a holder without a timeout, and its label if any", old, info, err)
		}
	}
	if _, err := uncomplicated.New(env.Client, uncomplicated.Named("x"), uncomplicated.WithHolderLabel(strings.Repeat("x", limits.Label+1))); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("a label of %d bytes = %v; want ErrInvalidArgument", limits.Label+1, err)
	}
}

// Inspect shows each holder's timeout, and each waiter's: a waiter finds
// a holder stuck after the longer of the two.
func TestInspect_timeouts(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	holder := mustNamed(t, env.NewClient(uncomplicated.WithTimeout(90*time.Second)), "timed")
	mustLock(t, holder)
	waiter := mustNamed(t, env.NewClient(uncomplicated.WithTimeout(time.Minute)), "timed")
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := lockAsync(wctx, waiter)
	env.AwaitWaiters(1)
	info, err := inspect.Lock(ctx, env.Client, holder.Name())
	if err != nil || len(info.Holders) != 1 || len(info.Waiters) != 1 {
		t.Fatalf("Inspect = %+v, %v; want a holder and a waiter", info, err)
	}
	if h, w := info.Holders[0].Timeout, info.Waiters[0].Timeout; h != 90*time.Second || w != time.Minute {
		t.Errorf("timeouts = %v (holder), %v (waiter); want 1m30s, 1m0s", h, w)
	}
	cancel()
	recv(t, done)
}

// A hold handed over shows when its waiter began to wait, and from its
// first Refresh on (the take of its claim is one) when it was granted. The
// waiter's ticks are short, so that its last attempt comes less than half
// a claim before the release, and the take waits.
func TestInspect_sinceAfterHandOff(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithLease(time.Hour))
	ctx := context.Background()
	a := mustNamed(t, env.Client, "handed")
	b := mustNamed(t, env.NewClient(uncomplicated.WithLease(time.Hour), uncomplicated.WithTicks(3000)), "handed")
	mustLock(t, a)
	waitFrom := env.Clock.Now()
	done := lockAsync(ctx, b)
	env.AwaitWaiters(1)
	env.Advance(5 * time.Second)
	granted := env.Clock.Now()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	since := func() time.Time {
		info, err := inspect.Lock(ctx, env.Client, b.Name())
		if err != nil || len(info.Holders) != 1 {
			t.Fatalf("Inspect = %+v, %v", info, err)
		}
		return info.Holders[0].Since
	}
	if got := since(); !got.Equal(waitFrom.Truncate(time.Millisecond)) {
		t.Errorf("since before Refresh = %v; want when it began to wait, %v", got, waitFrom)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := since(); !got.Equal(granted.Truncate(time.Millisecond)) {
		t.Errorf("since after Refresh = %v; want when it was granted, %v", got, granted)
	}
}

// ForceRelease removes only live holders: readers and permits whose lease
// ended are not reported as removed.
func TestForceRelease_expiredHolders(t *testing.T) {
	env := uncomplicatedtest.New(t, uncomplicated.WithLease(time.Second))
	ctx := context.Background()
	rw := mustNamedRW(t, env.Client, "rw")
	if err := rw.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := uncomplicated.NewSemaphore(env.Client, uncomplicated.Named("sem"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	env.Advance(2 * time.Second)
	for _, name := range []string{rw.Name(), s.Name()} {
		if info, err := inspect.Lock(ctx, env.Client, name); err != nil || info.Held() {
			t.Errorf("Inspect(%s) after the lease = %+v, %v; want free", name, info, err)
		}
		if gone, err := inspect.ForceRelease(ctx, env.Client, name); err != nil || gone.Held() {
			t.Errorf("ForceRelease(%s) after the lease = %+v, %v; want nothing removed", name, gone, err)
		}
	}
}

// A name that a Mutex used and an RWMutex now holds shows, and is
// released, as the RWMutex.
func TestInspect_kindInUse(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	m := mustNamed(t, env.Client, "both")
	mustLock(t, m)
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rw := mustNamedRW(t, env.Client, "both")
	if err := rw.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := inspect.Lock(ctx, env.Client, m.Name())
	if err != nil || info.Kind != inspect.KindRWMutex || len(info.Holders) != 1 || info.Holders[0].Role != inspect.RoleWriter {
		t.Fatalf("Inspect = %+v, %v; want the RWMutex's writer", info, err)
	}
	if gone, err := inspect.ForceRelease(ctx, env.Client, m.Name()); err != nil || len(gone.Holders) != 1 {
		t.Errorf("ForceRelease = %+v, %v; want the writer removed", gone, err)
	}
	if held, err := rw.Held(ctx); held || err != nil {
		t.Errorf("Held() after ForceRelease = %v, %v; want false", held, err)
	}
}

// A lock that nobody holds or waits for shows free, with fence 0, whatever
// keys of it are left: the fence counter of an earlier version, a queue
// whose waiter's entry has expired, a released lock's nothing.
func TestInspect_freeWithKeysLeft(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	m := mustNamed(t, env.Client, "left")
	mustLock(t, m)
	if info, err := inspect.Lock(ctx, env.Client, m.Name()); err != nil || !info.Held() || info.Fence != m.Fence() {
		t.Fatalf("Inspect of the held lock = %+v, %v; want held, fence %d", info, err, m.Fence())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, left := range []func(){
		func() {},
		func() { env.Redis.Set("lock:fence:{lock:left}", "588") },
		func() { _, _ = env.Redis.Push("lock:queue:{lock:left}", "gone") },
	} {
		left()
		info, err := inspect.Lock(ctx, env.Client, m.Name())
		if err != nil || info.Held() || info.Fence != 0 || len(info.Waiters) != 0 {
			t.Errorf("Inspect with keys %q left = %+v, %v; want free, fence 0, no waiters", env.Redis.Keys(), info, err)
		}
	}
}

func mustNamed(t *testing.T, c *uncomplicated.Client, name string) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(c, uncomplicated.Named(name))
	if err != nil {
		t.Fatalf("New(%q) = %v", name, err)
	}
	return m
}

func mustNamedRW(t *testing.T, c *uncomplicated.Client, name string) *uncomplicated.RWMutex {
	t.Helper()
	rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
	if err != nil {
		t.Fatalf("NewRW(%q) = %v", name, err)
	}
	return rw
}

func mustLock(t testing.TB, m *uncomplicated.Mutex) {
	t.Helper()
	if err := m.Lock(context.Background()); err != nil {
		t.Fatalf("Lock(%s) = %v", m.Name(), err)
	}
}

// lockAsync runs m.Lock(ctx) in a goroutine and delivers its error.
func lockAsync(ctx context.Context, m *uncomplicated.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	return done
}

// recv receives from ch, or fails the test after 10s.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing received after 10s")
		panic("unreachable")
	}
}

// List against a single node that does not answer says so, and talks of
// no Cluster: nothing is known of the deployment.
func TestList_unreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // refused from now on
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr)
	}}
	c := uncomplicated.NewClient(redigo.New(pool))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err = inspect.List(ctx, c, "*", 10)
	if err == nil || !strings.Contains(err.Error(), "did not answer") || strings.Contains(err.Error(), "CLUSTER") {
		t.Errorf("List = %v; want that Redis did not answer, with no word of a Cluster", err)
	}
}

// A name whose only keys are the fence counters or the leader's
// announcement that earlier builds kept is no lock: List leaves it out,
// beside a lock that is held.
func TestList_earlierKeysNameNoLock(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	for _, key := range []string{"lock:fence:{lock:old1}", "lock:rwfence:{lock:old2}", "lock:semfence:{lock:old3}", "lock:leader:{lock:election:old4}"} {
		env.Redis.Set(key, "588")
	}
	m := mustNamed(t, env.Client, "held")
	mustLock(t, m)
	locks, more, err := inspect.List(ctx, env.Client, "*", 10)
	if err != nil || more || len(locks) != 1 || locks[0].Name != m.Name() || !locks[0].Held() {
		t.Errorf("List = %+v, %v, %v; want the held lock alone", locks, more, err)
	}
}
