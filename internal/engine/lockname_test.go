package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	shop "github.com/uncomplicated-mutex/uncomplicated/internal/shop/orders"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/orders"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// strID is an object whose ID is any string.
type strID string

func (s strID) ID() string { return string(s) }

// ptrID has an ID that is a pointer to its number.
type ptrID struct{ n int64 }

func (p ptrID) ID() *int64 { return &p.n }

// nameOf is the lock name of obj under the default prefix.
func nameOf[K any](t testing.TB, obj wire.Identifier[K], opts ...config.Option) string {
	t.Helper()
	m, err := New(NewClient(redigo.New(&redis.Pool{}), opts...), obj)
	if err != nil {
		t.Fatalf("New(%v) = %v", obj, err)
	}
	return m.Name()
}

func TestLockName(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"object", nameOf(t, orders.Order{N: 42}), "lock:orders.Order:42"},
		{"pointer", nameOf(t, &orders.Order{N: 42}), "lock:orders.Order:42"},
		{"prefix", nameOf(t, orders.Order{N: 42}, config.WithPrefix("app")), "app:orders.Order:42"},
		{"negative", nameOf(t, orders.Order{N: -7}), "lock:orders.Order:-7"},
		{"uuid", nameOf(t, strID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")), "lock:engine.strID:6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
		{"simple", nameOf(t, strID("Az09-_.")), "lock:engine.strID:Az09-_."},
		{"colon", nameOf(t, strID("a:b")), "lock:engine.strID:a%3Ab"},
		{"percent", nameOf(t, strID("a%3Ab")), "lock:engine.strID:a%253Ab"},
		{"space and newline", nameOf(t, strID("a b\n")), "lock:engine.strID:a%20b%0A"},
		{"braces", nameOf(t, strID("{x}")), "lock:engine.strID:%7Bx%7D"},
		{"unicode", nameOf(t, strID("é")), "lock:engine.strID:%C3%A9"},
		{"64 KiB", nameOf(t, strID(big)), "lock:engine.strID:" + big},
		{"pointer ID", nameOf(t, ptrID{n: 42}), "lock:engine.ptrID:42"},
		{"named", namedOf(t, "nightly-report"), "lock:nightly-report"},
		{"named escaped", namedOf(t, "reports:{nightly}"), "lock:reports%3A%7Bnightly%7D"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: name = %.80q; want %.80q", tc.name, tc.got, tc.want)
		}
	}
}

func namedOf(t *testing.T, name string) string {
	t.Helper()
	m, err := New(NewClient(redigo.New(&redis.Pool{})), wire.Named(name))
	if err != nil {
		t.Fatalf("Named(%q) = %v", name, err)
	}
	return m.Name()
}

// Lock names use the package name, not its path: two packages named orders
// share names for types of one name, and WithPrefix tells them apart.
func TestLockName_samePackageName(t *testing.T) {
	a := nameOf(t, orders.Order{N: 1})
	b := nameOf(t, shop.Order{Code: "1"})
	if a != b {
		t.Errorf("names = %q, %q; want them equal, as the README warns", a, b)
	}
	if c := nameOf(t, shop.Order{Code: "1"}, config.WithPrefix("shop")); c == a {
		t.Errorf("name with WithPrefix = %q; want it to differ from %q", c, a)
	}
}

// invoice and legacyInvoice are two Go types, as before and after a
// rename, that name their locks alike.
type invoice struct{ n int }

func (i invoice) ID() int        { return i.n }
func (invoice) LockType() string { return "billing.Invoice" }

type legacyInvoice struct{ n int }

func (l *legacyInvoice) ID() int        { return l.n }
func (*legacyInvoice) LockType() string { return "billing.Invoice" }

// account has its ID on values and its LockType on pointers: both
// name one lock.
type account struct{ n int }

func (a account) ID() int         { return a.n }
func (*account) LockType() string { return "billing.Account" }

// lockTyped has a LockType of the test's choice.
type lockTyped struct{ typ func() string }

func (lockTyped) ID() int            { return 1 }
func (l lockTyped) LockType() string { return l.typ() }

