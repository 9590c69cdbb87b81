package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// Fuzz targets for what comes from outside: lock names and prefixes from
// the caller, replies from the server. Their seeds run with go test; run
// one with go test -run '^$' -fuzz FuzzParseGrant -fuzztime 30s .

// FuzzLockKeys makes locks with any prefix and name, by Named and New. It
// never panics; a bad prefix or name is reported with the right sentinel;
// every key of a valid lock carries the lock name as its hash tag, so all
// of them share its Redis Cluster slot; and distinct names share no key.
// (FuzzLockName in lockname_test.go checks the escaping itself.)
func FuzzLockKeys(f *testing.F) {
	for _, s := range [][3]string{
		{"lock", "42", "43"}, {"lock", "a*b", "a?b"}, {"lock", "[x]", "{x}"}, {"lock", "{}", "}{"},
		{"lock", "a\x00b", "a\x00c"}, {"app:v1", "x", "y"}, {"", "x", "y"}, {"a{b", "x", "y"},
		{"lock", "", "x"}, {"*", "lock:fence:{x}", "x"}, {"p:uncomplicated.strID", "x", "x"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, prefix, a, b string) {
		c := NewClient(redigo.New(&redis.Pool{}), config.WithPrefix(prefix))
		badPrefix := prefix == "" || strings.ContainsAny(prefix, "{}")
		var locks []*Mutex
		for _, name := range []string{a, b} {
			named, err := New(c, wire.Named(name))
			obj, objErr := New(c, strID(name))
			for _, e := range []error{err, objErr} {
				switch {
				case badPrefix && !errors.Is(e, sentinel.ErrInvalidArgument):
					t.Fatalf("prefix %q: error = %v; want ErrInvalidArgument", prefix, e)
				case !badPrefix && name == "" && !errors.Is(e, sentinel.ErrInvalidArgument):
					t.Fatalf("name \"\": error = %v; want ErrInvalidArgument", e)
				case !badPrefix && name != "" && e != nil:
					t.Fatalf("prefix %q, name %q: error = %v; want a lock", prefix, name, e)
				}
			}
			if err != nil || objErr != nil {
				return
			}
			for _, m := range []*Mutex{named, obj} {
				checkKeys(t, m)
			}
			if named.name == obj.name {
				t.Fatalf("Named(%q) and New(strID(%q)) share the lock %q", name, name, named.name)
			}
			locks = append(locks, named, obj)
		}
		if a == b {
			return
		}
		seen := map[string]int{}
		for i, m := range locks {
			for _, k := range lockKeys(m) {
				if j, ok := seen[k]; ok && j != i {
					t.Fatalf("locks %q and %q share the key %q", locks[j].name, m.name, k)
				}
				seen[k] = i
			}
		}
	})
}

// lockKeys are the lock's keys, the lock name first, and its wake-up
// channel.
func lockKeys(m *Mutex) []string { return append(slices.Clone(m.x.spec.keys), m.x.spec.channel) }

// checkKeys checks that every key of m has m's name as its hash tag.
func checkKeys(t *testing.T, m *Mutex) {
	t.Helper()
	if strings.ContainsAny(m.name, "{}") {
		t.Fatalf("lock name %q holds a brace", m.name)
	}
	keys := lockKeys(m)
	if keys[0] != m.name {
		t.Errorf("first key %q; want the lock name %q", keys[0], m.name)
	}
	want := hashslot.Of(m.name)
	for _, k := range keys[1:] {
		if tag := hashTag(k); tag != m.name {
			t.Errorf("hash tag of %q = %q; want the lock name %q", k, tag, m.name)
		}
		if got := hashslot.Of(k); got != want {
			t.Errorf("slot of %q = %d; want %d, the slot of %q", k, got, want, m.name)
		}
		if k == m.name {
			t.Errorf("key %q is the lock name", k)
		}
	}
	for i, k := range keys[1:] {
		if slices.Contains(keys[i+2:], k) || !strings.HasPrefix(k, m.cfg.Prefix+":") {
			t.Errorf("keys %q; want distinct keys under the prefix %q", keys, m.cfg.Prefix)
		}
	}
}

// hashTag is what Redis Cluster hashes of key: the text in its first
// {...}, when not empty, or the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}
