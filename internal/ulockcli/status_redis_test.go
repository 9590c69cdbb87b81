package ulockcli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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

// A fixture is a Redis with locks of every kind under a prefix of the
// test's own, held by Clients with labels, with the default timeout (5m)
// unless said otherwise:
//
//	m        a Mutex held by t-mutex, t-waiter (timeout 1m) waiting
//	rw       an RWMutex read by t-reader1 and t-reader2
//	sem      a Semaphore of 2 permits held by t-permit twice, t-semwaiter waiting
//	forever  a Mutex without a lease, held by t-forever (timeout 1m30s)
//	old      a Mutex held by t-old, of a version whose tokens state no timeout
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
		f.m = must(uncomplicated.New(f.client(t, "t-mutex"), uncomplicated.Named("m")))
		if err := f.m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		w := must(uncomplicated.New(f.client(t, "t-waiter", uncomplicated.WithTimeout(time.Minute)), uncomplicated.Named("m")))
		f.wait(t, func(ctx context.Context) (uint64, error) { err := w.Lock(ctx); return w.Fence(), err })
	}
	if want("rw") {
		for _, label := range []string{"t-reader1", "t-reader2"} {
			if err := must(uncomplicated.NewRW(f.client(t, label), uncomplicated.Named("rw"))).RLock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want("sem") {
		sem := must(uncomplicated.NewSemaphore(f.client(t, "t-permit"), uncomplicated.Named("sem"), 2))
		for range 2 {
			f.sem = append(f.sem, must(sem.Acquire(ctx)))
		}
		w := must(uncomplicated.NewSemaphore(f.client(t, "t-semwaiter"), uncomplicated.Named("sem"), 2))
		f.wait(t, func(ctx context.Context) (uint64, error) {
			p, err := w.Acquire(ctx)
			if err != nil {
				return 0, err
			}
			return p.Fence(), nil
		})
	}
	if want("forever") {
		forever := must(uncomplicated.New(f.client(t, "t-forever", uncomplicated.WithLease(0), uncomplicated.WithTimeout(90*time.Second)), uncomplicated.Named("forever")))
		if err := forever.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if want("old") {
		// A token of the version before: its secret, when the hold began
		// (ms, base 36) and its label; no Client ID, no timeout.
		token := strings.Repeat("s", 22) + "." + strconv.FormatInt(time.Now().UnixMilli(), 36) + ".t-old"
		f.srv.Do(t, "SET", f.prefix+":old", token, "PX", 600000)
	}
	f.awaitWaiters(t)
	return f
}

// client returns a Client of the fixture's with label and opts, closed at
// the test's end.
func (f *fixture) client(t *testing.T, label string, opts ...uncomplicated.Option) *uncomplicated.Client {
	c := uncomplicated.NewClient(redigo.New(f.srv.Pool(t)), append([]uncomplicated.Option{
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
			info, err := inspect.Lock(context.Background(), c, f.prefix+":"+name)
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
func (f *fixture) inspect(t *testing.T, name string) inspect.Info {
	t.Helper()
	info, err := inspect.Lock(context.Background(), f.client(t, ""), f.prefix+":"+name)
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
	Timeout   *float64 `json:"timeout_seconds"`
	Fence     uint64   `json:"fence"`
}

type waiterJSON struct {
	Role    string   `json:"role"`
	Label   string   `json:"label"`
	Since   *string  `json:"since"`
	Waited  *float64 `json:"waited_seconds"`
	Timeout *float64 `json:"timeout_seconds"`
}

// parseLines reads JSON Lines of locks, requiring every documented field
// and no other, by name, of the locks, their holders and their waiters.
func parseLines(t *testing.T, out string) map[string]lockJSON {
	t.Helper()
	locks := map[string]lockJSON{}
	for line := range strings.Lines(out) {
		var fields map[string]any
		var nested struct{ Holders, Waiters []map[string]any }
		for _, v := range []any{&fields, &nested} {
			if err := json.Unmarshal([]byte(line), v); err != nil {
				t.Fatalf("a line of JSON Lines: %v: %q", err, line)
			}
		}
		wantFields(t, "a lock", fields, "name", "kind", "state", "fence", "holders", "waiters", "waiting_writers", "permits", "at")
		for _, h := range nested.Holders {
			wantFields(t, "a holder", h, "role", "label", "since", "held_for_seconds", "lease_left_seconds", "timeout_seconds", "fence")
		}
		for _, w := range nested.Waiters {
			wantFields(t, "a waiter", w, "role", "label", "since", "waited_seconds", "timeout_seconds")
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

// wantFields fails t unless the JSON object fields has the fields want
// and no other.
func wantFields(t *testing.T, what string, fields map[string]any, want ...string) {
	t.Helper()
	if got := slices.Sorted(maps.Keys(fields)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("%s's fields %q; want %q", what, got, want)
	}
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
	r := f.ulock(t, "status", "m", "--json", p+"rw", "sem", "forever", "old", "none")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("status: exit %d, stderr %q", r.Code, r.Stderr)
	}
	locks := parseLines(t, r.Stdout)
	if len(locks) != 6 {
		t.Fatalf("status printed %d locks; want 6:\n%s", len(locks), r.Stdout)
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

	forever := locks[p+"forever"]
	if len(forever.Holders) != 1 || forever.Holders[0].LeaseLeft != nil {
		t.Fatalf("forever = %+v; want a holder with a null lease_left_seconds", forever)
	}
	old := locks[p+"old"]
	if len(old.Holders) != 1 || old.Holders[0].Label != "t-old" || old.Holders[0].Since == nil {
		t.Fatalf("old = %+v; want a holder t-old, with a since", old)
	}

	// Each timeout as its holder's or waiter's token states it; null when
	// the token states none.
	got := map[string]string{
		"m's holder":       number(m.Holders[0].Timeout),
		"m's waiter":       number(m.Waiters[0].Timeout),
		"sem's waiter":     number(sem.Waiters[0].Timeout),
		"forever's holder": number(forever.Holders[0].Timeout),
		"old's holder":     number(old.Holders[0].Timeout),
	}
	for _, h := range rw.Holders {
		got[h.Label] = number(h.Timeout)
	}
	want := map[string]string{"m's holder": "300", "m's waiter": "60", "sem's waiter": "300",
		"forever's holder": "90", "old's holder": "null", "t-reader1": "300", "t-reader2": "300"}
	if !maps.Equal(got, want) {
		t.Errorf("timeout_seconds = %v; want %v", got, want)
	}

	none := locks[p+"none"]
	if none.Kind != "" || none.State != "free" || none.Fence != 0 || none.Holders == nil || len(none.Holders) != 0 || none.Waiters == nil {
		t.Errorf("none = %+v; want kind \"\", free, fence 0, empty holders and waiters", none)
	}
}

// number prints a number of JSON as JSON does: null for nil.
func number(f *float64) string {
	if f == nil {
		return "null"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// table reads the table status and list print: its rows by name, each a
// map from column to cell.
func table(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	header := lines[0]
	cols := []string{"NAME", "KIND", "STATE", "HOLDER", "HELD FOR", "LEASE LEFT", "TIMEOUT", "FENCE", "WAITERS", "IN USE"}
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
	r := f.ulock(t, "status", "m", "rw", "sem", "forever", "old", "none")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("status: exit %d, stderr %q", r.Code, r.Stderr)
	}
	rows := table(t, r.Stdout)
	p := f.prefix + ":"
	want := map[string]map[string]string{
		p + "m":       {"KIND": "mutex", "STATE": "held", "HOLDER": "t-mutex", "TIMEOUT": "5m0s", "FENCE": fmt.Sprint(f.m.Fence()), "WAITERS": "1", "IN USE": "-"},
		p + "rw":      {"KIND": "rwmutex", "STATE": "held", "TIMEOUT": "5m0s", "WAITERS": "0", "IN USE": "2 readers"},
		p + "sem":     {"KIND": "semaphore", "HOLDER": "t-permit +1", "FENCE": fmt.Sprint(max(f.sem[0].Fence(), f.sem[1].Fence())), "WAITERS": "1", "IN USE": "2 of 2"},
		p + "forever": {"HOLDER": "t-forever", "LEASE LEFT": "none", "TIMEOUT": "1m30s"},
		p + "old":     {"KIND": "mutex", "HOLDER": "t-old", "TIMEOUT": "-"},
		p + "none":    {"KIND": "-", "STATE": "free", "HOLDER": "-", "HELD FOR": "-", "TIMEOUT": "-", "FENCE": "0", "WAITERS": "0"},
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
	locks := parseLines(t, r.Stdout)
	got := slices.Sorted(maps.Keys(locks))
	if want := []string{p + "forever", p + "m", p + "old", p + "rw", p + "sem"}; !slices.Equal(got, want) {
		t.Errorf("list --json named %q; want %q", got, want)
	}
	if hs := locks[p+"forever"].Holders; len(hs) != 1 || number(hs[0].Timeout) != "90" {
		t.Errorf("list --json: forever's holders = %+v; want one with timeout_seconds 90", hs)
	}
	if hs := locks[p+"old"].Holders; len(hs) != 1 || hs[0].Timeout != nil {
		t.Errorf("list --json: old's holders = %+v; want one with a null timeout_seconds", hs)
	}
	rows := table(t, f.ulock(t, "list").Stdout)
	if len(rows) != 5 || rows[p+"sem"]["IN USE"] != "2 of 2" || rows[p+"forever"]["TIMEOUT"] != "1m30s" || rows[p+"old"]["TIMEOUT"] != "-" {
		t.Errorf("list's table = %v; want the 5 locks, forever's TIMEOUT 1m30s, old's -", rows)
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
