package uncomplicated_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// A hold resumed from its handle, by another Client as another process
// would, is the same hold: the same name and fence, held; its Refresh
// keeps it alive and the original, whose token that Refresh made old,
// finds the hold again by its fence; the first release wins, the other
// gets ErrNotHeld, and so does resuming the handle again. The resumed
// lease is what Redis has left. Neither the handle nor the token is ever
// logged.
func TestHandle_resume(t *testing.T) {
	rec := &logRecorder{}
	env := uncomplicatedtest.New(t, uncomplicated.WithLogger(slog.New(rec)))
	ctx := context.Background()
	m := mustNamed(t, env.Client, "order", uncomplicated.WithLease(20*time.Second))
	if _, err := m.Handle(); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Fatalf("Handle() before Lock = %v; want ErrNotHeld", err)
	}
	mustLock(t, m)
	before := env.Redis.CommandCount()
	handle, err := m.Handle()
	if err != nil || env.Redis.CommandCount() != before {
		t.Fatalf("Handle() = %v, %d commands; want none", err, env.Redis.CommandCount()-before)
	}
	env.Advance(5 * time.Second)

	other := env.NewClient()
	warm := mustNamed(t, other, "warm") // its Client's restart watch has begun
	mustLock(t, warm)
	mustDo(t, warm.Unlock(ctx))
	before = quiet(env)
	r, err := uncomplicated.Resume(ctx, other, handle)
	if err != nil {
		t.Fatal(err)
	}
	// One script: EVALSHA, its GET and PTTL, and here, as this server has not
	// run it yet, the EVAL after its NOSCRIPT: one round trip once loaded.
	if n := env.Redis.CommandCount() - before; n != 4 {
		t.Errorf("Resume sent %d commands; want one script", n)
	}
	if r.Name() != m.Name() || r.Fence() != m.Fence() {
		t.Errorf("resumed %s fence %d; want %s fence %d", r.Name(), r.Fence(), m.Name(), m.Fence())
	}
	if held, err := r.Held(ctx); !held || err != nil {
		t.Errorf("resumed Held() = %v, %v; want true", held, err)
	}
	if err := r.Refresh(ctx); err != nil {
		t.Fatalf("resumed Refresh() = %v", err)
	}
	if err := m.Refresh(ctx); err != nil {
		t.Errorf("the original's Refresh after the resumed one's = %v; want nil: the same hold, by its fence", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("the original's Unlock = %v; want nil: the first release wins", err)
	}
	if err := r.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("the resumed Unlock after the original's = %v; want ErrNotHeld", err)
	}
	if _, err := uncomplicated.Resume(ctx, other, handle); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Resume of a released hold = %v; want ErrNotHeld", err)
	}
	hd, _ := wire.ParseHandle(handle)
	rec.mu.Lock()
	for i, msg := range rec.msgs {
		for _, v := range append([]string{msg}, values(rec.attrs[i])...) {
			if strings.Contains(v, handle) || strings.Contains(v, hd.Token[:wire.SecretLen]) {
				t.Errorf("a log record shows the handle or the token: %q", v)
			}
		}
	}
	rec.mu.Unlock()
}

// values returns the values of attrs.
func values(attrs map[string]string) []string {
	var vs []string
	for _, v := range attrs {
		vs = append(vs, v)
	}
	return vs
}

// A resumed hold's lease is what Redis has left of it: it ends then,
// unless refreshed.
func TestHandle_resumedLease(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	m := mustNamed(t, env.Client, "lease", uncomplicated.WithLease(10*time.Second))
	mustLock(t, m)
	handle, _ := m.Handle()
	env.Advance(4 * time.Second)
	r, err := uncomplicated.Resume(ctx, env.NewClient(), handle)
	if err != nil {
		t.Fatal(err)
	}
	env.Advance(6 * time.Second)
	if held, _ := r.Held(ctx); held {
		t.Error("the resumed hold is held after its lease; want it ended")
	}
	if !uncomplicated.IsClosed(r.Lost()) {
		t.Error("Lost() not closed once Held found the hold gone")
	}
}

