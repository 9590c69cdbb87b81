package acceptance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
)

// Inspection on a real deployment: inspect.Lock shows each primitive's holders
// and waiters with their labels, List finds them on every node, and
// ForceRelease hands a lock to its waiter under a higher fence.

// A holding is one hold of a primitive, as a process gets it.
type holding struct {
	fence func() uint64
	held  func(context.Context) (bool, error)
}

// An inspectable is a primitive, acquired as one holder would.
type inspectable struct {
	name    string
	kind    inspect.Kind
	role    string
	holders int // how many holds acquire makes
	// acquire takes the lock named name on c, holders times.
	acquire func(ctx context.Context, c *uncomplicated.Client, name string) ([]holding, error)
}

var inspected = []inspectable{
	{"Mutex", inspect.KindMutex, inspect.RoleHolder, 1, func(ctx context.Context, c *uncomplicated.Client, name string) ([]holding, error) {
		m, err := uncomplicated.New(c, uncomplicated.Named(name))
		if err == nil {
			err = m.Lock(ctx)
		}
		return []holding{{m.Fence, m.Held}}, err
	}},
	{"RWMutex writer", inspect.KindRWMutex, inspect.RoleWriter, 1, func(ctx context.Context, c *uncomplicated.Client, name string) ([]holding, error) {
		rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
		if err == nil {
			err = rw.Lock(ctx)
		}
		return []holding{{rw.Fence, rw.Held}}, err
	}},
	{"RWMutex readers", inspect.KindRWMutex, inspect.RoleReader, 2, func(ctx context.Context, c *uncomplicated.Client, name string) ([]holding, error) {
		rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name))
		for i := 0; i < 2 && err == nil; i++ {
			err = rw.RLock(ctx)
		}
		none := func() uint64 { return 0 }
		return []holding{{none, nil}, {none, nil}}, err // RWMutex.Held is the writer's
	}},
	{"Semaphore(2)", inspect.KindSemaphore, inspect.RolePermit, 2, func(ctx context.Context, c *uncomplicated.Client, name string) ([]holding, error) {
		s, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(name), 2)
		var hs []holding
		for i := 0; i < 2 && err == nil; i++ {
			var p *uncomplicated.Permit
			if p, err = s.Acquire(ctx); err == nil {
				hs = append(hs, holding{p.Fence, p.Held})
			}
		}
		return hs, err
	}},
}

func inspection(t *testing.T, d Deployment) {
	for _, tc := range inspected {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, d)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			opts := []uncomplicated.Option{uncomplicated.WithLease(30 * time.Second), uncomplicated.WithTimeout(10 * time.Second)}
			holder := r.client(append(opts, uncomplicated.WithHolderLabel("holder:1"))...)
			waiter := r.client(append(opts, uncomplicated.WithHolderLabel("waiter 2"))...)
			held, err := tc.acquire(ctx, holder, "inspect-me")
			if err != nil {
				t.Fatalf("acquire = %v", err)
			}
			// A waiter that needs the lock to itself: a writer for readers.
			kind := tc.name
			if tc.kind == inspect.KindRWMutex {
				kind = "RWMutex writer"
			}
			got := make(chan []holding, 1)
			go func() {
				hs, _ := inspectedNamed(kind).acquire(ctx, waiter, "inspect-me")
				got <- hs
			}()
			name := mustNamed(t, holder, "inspect-me")
			var info inspect.Info
			eventually(t, "the waiter queued", func() bool {
				info, err = inspect.Lock(ctx, holder, name)
				return err == nil && len(info.Waiters) == 1
			})
			checkInspected(t, info, tc.kind, tc.role, tc.holders, held)

			locks, more, err := inspect.List(ctx, holder, r.prefix+":inspect-*", 0)
			if err != nil || more || len(locks) != 1 || locks[0].Name != name || len(locks[0].Holders) != tc.holders {
				t.Errorf("List = %+v, %v, %v; want the one lock %s with %d holders", locks, more, err, name, tc.holders)
			}

			before := info.Fence
			gone, err := inspect.ForceRelease(ctx, waiter, name)
			if err != nil || len(gone.Holders) != tc.holders || gone.Holders[0].Label != "holder:1" {
				t.Fatalf("ForceRelease = %+v, %v; want the %d holders labelled holder:1", gone, err, tc.holders)
			}
			hs := recv(t, got)
			if len(hs) == 0 || hs[0].fence() <= before {
				t.Fatalf("the waiter's fence after ForceRelease = %v; want above %d", hs, before)
			}
			for i, h := range held {
				if h.held == nil {
					continue
				}
				if ok, err := h.held(ctx); ok || err != nil {
					t.Errorf("hold %d Held() after ForceRelease = %v, %v; want false", i, ok, err)
				}
			}
		})
	}
}

// inspectedNamed returns the primitive of inspected named name.
func inspectedNamed(name string) inspectable {
	return inspected[slices.IndexFunc(inspected, func(p inspectable) bool { return p.name == name })]
}

