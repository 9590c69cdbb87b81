package ulockcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// ulock demo: workers contend for a few orders' locks; one hangs while
// holding a lock and is found stale by the others.

// Order is what the demo's workers lock.
type Order struct{ N int }

func (o Order) ID() int { return o.N }

// LockType names the orders' locks ulock-demo:demo.Order:N, wherever this
// code lives.
func (Order) LockType() string { return "demo.Order" }

// demoConfig is what the demo's flags set.
type demoConfig struct {
	takeOver bool
	workers  int
	orders   int
	jobs     int
	timeout  time.Duration
	lease    time.Duration
	work     time.Duration
	seed     uint64
}

// parseDemo reads the demo's flags; done reports that it printed the help
// or a mistake, and the exit code.
func (s *session) parseDemo(args []string) (cfg demoConfig, done bool, code int) {
	fs := newFlags("demo")
	policy := fs.String("policy", "takeover", "")
	fs.IntVar(&cfg.workers, "workers", 4, "")
	fs.IntVar(&cfg.orders, "orders", 3, "")
	fs.IntVar(&cfg.jobs, "jobs", 4, "")
	fs.DurationVar(&cfg.timeout, "timeout", 1500*time.Millisecond, "")
	fs.DurationVar(&cfg.lease, "lease", 10*time.Second, "")
	fs.DurationVar(&cfg.work, "work", 200*time.Millisecond, "")
	fs.Uint64Var(&cfg.seed, "seed", 1, "")
	extra, _, done, code := s.parse(fs, args)
	switch {
	case done:
		return cfg, true, code
	case len(extra) > 0:
		return cfg, true, s.usage(fmt.Sprintf("demo takes no arguments, got %q", extra))
	}
	switch strings.ToLower(*policy) {
	case "takeover":
		cfg.takeOver = true
	case "fail":
		cfg.takeOver = false
	default:
		return cfg, true, s.usage(fmt.Sprintf("-policy must be takeover or fail, not %q", *policy))
	}
	if cfg.workers < 2 || cfg.orders < 1 || cfg.jobs < 1 {
		return cfg, true, s.usage("-workers must be at least 2, -orders and -jobs at least 1")
	}
	return cfg, false, 0
}

// demo runs the demo: on REDIS_URL's Redis, deleting its keys afterwards,
// or without REDIS_URL on an embedded in-memory Redis. SIGINT ends it.
func (s *session) demo(ctx context.Context, args []string) int {
	cfg, done, code := s.parseDemo(args)
	if done {
		return code
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	url := os.Getenv("REDIS_URL")
	pool, where, closeRedis, err := demoRedis(url)
	if err != nil {
		return s.fail(err)
	}
	defer closeRedis()
	if url != "" { // the user's Redis: leave nothing behind
		defer func() {
			if err := deleteKeys(pool, demoPrefix); err != nil {
				s.say("deleting its keys: %v", err)
			}
		}()
	}
	if err := demo(ctx, cfg, pool, where, s.stdout); err != nil {
		return s.fail(err)
	}
	return exitOK
}

// demoPrefix is the first part of the names of the demo's locks.
const demoPrefix = "ulock-demo"

// demoRedis returns a pool on REDIS_URL, or on an embedded miniredis whose
// TTLs run on the wall clock, as a real server's do.
func demoRedis(url string) (pool *redis.Pool, where string, stop func(), err error) {
	if url != "" {
		pool = &redis.Pool{MaxIdle: 16, DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialURLContext(ctx, url, redis.DialConnectTimeout(3*time.Second),
				redis.DialReadTimeout(3*time.Second), redis.DialWriteTimeout(3*time.Second))
		}}
		conn, err := pool.GetContext(context.Background())
		if err == nil {
			_, err = conn.Do("PING")
			conn.Close()
		}
		if err != nil {
			pool.Close()
			return nil, "", nil, fmt.Errorf("REDIS_URL %s: %w", redacted(url), err)
		}
		return pool, "Redis at " + redacted(url), func() { pool.Close() }, nil
	}
	srv, err := miniredis.Run()
	if err != nil {
		return nil, "", nil, err
	}
	srv.ClockTTL(true)
	pool = &redis.Pool{MaxIdle: 16, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", srv.Addr())
	}}
	return pool, "embedded in-memory Redis (miniredis; set REDIS_URL to use a server)", func() { pool.Close(); srv.Close() }, nil
}