// What is not a Mutex's handle is ErrInvalidArgument, with nothing sent to
// Redis: garbled, truncated, another library's, an RWMutex's; and a nil
// Client.
func TestHandle_badInput(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	rw := mustNamedRW(t, env.Client, "rw")
	mustDo(t, rw.Lock(ctx))
	rwHandle, err := rw.Handle()
	if err != nil {
		t.Fatal(err)
	}
	m := mustNamed(t, env.Client, "m")
	mustLock(t, m)
	handle, _ := m.Handle()
	garbled := []byte(handle)
	garbled[len(garbled)/2] ^= 1
	before := env.Redis.CommandCount()
	for _, bad := range []string{"", "uh1.", string(garbled), handle[:len(handle)-3], "abc123", "redsync:token", rwHandle} {
		if _, err := uncomplicated.Resume(ctx, env.Client, bad); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
			t.Errorf("Resume(%.20q…) = %v; want ErrInvalidArgument", bad, err)
		}
	}
	if _, err := uncomplicated.Resume(ctx, nil, handle); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("Resume with a nil Client = %v; want ErrInvalidArgument", err)
	}
	if n := env.Redis.CommandCount() - before; n != 0 {
		t.Errorf("%d commands sent for bad handles; want none", n)
	}
}

// An RWMutex's write hold and a Semaphore's permit resume as a Mutex's
// hold does; a permit only from its own Semaphore.
func TestHandle_rwAndPermit(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	rw := mustNamedRW(t, env.Client, "report")
	mustDo(t, rw.Lock(ctx))
	h, _ := rw.Handle()
	r, err := uncomplicated.ResumeRW(ctx, env.NewClient(), h)
	if err != nil || r.Fence() != rw.Fence() {
		t.Fatalf("ResumeRW = %v, fence %d; want fence %d", err, r.Fence(), rw.Fence())
	}
	mustDo(t, r.Unlock(ctx))
	if err := rw.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("the original writer's Unlock after the resumed one's = %v; want ErrNotHeld", err)
	}

	sem, _ := uncomplicated.NewSemaphore(env.Client, uncomplicated.Named("exports"), 2)
	p, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ph, _ := p.Handle()
	same, _ := uncomplicated.NewSemaphore(env.NewClient(), uncomplicated.Named("exports"), 2)
	q, err := same.Resume(ctx, ph)
	if err != nil || q.Fence() != p.Fence() {
		t.Fatalf("Semaphore.Resume = %v, fence %d; want fence %d", err, q.Fence(), p.Fence())
	}
	otherN, _ := uncomplicated.NewSemaphore(env.Client, uncomplicated.Named("exports"), 3)
	if _, err := otherN.Resume(ctx, ph); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("a permit resumed by a Semaphore of another N = %v; want ErrInvalidArgument", err)
	}
	mustDo(t, q.Release(ctx))
	if err := p.Release(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("the original permit's Release after the resumed one's = %v; want ErrNotHeld", err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A handle stays good across Refreshes of its hold: resuming it after the
// holder refreshed finds the hold by its fence.
func TestHandle_afterRefresh(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	m := mustNamed(t, env.Client, "refreshed")
	mustLock(t, m)
	handle, _ := m.Handle()
	mustDo(t, m.Refresh(ctx))
	mustDo(t, m.Refresh(ctx))
	r, err := uncomplicated.Resume(ctx, env.NewClient(), handle)
	if err != nil || r.Fence() != m.Fence() {
		t.Fatalf("Resume after two Refreshes = %v, fence %d; want fence %d", err, r.Fence(), m.Fence())
	}
	mustDo(t, r.Unlock(ctx))
	if err := m.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("the original's Unlock after the resumed one's = %v; want ErrNotHeld", err)
	}
}

// quiet returns env's Redis's command count once it has stayed the same
// for 20ms of real time: the work that Clients began in the background
// (the first reading of a restart watch) has reached Redis by then, and a
// count from there is the next call's own.
func quiet(env *uncomplicatedtest.Env) int {
	n := env.Redis.CommandCount()
	for still := 0; still < 4; {
		time.Sleep(5 * time.Millisecond)
		if m := env.Redis.CommandCount(); m != n {
			n, still = m, 0
		} else {
			still++
		}
	}
	return n
}
