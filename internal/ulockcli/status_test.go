package ulockcli_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/internal/ulocktest"
)

// A fixture is a Redis with locks of every kind under a prefix of the
// test's own, held by Clients with labels:
//
//	m        a Mutex held by t-mutex, t-waiter waiting
//	rw       an RWMutex read by t-reader1 and t-reader2
//	sem      a Semaphore of 2 permits held by t-permit twice, t-semwaiter waiting
//	forever  a Mutex without a lease, held by t-forever
type fixture struct {
	srv    *redistest.Server
	prefix string
	m      *uncomplicated.Mutex
	sem    []*uncomplicated.Permit
	waited chan waited // what the waiters got, when they got it
}

// waited is what a waiter got: its fence, or an error.
type waited struct {
	fence uint64
	err   error
}

// newFixture makes the fixture; with only set, only the locks it names.
func newFixture(t *testing.T, only ...string) *fixture {
	t.Helper()
	// A prefix of the test's own, also under -count.
	prefix := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	f := &fixture{srv: redistest.Shared(t), prefix: prefix, waited: make(chan waited, 2)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	want := func(name string) bool { return len(only) == 0 || slices.Contains(only, name) }
	if want("m") {
		f.m = must(f.client(t, "t-mutex").Named("m"))
		if err := f.m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		w := must(f.client(t, "t-waiter").Named("m"))
		f.wait(t, func(ctx context.Context) (uint64, error) { err := w.Lock(ctx); return w.Fence(), err })
	}
	if want("rw") {
		for _, label := range []string{"t-reader1", "t-reader2"} {
			if err := must(f.client(t, label).NamedRW("rw")).RLock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want("sem") {
		sem := must(f.client(t, "t-permit").NamedSemaphore("sem", 2))
		for range 2 {
			f.sem = append(f.sem, must(sem.Acquire(ctx)))
		}
		w := must(f.client(t, "t-semwaiter").NamedSemaphore("sem", 2))
		f.wait(t, func(ctx context.Context) (uint64, error) {
			p, err := w.Acquire(ctx)
			if err != nil {
				return 0, err
			}
			return p.Fence(), nil
		})
	}
	if want("forever") {
		if err := must(f.client(t, "t-forever", uncomplicated.WithLease(0)).Named("forever")).Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	f.awaitWaiters(t)
	return f
}

// client returns a Client of the fixture's with label and opts, closed at
// the test's end.
func (f *fixture) client(t *testing.T, label string, opts ...uncomplicated.Option) *uncomplicated.Client {
	c := uncomplicated.NewClient(f.srv.Pool(t), append([]uncomplicated.Option{
		uncomplicated.WithPrefix(f.prefix), uncomplicated.WithHolderLabel(label)}, opts...)...)
	t.Cleanup(func() { c.Close() })
	return c
}

// wait runs acquire in a goroutine that reports on f.waited, until it
// acquires or the test ends.
func (f *fixture) wait(t *testing.T, acquire func(context.Context) (uint64, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		fence, err := acquire(ctx)
		f.waited <- waited{fence, err}
	}()
}

// awaitWaiters waits until the fixture's waiters are in their queues,
// where Inspect shows them.
func (f *fixture) awaitWaiters(t *testing.T) {
	t.Helper()
	c := f.client(t, "")
	deadline := time.Now().Add(5 * time.Second)
	for _, name := range []string{"m", "sem"} {
		for {
			info, err := c.Inspect(context.Background(), f.prefix+":"+name)
			if err != nil {
				t.Fatal(err)
			}
			if info.Kind == "" || len(info.Waiters) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s has no waiter in its queue after 5s", name)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// inspect returns what Redis has of the fixture's lock name.
func (f *fixture) inspect(t *testing.T, name string) uncomplicated.LockInfo {
	t.Helper()
	info, err := f.client(t, "").Inspect(context.Background(), f.prefix+":"+name)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// ulock runs ulock on the fixture's Redis and prefix.
func (f *fixture) ulock(t *testing.T, args ...string) ulocktest.Result {
	t.Helper()
	return ulock(t, append(args, redisFlag(f.srv), "--prefix", f.prefix)...)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// lockJSON is a line of status --json, as "ulock help status" documents it.
type lockJSON struct {
	Name           string       `json:"name"`
	Kind           string       `json:"kind"`
	State          string       `json:"state"`
	Fence          uint64       `json:"fence"`
	Holders        []holderJSON `json:"holders"`
	Waiters        []waiterJSON `json:"waiters"`
	WaitingWriters int          `json:"waiting_writers"`
	Permits        *int         `json:"permits"`
	At             string       `json:"at"`
}

type holderJSON struct {
	Role      string   `json:"role"`
	Label     string   `json:"label"`
	Since     *string  `json:"since"`
	HeldFor   *float64 `json:"held_for_seconds"`
	LeaseLeft *float64 `json:"lease_left_seconds"`
	Fence     uint64   `json:"fence"`
}

type waiterJSON struct {
	Role   string   `json:"role"`
	Label  string   `json:"label"`
	Since  *string  `json:"since"`
	Waited *float64 `json:"waited_seconds"`
}

// parseLines reads JSON Lines of locks, requiring every documented field
// and no other, by name.
func parseLines(t *testing.T, out string) map[string]lockJSON {
	t.Helper()
	locks := map[string]lockJSON{}
	for line := range strings.Lines(out) {
		var fields map[string]any
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Fatalf("a line of JSON Lines: %v: %q", err, line)
		}
		want := []string{"name", "kind", "state", "fence", "holders", "waiters", "waiting_writers", "permits", "at"}
		if got := slices.Sorted(maps.Keys(fields)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("fields %q; want %q", got, want)
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var l lockJSON
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("decoding %q: %v", line, err)
		}
		if _, err := time.Parse(time.RFC3339, l.At); err != nil {
			t.Errorf("%s: at %q: %v", l.Name, l.At, err)
		}
		locks[l.Name] = l
	}
	return locks
}

func labels[T any](xs []T, label func(T) string) []string {
	var ls []string
	for _, x := range xs {
		ls = append(ls, label(x))
	}
	slices.Sort(ls)
	return ls
}

func TestStatus_json(t *testing.T) {
	f := newFixture(t)
	p := f.prefix + ":"
	// A plain name, a full name as list prints it, and a lock of nothing.
	r := f.ulock(t, "status", "m", "--json", p+"rw", "sem", "forever", "none")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("status: exit %d, stderr %q", r.Code, r.Stderr)
	}
	locks := parseLines(t, r.Stdout)
	if len(locks) != 5 {
		t.Fatalf("status printed %d locks; want 5:\n%s", len(locks), r.Stdout)
	}

	m := locks[p+"m"]
	if m.Kind != "mutex" || m.State != "held" || m.Fence != f.m.Fence() || len(m.Holders) != 1 || len(m.Waiters) != 1 || m.Permits != nil {
		t.Fatalf("m = %+v; want a held mutex, fence %d, 1 holder, 1 waiter", m, f.m.Fence())
	}
	h := m.Holders[0]
	if h.Role != "holder" || h.Label != "t-mutex" || h.Fence != f.m.Fence() || h.Since == nil ||
		h.HeldFor == nil || *h.HeldFor < 0 || *h.HeldFor > 60 || h.LeaseLeft == nil || *h.LeaseLeft <= 0 || *h.LeaseLeft > 600 {
		t.Errorf("m's holder = %+v", h)
	}
	if w := m.Waiters[0]; w.Label != "t-waiter" || w.Since == nil || w.Waited == nil {
		t.Errorf("m's waiter = %+v", w)
	}

	rw := locks[p+"rw"]
	if got := labels(rw.Holders, func(h holderJSON) string { return h.Role + " " + h.Label }); rw.Kind != "rwmutex" || rw.State != "held" ||
		!slices.Equal(got, []string{"reader t-reader1", "reader t-reader2"}) {
		t.Errorf("rw = %+v; want an rwmutex read by t-reader1 and t-reader2", rw)
	}
	for _, h := range rw.Holders {
		if h.Fence != 0 {
			t.Errorf("a reader's fence = %d; want 0", h.Fence)
		}
	}

	sem := locks[p+"sem"]
	if sem.Kind != "semaphore" || len(sem.Holders) != 2 || len(sem.Waiters) != 1 || sem.Permits == nil || *sem.Permits != 2 {
		t.Fatalf("sem = %+v; want a semaphore of 2 permits, both held, 1 waiter", sem)
	}
	if fences := []uint64{sem.Holders[0].Fence, sem.Holders[1].Fence}; !slices.Contains(fences, f.sem[0].Fence()) ||
		!slices.Contains(fences, f.sem[1].Fence()) || sem.Holders[0].Role != "permit" || sem.Holders[0].Label != "t-permit" {
		t.Errorf("sem's holders = %+v; want permits of t-permit with fences %d and %d", sem.Holders, f.sem[0].Fence(), f.sem[1].Fence())
	}
	if w := sem.Waiters[0]; w.Label != "t-semwaiter" {
		t.Errorf("sem's waiter = %+v", w)
	}

	if forever := locks[p+"forever"]; len(forever.Holders) != 1 || forever.Holders[0].LeaseLeft != nil {
		t.Errorf("forever = %+v; want a holder with a null lease_left_seconds", forever)
	}
	none := locks[p+"none"]
	if none.Kind != "" || none.State != "free" || none.Fence != 0 || none.Holders == nil || len(none.Holders) != 0 || none.Waiters == nil {
		t.Errorf("none = %+v; want kind \"\", free, fence 0, empty holders and waiters", none)
	}
}

// table reads the table status and list print: its rows by name, each a
// map from column to cell.
func table(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	header := lines[0]
	cols := []string{"NAME", "KIND", "STATE", "HOLDER", "HELD FOR", "LEASE LEFT", "FENCE", "WAITERS", "IN USE"}
	var starts []int
	for _, c := range cols {
		i := strings.Index(header, c)
		if i < 0 {
			t.Fatalf("header %q lacks %s", header, c)
		}
		starts = append(starts, i)
	}
	rows := map[string]map[string]string{}
	for _, line := range lines[1:] {
		row := map[string]string{}
		for i, c := range cols {
			end := len(line)
			if i+1 < len(starts) {
				end = starts[i+1]
			}
			row[c] = strings.TrimSpace(line[starts[i]:min(end, len(line))])
		}
		rows[row["NAME"]] = row
	}
	return rows
}

func TestStatus_table(t *testing.T) {
	f := newFixture(t)
	r := f.ulock(t, "status", "m", "rw", "sem", "forever", "none")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("status: exit %d, stderr %q", r.Code, r.Stderr)
	}
	rows := table(t, r.Stdout)
	p := f.prefix + ":"
	want := map[string]map[string]string{
		p + "m":       {"KIND": "mutex", "STATE": "held", "HOLDER": "t-mutex", "FENCE": "1", "WAITERS": "1", "IN USE": "-"},
		p + "rw":      {"KIND": "rwmutex", "STATE": "held", "WAITERS": "0", "IN USE": "2 readers"},
		p + "sem":     {"KIND": "semaphore", "HOLDER": "t-permit +1", "FENCE": "2", "WAITERS": "1", "IN USE": "2 of 2"},
		p + "forever": {"HOLDER": "t-forever", "LEASE LEFT": "none"},
		p + "none":    {"KIND": "-", "STATE": "free", "HOLDER": "-", "HELD FOR": "-", "FENCE": "0", "WAITERS": "0"},
	}
	for name, cells := range want {
		for col, cell := range cells {
			if got := rows[name][col]; got != cell {
				t.Errorf("%s %s = %q; want %q\n%s", name, col, got, cell, r.Stdout)
			}
		}
	}
	if h := rows[p+"rw"]["HOLDER"]; h != "t-reader1 +1" && h != "t-reader2 +1" {
		t.Errorf("rw HOLDER = %q; want a reader +1", h)
	}
	if d, err := time.ParseDuration(rows[p+"m"]["HELD FOR"]); err != nil || d > time.Minute {
		t.Errorf("m HELD FOR = %q; want a short duration", rows[p+"m"]["HELD FOR"])
	}
	if d, err := time.ParseDuration(rows[p+"m"]["LEASE LEFT"]); err != nil || d <= 9*time.Minute || d > 10*time.Minute {
		t.Errorf("m LEASE LEFT = %q; want nearly 10m", rows[p+"m"]["LEASE LEFT"])
	}
}

func TestList(t *testing.T) {
	f := newFixture(t)
	p := f.prefix + ":"
	r := f.ulock(t, "list", "--json")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("list: exit %d, stderr %q", r.Code, r.Stderr)
	}
	got := slices.Sorted(maps.Keys(parseLines(t, r.Stdout)))
	if want := []string{p + "forever", p + "m", p + "rw", p + "sem"}; !slices.Equal(got, want) {
		t.Errorf("list --json named %q; want %q", got, want)
	}
	if rows := table(t, f.ulock(t, "list").Stdout); len(rows) != 4 || rows[p+"sem"]["IN USE"] != "2 of 2" {
		t.Errorf("list's table = %v; want the 4 locks", rows)
	}
	for _, match := range []string{"r*", p + "r?"} {
		if got := slices.Collect(maps.Keys(parseLines(t, f.ulock(t, "list", "--json", "--match", match).Stdout))); !slices.Equal(got, []string{p + "rw"}) {
			t.Errorf("list --match %s named %q; want %s", match, got, p+"rw")
		}
	}
	r = f.ulock(t, "list", "--limit", "1", "--json")
	if n := strings.Count(r.Stdout, "\n"); r.Code != 0 || n != 1 {
		t.Errorf("list --limit 1: exit %d, %d lines; want 0, 1", r.Code, n)
	}
	ulocktest.WantOneLine(t, r, 0, "showing the first 1 locks; more match")
	ulocktest.WantOneLine(t, ulock(t, "list", redisFlag(f.srv), "--prefix", f.prefix+"-none"), 0, "no locks match "+f.prefix+"-none:*")
}