// deleteKeys deletes every key whose name starts with prefix and a colon,
// SCANning rather than blocking the server with KEYS.
func deleteKeys(pool *redis.Pool, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pool.GetContext(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	cursor := "0"
	for {
		reply, err := redis.Values(redis.DoContext(conn, ctx, "SCAN", cursor, "MATCH", prefix+":*", "COUNT", 1000))
		if err != nil {
			return err
		}
		var keys []any
		if _, err := redis.Scan(reply, &cursor, &keys); err != nil {
			return err
		}
		if len(keys) > 0 {
			if _, err := redis.DoContext(conn, ctx, "DEL", keys...); err != nil {
				return err
			}
		}
		if cursor == "0" {
			return nil
		}
	}
}

func demo(ctx context.Context, cfg demoConfig, pool *redis.Pool, where string, out io.Writer) error {
	tl := &timeline{out: out, start: time.Now()}
	policy := "Fail"
	if cfg.takeOver {
		policy = "TakeOver"
	}
	fmt.Fprintf(out, "%d workers, %d orders, %d jobs each; timeout %v, lease %v, stale policy %s\n%s\n\n",
		cfg.workers, cfg.orders, cfg.jobs, cfg.timeout, cfg.lease, policy, where)
	client := uncomplicated.NewClient(redigo.New(pool),
		uncomplicated.WithPrefix(demoPrefix),
		uncomplicated.WithTimeout(cfg.timeout),
		uncomplicated.WithTicks(20),
		uncomplicated.WithLease(cfg.lease),
		uncomplicated.WithTakeOver(cfg.takeOver))
	defer client.Close()

	store := &fencedStore{highest: map[int]uint64{}}
	hung := cfg.workers // the last worker hangs in its first job
	var wg sync.WaitGroup
	errs := make(chan error, cfg.workers)
	for w := 1; w <= cfg.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := &worker{name: fmt.Sprintf("w%d", w), cfg: cfg, client: client, store: store, tl: tl,
				rnd: rand.New(rand.NewPCG(cfg.seed, uint64(w))), hangs: w == hung}
			if err := wk.run(ctx, w); err != nil {
				errs <- fmt.Errorf("%s: %w", wk.name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return err
	}
	store.report(out, tl.since())
	return nil
}

func collect(errs <-chan error) []error {
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return all
}

// worker runs jobs, each on one order under its lock.
type worker struct {
	name   string
	cfg    demoConfig
	client *uncomplicated.Client
	store  *fencedStore
	tl     *timeline
	rnd    *rand.Rand
	hangs  bool
}

func (wk *worker) run(ctx context.Context, w int) error {
	log := slog.New(&logLines{tl: wk.tl}).With("worker", wk.name)
	for j := range wk.cfg.jobs {
		order := Order{N: (w+j)%wk.cfg.orders + 1}
		m, err := uncomplicated.New(wk.client, order, uncomplicated.WithLogger(log))
		if err != nil {
			return err
		}
		hang := wk.hangs && j == 0
		if !hang {
			time.Sleep(time.Duration(wk.rnd.Int64N(int64(wk.cfg.work)))) // arrive at different times
		}
		err = m.Do(ctx, func(ctx context.Context) error { return wk.job(ctx, m, order, hang) })
		switch {
		case errors.Is(err, uncomplicated.ErrStale):
			wk.store.gaveUp()
			wk.tl.say(wk.name, "gave up on order %d: %v", order.N, err)
		case errors.Is(err, uncomplicated.ErrLost):
			wk.tl.say(wk.name, "lost order %d's lock: %v", order.N, err)
		case err != nil:
			return err
		}
	}
	return nil
}

// job holds order's lock: it works, then writes to the fenced store.
func (wk *worker) job(ctx context.Context, m *uncomplicated.Mutex, order Order, hang bool) error {
	fence := m.Fence()
	work := wk.cfg.work/2 + time.Duration(wk.rnd.Int64N(int64(wk.cfg.work)))
	if hang {
		work = 3 * wk.cfg.timeout
		wk.tl.say(wk.name, "hangs for %v holding order %d (fence %d)", work, order.N, fence)
	}
	select {
	case <-time.After(work):
	case <-ctx.Done():
		return ctx.Err()
	}
	if hang {
		wk.tl.say(wk.name, "wakes up and writes order %d with fence %d", order.N, fence)
	}
	if !wk.store.write(order.N, fence) {
		wk.tl.say(wk.name, "store REJECTED the write of order %d: fence %d is not above %d", order.N, fence, wk.store.get(order.N))
	}
	return nil
}

// fencedStore stands for the database the locks protect: it refuses a
// write whose fence is not above the highest it has accepted. It also
// counts the jobs that never wrote because they gave up on a stale lock.
type fencedStore struct {
	mu       sync.Mutex // guards the fields below
	highest  map[int]uint64
	accepted int
	rejected int
	gaveUps  int
}

func (s *fencedStore) gaveUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gaveUps++
}

func (s *fencedStore) write(order int, fence uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence <= s.highest[order] {
		s.rejected++
		return false
	}
	s.highest[order] = fence
	s.accepted++
	return true
}

func (s *fencedStore) get(order int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.highest[order]
}

func (s *fencedStore) report(out io.Writer, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(out, "\nstore: %d writes accepted, %d rejected by their fence; %d %s gave up on a stale lock; took %v\n",
		s.accepted, s.rejected, s.gaveUps, plural(s.gaveUps, "job", "jobs"), took.Round(time.Millisecond))
}

// timeline prints what happens, with the time since the start.
type timeline struct {
	out   io.Writer
	start time.Time
	mu    sync.Mutex // serialises lines
}

func (t *timeline) since() time.Duration { return time.Since(t.start) }

func (t *timeline) say(who, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.out, "%7.3fs  %-3s  %s\n", t.since().Seconds(), who, fmt.Sprintf(format, args...))
}