// A LockType names the type part of the lock instead of the Go type: two
// Go types that return the same string share their locks.
func TestLockName_LockType(t *testing.T) {
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"value", nameOf(t, invoice{7}), "lock:billing.Invoice:7"},
		{"pointer method", nameOf(t, &legacyInvoice{7}), "lock:billing.Invoice:7"},
		{"value, pointer method", nameOf(t, account{7}), "lock:billing.Account:7"},
		{"pointer, pointer method", nameOf(t, &account{7}), "lock:billing.Account:7"},
		{"pointer to value", nameOf(t, &invoice{7}), "lock:billing.Invoice:7"},
		{"escaped", nameOf(t, lockTyped{func() string { return "a:{b}" }}), "lock:a%3A%7Bb%7D:1"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: name = %q; want %q", tc.name, tc.got, tc.want)
		}
	}
	c := NewClient(redigo.New(&redis.Pool{}))
	if rw, err := NewRW(c, invoice{7}); err != nil || rw.Name() != "lock:billing.Invoice:7" {
		t.Errorf("NewRW(invoice{7}) = %v, %v; want lock:billing.Invoice:7", rw.Name(), err)
	}
	if s, err := NewSemaphore(c, &legacyInvoice{7}, 2); err != nil || s.Name() != "lock:billing.Invoice:7" {
		t.Errorf("NewSemaphore(&legacyInvoice{7}) = %v, %v; want lock:billing.Invoice:7", s.Name(), err)
	}
}

// A LockType that is empty or panics is an invalid ID, and nothing panics
// out of New.
func TestLockName_LockTypeInvalid(t *testing.T) {
	c := NewClient(redigo.New(&redis.Pool{}))
	for name, obj := range map[string]wire.Identifier[int]{
		"empty":       lockTyped{func() string { return "" }},
		"panics":      lockTyped{func() string { panic("no type") }},
		"nil pointer": (*legacyInvoice)(nil),
	} {
		if _, err := New(c, obj); !errors.Is(err, sentinel.ErrInvalidArgument) {
			t.Errorf("%s: New() = %v; want ErrInvalidArgument", name, err)
		}
	}
}

// Locks of two Go types with one LockType exclude each other in Redis.
func TestLockType_sharesTheLock(t *testing.T) {
	mr := miniredis.RunT(t)
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	ctx := context.Background()
	before, after := NewClient(redigo.New(pool)), NewClient(redigo.New(pool))
	t.Cleanup(func() { _ = before.Close(); _ = after.Close() })
	old, err := New(before, &legacyInvoice{7})
	if err != nil {
		t.Fatal(err)
	}
	renamed, err := New(after, invoice{7})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := old.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock() of the old type = %v, %v; want true", ok, err)
	}
	if ok, err := renamed.TryLock(ctx); ok || err != nil {
		t.Errorf("TryLock() of the renamed type while the old one holds = %v, %v; want false, nil", ok, err)
	}
	first := old.Fence()
	if err := old.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := renamed.TryLock(ctx); !ok || err != nil {
		t.Errorf("TryLock() of the renamed type once free = %v, %v; want true", ok, err)
	}
	if f := renamed.Fence(); f <= first {
		t.Errorf("Fence() = %d; want above the old type's hold's, %d", f, first)
	}
}

func FuzzLockName(f *testing.F) {
	for _, s := range []string{"42", "a:b", "a%3Ab", "{x}", "é", "a b\n", "", "%", "lock:x"} {
		f.Add(s, s+"x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == "" || b == "" {
			return
		}
		na, nb := nameOf(t, strID(a)), nameOf(t, strID(b))
		if (a == b) != (na == nb) {
			t.Fatalf("ids %q, %q have names %q, %q", a, b, na, nb)
		}
		id := strings.TrimPrefix(na, "lock:engine.strID:")
		if strings.ContainsAny(id, ":{}") {
			t.Errorf("escaped id %q holds ':', '{' or '}'", id)
		}
		if got := wire.Unescape(id); got != a || wire.Escape(got) != id {
			t.Errorf("unescape(%q) = %q; want %q", id, got, a)
		}
		if isSimple(a) && id != a {
			t.Errorf("simple id %q became %q", a, id)
		}
		if s, fs := hashslot.Of(na), hashslot.Of(wire.QueueKey("lock", na)); s != fs {
			t.Errorf("slots of %q and its queue = %d, %d", na, s, fs)
		}
	})
}