// checkInspected checks what inspect.Lock read of a lock of kind held by
// holders holds with role, labelled "holder:1", and one waiter labelled
// "waiter 2".
func checkInspected(t *testing.T, info inspect.Info, kind inspect.Kind, role string, holders int, held []holding) {
	t.Helper()
	if info.Kind != kind || !info.Held() || len(info.Holders) != holders {
		t.Fatalf("inspect.Lock = %+v; want a %s with %d holders", info, kind, holders)
	}
	for i, h := range info.Holders {
		if h.Role != role || h.Label != "holder:1" || h.Fence != held[i].fence() {
			t.Errorf("holder %d = %+v; want role %s, label holder:1, fence %d", i, h, role, held[i].fence())
		}
		if h.LeaseLeft <= 25*time.Second || h.LeaseLeft > 30*time.Second {
			t.Errorf("holder %d lease left = %v; want about 30s", i, h.LeaseLeft)
		}
		if age := time.Since(h.Since); age < 0 || age > 15*time.Second {
			t.Errorf("holder %d since %v ago; want just now", i, age)
		}
	}
	if w := info.Waiters[0]; w.Label != "waiter 2" || w.Fence != 0 {
		t.Errorf("waiter = %+v; want label %q", w, "waiter 2")
	}
	if fence := held[len(held)-1].fence(); fence != 0 && info.Fence < fence {
		t.Errorf("Fence = %d; want at least the last holder's %d", info.Fence, fence)
	}
	if kind == inspect.KindSemaphore && info.Permits != 2 {
		t.Errorf("Permits = %d; want 2, as the waiter's entry states", info.Permits)
	}
	if kind == inspect.KindRWMutex && role == inspect.RoleReader && info.WaitingWriters != 1 {
		t.Errorf("WaitingWriters = %d; want 1", info.WaitingWriters)
	}
}

// mustNamed returns the full name of the lock named name on c.
func mustNamed(t *testing.T, c *uncomplicated.Client, name string) string {
	t.Helper()
	return mustNamedMutex(t, c, name).Name()
}

// inspectBadInput: names that are not the full name of a lock under the
// prefix are refused, and a lock Redis has nothing of reads as free.
func inspectBadInput(t *testing.T, d Deployment) {
	r := newRig(t, d)
	c := r.client()
	ctx := context.Background()
	for _, name := range []string{"", "inspect-me", "other:inspect-me", r.prefix + ":", r.prefix + ":a{b}"} {
		if _, err := inspect.Lock(ctx, c, name); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
			t.Errorf("inspect.Lock(%q) = %v; want ErrInvalidArgument", name, err)
		}
		if _, err := inspect.ForceRelease(ctx, c, name); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
			t.Errorf("ForceRelease(%q) = %v; want ErrInvalidArgument", name, err)
		}
	}
	if _, _, err := inspect.List(ctx, c, "[", 0); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("List(%q) = %v; want ErrInvalidArgument", "[", err)
	}
	info, err := inspect.Lock(ctx, c, r.prefix+":never-used")
	if err != nil || info.Kind != "" || info.Held() || info.At.IsZero() {
		t.Errorf("inspect.Lock of an unused lock = %+v, %v; want free, of no kind", info, err)
	}
	gone, err := inspect.ForceRelease(ctx, c, r.prefix+":never-used")
	if err != nil || gone.Held() {
		t.Errorf("ForceRelease of an unused lock = %+v, %v; want nothing removed", gone, err)
	}
}

// inspectListEveryNode: List finds every lock of its prefix, on every
// master of a Cluster, and no other prefix's, even one it is a pattern
// of; a limit cuts the list short and says so.
func inspectListEveryNode(t *testing.T, d Deployment) {
	r := newRig(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := r.client()
	b := r.client(uncomplicated.WithPrefix(r.prefix + "[x]*"))
	const n = 12
	for i := range n {
		m, err := uncomplicated.New(a, uncomplicated.Named(fmt.Sprint("listed-", i)))
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := m.TryLock(ctx); !ok || err != nil {
			t.Fatalf("TryLock(%s) = %v, %v", m.Name(), ok, err)
		}
	}
	if ok, err := mustNamedMutex(t, b, "other").TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	locks, more, err := inspect.List(ctx, a, "", 0)
	if err != nil || more || len(locks) != n {
		t.Fatalf("List = %d locks, %v, %v; want %d", len(locks), more, err, n)
	}
	for _, l := range locks {
		if !l.Held() || l.Kind != inspect.KindMutex {
			t.Errorf("listed %+v; want a held mutex", l)
		}
	}
	if locks, more, err := inspect.List(ctx, b, "", 0); err != nil || more || len(locks) != 1 {
		t.Errorf("List under the prefix %q = %d locks, %v, %v; want its 1", r.prefix+"[x]*", len(locks), more, err)
	}
	if locks, more, err := inspect.List(ctx, a, "", 5); err != nil || !more || len(locks) != 5 {
		t.Errorf("List with limit 5 = %d locks, %v, %v; want 5 and more", len(locks), more, err)
	}
	if locks, _, err := inspect.List(ctx, a, r.prefix+":listed-1*", 0); err != nil || len(locks) != 3 {
		t.Errorf("List matching listed-1* = %d locks, %v; want 3", len(locks), err)
	}
}

// mustNamedMutex returns the Mutex named name on c.
func mustNamedMutex(t *testing.T, c *uncomplicated.Client, name string) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(c, uncomplicated.Named(name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