// logLines is the slog.Handler that puts the library's records, of every
// level, on the timeline.
type logLines struct {
	tl    *timeline
	attrs []slog.Attr
}

func (h *logLines) Enabled(context.Context, slog.Level) bool { return true }

func (h *logLines) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logLines{tl: h.tl, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h *logLines) WithGroup(string) slog.Handler { return h }

// Handle turns a record such as "lock acquired" lock=... fence=3 into a
// timeline line.
func (h *logLines) Handle(_ context.Context, r slog.Record) error {
	fields := map[string]string{}
	collect := func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindDuration {
			a.Value = slog.DurationValue(a.Value.Duration().Round(time.Millisecond))
		}
		fields[a.Key] = a.Value.String()
		return true
	}
	for _, a := range h.attrs {
		collect(a)
	}
	r.Attrs(collect)
	extra := ""
	if f, ok := fields["fence"]; ok {
		extra += "  fence " + f
	}
	if age, ok := fields["age"]; ok {
		extra += "  (one token for " + age + ")"
	}
	h.tl.say(fields["worker"], "%-13s %s%s", strings.TrimPrefix(r.Message, "lock "), fields["lock"], extra)
	return nil
}

// redacted is rawURL with its password, if any, replaced by "xxxxx".
func redacted(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return "(not a URL)"
}
