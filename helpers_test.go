package uncomplicated_test

import (
	"context"
	"errors"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"log/slog"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// poolOf returns a redigo pool of the server at addr, closed when the
// test ends.
func poolOf(t testing.TB, addr string) *redis.Pool {
	t.Helper()
	pool := &redis.Pool{MaxIdle: 16, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr)
	}}
	t.Cleanup(func() { _ = pool.Close() })
	return pool
}

// mustNew returns the Mutex of obj or fails the test.
func mustNew(t testing.TB, c *uncomplicated.Client, obj Order, opts ...uncomplicated.Option) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(c, obj, opts...)
	if err != nil {
		t.Fatalf("New(%v) = %v", obj, err)
	}
	return m
}

// mustLock locks m, which must be free, or fails the test within ten
// seconds.
func mustLock(t testing.TB, m *uncomplicated.Mutex) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock(%s) = %v", m.Name(), err)
	}
}

// lockAsync runs m.Lock(ctx) in a goroutine and delivers its error.
func lockAsync(ctx context.Context, m *uncomplicated.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	return done
}

// Code is a domain object with a string ID.
type Code string

func (c Code) ID() string { return string(c) }

// nilID has an ID that is a nil pointer.
type nilID struct{}

func (nilID) ID() *int { return nil }

// panicky has an ID method that panics.
type panicky struct{}

func (panicky) ID() int { panic("no id") }

// fenceKeyOf is the key of the fence counter that earlier versions kept
// for m, a lock under prefix.
func fenceKeyOf(prefix string, m *uncomplicated.Mutex) string {
	return prefix + ":fence:{" + m.Name() + "}"
}

// holderIn returns the token and fence of the holder that key holds on
// mr, as a Mutex's lock or an RWMutex's writer holds them; "" and 0 when
// there is none.
func holderIn(mr interface{ Get(string) (string, error) }, key string) (string, uint64) {
	v, _ := mr.Get(key)
	return uncomplicated.CutFence(v)
}

// rising reports whether fences rise, each above the one before, from
// above 0.
func rising(fences ...uint64) bool {
	last := uint64(0)
	for _, f := range fences {
		if f <= last {
			return false
		}
		last = f
	}
	return true
}

// fenceNumber matches a fence in a message, a log line or an observed call.
var fenceNumber = regexp.MustCompile(`fence[ =](\d+)`)

// renameFences replaces the fences in lines, in order of their first
// appearance, with #1, #2 and so on, and reports whether they rise in that
// order: so a test can compare what it records, whatever the clock of
// Redis that makes the fences.
func renameFences(lines []string) ([]string, bool) {
	names := map[string]string{}
	var order []uint64
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = fenceNumber.ReplaceAllStringFunc(l, func(m string) string {
			n := fenceNumber.FindStringSubmatch(m)[1]
			if _, ok := names[n]; !ok {
				f, _ := strconv.ParseUint(n, 10, 64)
				order = append(order, f)
				names[n] = "#" + strconv.Itoa(len(order))
			}
			return m[:len("fence ")] + names[n]
		})
	}
	return out, rising(order...)
}

// funcID has an ID that prints as an address.
type funcID struct{}

func (funcID) ID() func() { return func() {} }

// logRecorder keeps the records it handles as "LEVEL message fence=N"
// (fence when the record has one), and their lock attributes.
type logRecorder struct {
	mu     sync.Mutex
	msgs   []string
	locks  []string
	attrs  []map[string]string
	lostFn func() // called for each "... lost" record
}

// onLost makes the recorder call f for each "... lost" record, as a
// handler that looks at the lock might.
func (r *logRecorder) onLost(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lostFn = f
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	msg := rec.Level.String() + " " + rec.Message
	if f, ok := attrs["fence"]; ok {
		msg += " fence=" + f
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	r.locks = append(r.locks, attrs["lock"])
	r.attrs = append(r.attrs, attrs)
	lostFn := r.lostFn
	r.mu.Unlock()
	if lostFn != nil && strings.HasSuffix(rec.Message, " lost") {
		lostFn()
	}
	return nil
}

// has reports whether a record's "LEVEL message" contains part.
func (r *logRecorder) has(part string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.msgs, func(m string) bool { return strings.Contains(m, part) })
}

// attrsOf returns the attributes of the first record whose message
// contains part; nil when none does.
func (r *logRecorder) attrsOf(part string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, m := range r.msgs {
		if strings.Contains(m, part) {
			return r.attrs[i]
		}
	}
	return nil
}

func (r *logRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// causeWithin returns why ctx ended, or an error when it has not within d:
// what an fn returns to check that its ctx is cancelled.
func causeWithin(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		return errors.New("fn's ctx not cancelled")
	}
}

// wantDocFields checks that go doc shows the root package's type typ as a
// struct whose exported fields are fields, each with a doc comment. A type
// that is an alias into an internal package shows none of them.
func wantDocFields(t *testing.T, typ string, fields ...string) {
	t.Helper()
	spec := typeSpec(t, typ)
	if spec.Assign.IsValid() {
		t.Fatalf("go doc %s: type %s = ...; want a type defined in the root", typ, typ)
	}
	st, ok := spec.Type.(*ast.StructType)
	if !ok {
		t.Fatalf("go doc %s: type %s %T; want a struct", typ, typ, spec.Type)
	}
	docs := map[string]string{} // exported field: its doc comment
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.IsExported() {
				docs[n.Name] = f.Doc.Text()
			}
		}
	}
	if got := slices.Sorted(maps.Keys(docs)); !slices.Equal(got, slices.Sorted(slices.Values(fields))) {
		t.Errorf("go doc %s: fields %v; want %v", typ, got, fields)
	}
	for _, f := range fields {
		if strings.TrimSpace(docs[f]) == "" {
			t.Errorf("go doc %s: field %s has no doc comment; want what it means", typ, f)
		}
	}
}

// typeSpec returns the declaration of the root package's type typ, as
// go/doc reads the package.
func typeSpec(t *testing.T, typ string) *ast.TypeSpec {
	t.Helper()
	for _, dt := range rootDoc(t).Types {
		for _, s := range dt.Decl.Specs {
			if s, ok := s.(*ast.TypeSpec); ok && s.Name.Name == typ {
				return s
			}
		}
	}
	t.Fatalf("go doc %s: no such type in the package", typ)
	return nil
}

// rootDoc returns the root package as go doc reads it.
func rootDoc(t *testing.T) *doc.Package {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/uncomplicated-mutex/uncomplicated")
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}
