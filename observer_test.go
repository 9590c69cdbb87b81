package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// callRecorder is an Observer that keeps what each call heard, one line
// per call: "Op kind type name: event, event...".
type callRecorder struct {
	mu    sync.Mutex
	calls []*[]string
}

type recordedCall struct {
	r      *callRecorder
	events *[]string
}

func (r *callRecorder) Begin(ctx context.Context, c observe.Call) (context.Context, observe.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events := &[]string{fmt.Sprintf("%s %s %q %s:", c.Op, c.Kind, c.Type, c.Name)}
	r.calls = append(r.calls, events)
	return ctx, recordedCall{r, events}
}

func (c recordedCall) add(format string, args ...any) {
	c.r.mu.Lock()
	*c.events = append(*c.events, fmt.Sprintf(format, args...))
	c.r.mu.Unlock()
}

func (c recordedCall) Waiting() { c.add("Waiting") }
func (c recordedCall) Acquired(o observe.Outcome, fence uint64, waited time.Duration) {
	c.add("Acquired %s fence %d after %v", o, fence, waited)
}
func (c recordedCall) NotAcquired(o observe.Outcome, waited time.Duration, err error) {
	c.add("NotAcquired %s after %v", o, waited)
}
func (c recordedCall) Lost(why string)             { c.add("Lost") }
func (c recordedCall) Released(held time.Duration) { c.add("Released after %v", held) }
func (c recordedCall) End(err error)               { c.add("End %v", err != nil) }

// take returns the calls recorded so far, and forgets them.
func (r *callRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls {
		out = append(out, strings.Join(*c, " "))
	}
	r.calls = nil
	return out
}

// An Observer hears every acquiring call of each primitive, in order, with
// its outcome, fence and times on the mock clock: an attempt, busy, a stale
// holder under Fail, a take-over, a hold found lost, a hand-off, a ctx that
// ended, and a TryDo.
func TestObserver_outcomes(t *testing.T) {
	kinds := map[string]string{"Mutex": "mutex", "RWMutex": "rwmutex", "Semaphore": "semaphore"}
	ops := map[string][3]string{ // an attempt, a wait, Do
		"Mutex": {"TryLock", "Lock", "Do"}, "RWMutex": {"TryLock", "Lock", "Do"}, "Semaphore": {"TryAcquire", "Acquire", "Do"},
	}
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			env := uncomplicatedtest.New(t)
			rec := &callRecorder{}
			opts := []uncomplicated.Option{uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks),
				uncomplicated.WithLease(0), uncomplicated.WithObserver(rec)}
			ctx := context.Background()
			op, kind, name := ops[p.name], kinds[p.name], "lock:report"
			call := func(op string) string { return fmt.Sprintf("%s %s \"\" %s:", op, kind, name) }

			h := p.take(t, env.NewClient(opts...), "report")
			if ok, err := p.try(ctx, env.NewClient(opts...), "report"); ok || err != nil {
				t.Fatalf("try on a held lock = %v, %v", ok, err)
			}
			ran := false
			if ok, err := p.tryDo(ctx, env.NewClient(opts...), "report", func(context.Context) error { ran = true; return nil }); ok || err != nil || ran {
				t.Fatalf("TryDo on a held lock = %v, %v, ran %v; want false, nil, not run", ok, err, ran)
			}
			done := make(chan error, 1)
			go func() { _, err := p.wait(ctx, env.NewClient(opts...), "report"); done <- err }()
			env.AwaitWaiters(1)
			env.Advance(patience)
			if err := recv(t, done); !errors.Is(err, uncomplicated.ErrStale) {
				t.Fatalf("waiter under Fail = %v; want ErrStale", err)
			}
			taking := env.NewClient(append(opts, uncomplicated.WithTakeOver(true))...)
			inFn, leave := make(chan struct{}), make(chan struct{})
			go func() {
				done <- p.do(ctx, taking, "report", func(context.Context) error { close(inFn); <-leave; return nil })
			}()
			env.AwaitWaiters(1)
			env.Advance(patience)
			recv(t, inFn)
			env.Advance(time.Second) // held for a second
			close(leave)
			if err := recv(t, done); err != nil {
				t.Fatalf("Do() under TakeOver = %v", err)
			}
			if held, err := h.check(ctx); held || err != nil {
				t.Fatalf("Held() of the holder taken over = %v, %v", held, err)
			}
			_ = h.release(ctx)
			want := []string{
				call(op[0]) + " Acquired acquired fence #1 after 0s End false Lost Released after 2m1s",
				call(op[0]) + " NotAcquired busy after 0s End false",
				call("TryDo") + " NotAcquired busy after 0s End false",
				call(op[1]) + " Waiting NotAcquired stale after 1m0s End true",
				call("Do") + " Waiting Acquired taken_over fence #2 after 1m0s Released after 1s End false",
			}
			if got, ok := renameFences(rec.take()); !slices.Equal(got, want) || !ok {
				t.Errorf("calls =\n%s\nwant\n%s\nthe fences rising", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := p.wait(cctx, env.NewClient(opts...), "report"); !errors.Is(err, context.Canceled) {
				t.Fatalf("wait with an ended ctx = %v", err)
			}
			if got, want := rec.take(), []string{call(op[1]) + " NotAcquired ctx_ended after 0s End true"}; !slices.Equal(got, want) {
				t.Errorf("calls = %q; want %q", got, want)
			}
		})
	}
}

// A waiter that a release hands the lock to hears observe.HandedOff; the
// type part of an object's lock is the Call's Type.
func TestObserver_handedOff(t *testing.T) {
	env := uncomplicatedtest.New(t)
	rec := &callRecorder{}
	ctx := context.Background()
	a := mustNew(t, env.NewClient(uncomplicated.WithObserver(rec)), Order{7})
	b := mustNew(t, env.NewClient(uncomplicated.WithObserver(rec)), Order{7})
	mustLock(t, a)
	done := lockAsync(ctx, b)
	env.AwaitWaiters(1)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	got, rose := renameFences(rec.take())
	want := `Lock mutex "uncomplicated_test.Order" lock:uncomplicated_test.Order:7: Waiting Acquired handed_off fence #2 after 0s End false`
	if len(got) != 2 || got[1] != want || !rose {
		t.Errorf("calls = %q; want the second %q, above the first's fence", got, want)
	}
}

// A release that finds the hold lost reports the loss first, then the
// release.
func TestObserver_lostAtRelease(t *testing.T) {
	env := uncomplicatedtest.New(t)
	rec := &callRecorder{}
	m := mustNamed(t, env.NewClient(uncomplicated.WithObserver(rec)), "report")
	mustLock(t, m)
	env.Redis.Del(m.Name())
	env.Advance(time.Second)
	if err := m.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrLost) {
		t.Fatalf("Unlock() = %v; want ErrLost", err)
	}
	want := []string{`Lock mutex "" lock:report: Acquired acquired fence #1 after 0s End false Lost Released after 1s`}
	if got, _ := renameFences(rec.take()); !slices.Equal(got, want) {
		t.Errorf("calls = %q; want %q", got, want)
	}
}