func isSimple(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// rubyOrder is a Ruby class Order, rubyBilling one in a module: Billing::Order.
type rubyOrder struct{ n int }

func (o rubyOrder) ID() int        { return o.n }
func (rubyOrder) LockType() string { return "Order" }

type rubyBilling struct{ n int }

func (o rubyBilling) ID() int        { return o.n }
func (rubyBilling) LockType() string { return "Billing::Order" }

// WithGemNames names locks as the Ruby gem does: type and ID unescaped,
// the Go type without its package, runs of ':' squeezed.
func TestLockName_gem(t *testing.T) {
	gem := config.WithGemNames()
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"LockType", nameOf(t, rubyOrder{42}, gem), "lock:Order:42"},
		{"module", nameOf(t, rubyBilling{42}, gem), "lock:Billing:Order:42"},
		{"Go type", nameOf(t, orders.Order{N: 42}, gem), "lock:Order:42"},
		{"pointer", nameOf(t, &orders.Order{N: 42}, gem), "lock:Order:42"},
		{"prefix", nameOf(t, rubyOrder{42}, gem, config.WithPrefix("app")), "app:Order:42"},
		{"ID unescaped", nameOf(t, strID("a b/é%"), gem), "lock:strID:a b/é%"},
		{"ID with colons", nameOf(t, strID("a::b:::c"), gem), "lock:strID:a:b:c"},
		{"colon at the seam", nameOf(t, strID(":x"), gem), "lock:strID:x"},
		{"Named", nameOf(t, wire.Named("reports::nightly"), gem), "lock:reports:nightly"},
		{"not injective", nameOf(t, strID("a::b"), gem), nameOf(t, strID("a:b"), gem)},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: Name() = %q; want %q", tc.name, tc.got, tc.want)
		}
	}
	c := NewClient(redigo.New(&redis.Pool{}), gem)
	for _, obj := range []interface{ ID() string }{strID("{x}"), strID("a}"), wire.Named("{nightly}")} {
		if _, err := New(c, obj); !errors.Is(err, sentinel.ErrInvalidArgument) {
			t.Errorf("New(%v) with a brace = %v; want ErrInvalidArgument", obj, err)
		}
	}
	if _, err := New(c, lockTyped{typ: func() string { return "Billing::{Order}" }}); !errors.Is(err, sentinel.ErrInvalidArgument) {
		t.Errorf("New() with a brace in LockType = %v; want ErrInvalidArgument", err)
	}
}

// A gem-named lock excludes a holder that set the key as the gem does
// (SET NX with its token), and every key of it lives in the lock's slot.
func TestLockName_gemSharesTheGemsKey(t *testing.T) {
	mr := miniredis.RunT(t)
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	c := NewClient(redigo.New(pool), config.WithGemNames())
	t.Cleanup(func() { _ = c.Close() })
	m, err := New(c, rubyBilling{42})
	if err != nil {
		t.Fatal(err)
	}
	if err := mr.Set("lock:Billing:Order:42", "a-ruby-token"); err != nil { // the gem's holder
		t.Fatal(err)
	}
	if ok, err := m.TryLock(context.Background()); ok || err != nil {
		t.Fatalf("TryLock() with the gem holding lock:Billing:Order:42 = %v, %v; want false, nil", ok, err)
	}
	mr.Del("lock:Billing:Order:42")
	if ok, err := m.TryLock(context.Background()); !ok || err != nil {
		t.Fatalf("TryLock() = %v, %v; want true, nil", ok, err)
	}
	for _, key := range mr.Keys() {
		if hashslot.Of(key) != hashslot.Of(m.Name()) {
			t.Errorf("key %s in slot %d; the lock's is %d", key, hashslot.Of(key), hashslot.Of(m.Name()))
		}
	}
}
