package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// Deterministic tests of the RWMutex on the mock clock and miniredis.

// mustRW returns the RWMutex of order 1, or fails.
func mustRW(t *testing.T, c *uncomplicated.Client, opts ...uncomplicated.Option) *uncomplicated.RWMutex {
	t.Helper()
	rw, err := uncomplicated.NewRW(c, Order{1}, opts...)
	if err != nil {
		t.Fatalf("NewRW() = %v", err)
	}
	return rw
}

func mustRLock(t *testing.T, rw *uncomplicated.RWMutex) {
	t.Helper()
	if ok, err := rw.TryRLock(context.Background()); !ok || err != nil {
		t.Fatalf("TryRLock() = %v, %v; want true", ok, err)
	}
}

func mustWLock(t *testing.T, rw *uncomplicated.RWMutex) {
	t.Helper()
	if ok, err := rw.TryLock(context.Background()); !ok || err != nil {
		t.Fatalf("TryLock() = %v, %v; want true", ok, err)
	}
}

// async runs f in a goroutine and delivers its error.
func async(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

// tries reports what TryRLock and TryLock of a fresh RWMutex on c say.
func tries(t *testing.T, c *uncomplicated.Client) (reader, writer bool) {
	t.Helper()
	ctx := context.Background()
	rw := mustRW(t, c)
	reader, err := rw.TryRLock(ctx)
	if err != nil {
		t.Fatalf("TryRLock() = %v", err)
	}
	if reader {
		if err := rw.RUnlock(ctx); err != nil {
			t.Fatalf("RUnlock() = %v", err)
		}
	}
	writer, err = rw.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock() = %v", err)
	}
	if writer {
		if err := rw.Unlock(ctx); err != nil {
			t.Fatalf("Unlock() = %v", err)
		}
	}
	return reader, writer
}

// Many readers or one writer.
func TestRWMutex_exclusion(t *testing.T) {
	env, _ := semEnv(t)
	ctx := context.Background()
	a, b := mustRW(t, env.Client), mustRW(t, env.NewClient())
	mustRLock(t, a)
	mustRLock(t, b)
	mustRLock(t, b)
	if r, w := tries(t, env.NewClient()); !r || w {
		t.Errorf("with 3 readers: reader %v, writer %v; want true, false", r, w)
	}
	for _, rw := range []*uncomplicated.RWMutex{a, b, b} {
		if err := rw.RUnlock(ctx); err != nil {
			t.Fatalf("RUnlock() = %v", err)
		}
	}
	if err := b.RUnlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("RUnlock() without a read lock = %v; want ErrNotHeld", err)
	}
	mustWLock(t, a)
	first := a.Fence()
	if first == 0 {
		t.Errorf("Fence() = %d; want one", first)
	}
	if r, w := tries(t, env.NewClient()); r || w {
		t.Errorf("with a writer: reader %v, writer %v; want false, false", r, w)
	}
	if ok, err := a.TryLock(ctx); ok || err != nil {
		t.Errorf("second TryLock() of the same RWMutex = %v, %v; want false, nil", ok, err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if f := a.Fence(); f != 0 {
		t.Errorf("Fence() after Unlock = %d; want 0", f)
	}
	if err := a.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("second Unlock() = %v; want ErrNotHeld", err)
	}
	mustWLock(t, b)
	if f := b.Fence(); !rising(first, f) {
		t.Errorf("next writer's Fence() = %d; want above %d", f, first)
	}
}

// Once a writer waits, new readers wait behind it; the readers already in
// finish, then the writer gets the lock, woken by the last RUnlock, and
// after its Unlock the readers get in.
func TestRWMutex_writePreferring(t *testing.T) {
	env, waiters := semEnv(t)
	ctx := context.Background()
	in := mustRW(t, env.Client)
	mustRLock(t, in)
	mustRLock(t, in)
	writer := mustRW(t, waiters)
	wrote := async(func() error { return writer.Lock(ctx) })
	env.AwaitWaiters(1)
	if r, _ := tries(t, env.NewClient()); r {
		t.Fatal("a new reader got in while a writer waited")
	}
	late := mustRW(t, env.NewClient())
	read := async(func() error { return late.RLock(ctx) })
	env.AwaitWaiters(2)
	for range 2 {
		if err := in.RUnlock(ctx); err != nil {
			t.Fatalf("RUnlock() = %v", err)
		}
	}
	if err := recv(t, wrote); err != nil {
		t.Fatalf("writer's Lock() = %v", err)
	}
	env.Advance(2 * tick)
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() = %d while the writer holds; want 1, the late reader", n)
	}
	if err := writer.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if err := recv(t, read); err != nil {
		t.Fatalf("late reader's RLock() = %v", err)
	}
}

// A writer that gives up lets readers in again at once; one that died
// while waiting holds them back only until its intent expires.
func TestRWMutex_writerGoneLetsReadersIn(t *testing.T) {
	env, waiters := semEnv(t)
	mustRLock(t, mustRW(t, env.Client))
	ctx, cancel := context.WithCancel(context.Background())
	writer := mustRW(t, waiters)
	wrote := async(func() error { return writer.Lock(ctx) })
	env.AwaitWaiters(1)
	if r, _ := tries(t, env.NewClient()); r {
		t.Fatal("a reader got in while a writer waited")
	}
	cancel()
	if err := recv(t, wrote); !errors.Is(err, uncomplicated.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock() = %v; want ErrNotObtained and Canceled", err)
	}
	awaitReaderIn(t, env.NewClient())

	// A writer that died while waiting: its entry, as an attempt leaves it.
	key := "lock:writers:{" + writer.Name() + "}"
	intent := 3*tick + 100*time.Millisecond
	if _, err := env.Redis.ZAdd(key, float64(env.Clock.Now().Add(intent).UnixMilli()), "dead"); err != nil {
		t.Fatal(err)
	}
	if r, _ := tries(t, env.NewClient()); r {
		t.Fatal("a reader got in while a dead writer's intent lasted")
	}
	env.Advance(intent)
	if r, _ := tries(t, env.NewClient()); !r {
		t.Fatal("a reader was held back after the dead writer's intent expired")
	}
}

// awaitReaderIn waits, in real time, for the leave of a writer that gave
// up, which runs in the background, to let a reader in.
func awaitReaderIn(t *testing.T, c *uncomplicated.Client) {
	t.Helper()
	for i := 0; ; i++ {
		if r, _ := tries(t, c); r {
			return
		}
		if i == 1000 {
			t.Fatal("readers held back after the waiting writer gave up")
		}
		time.Sleep(time.Millisecond)
	}
}

// A reader that died frees its share when its lease ends: the writer gets
// the lock at its first tick after that.
func TestRWMutex_crashedReader(t *testing.T) {
	env, waiters := semEnv(t)
	const lease = 20 * time.Second
	mustRLock(t, mustRW(t, env.Client, uncomplicated.WithLease(lease)))
	start := env.Clock.Now()
	writer := mustRW(t, waiters)
	wrote := async(func() error { return writer.Lock(context.Background()) })
	env.AwaitWaiters(1)
	env.Advance(lease - time.Millisecond)
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() = %d before the reader's lease ended; want 1", n)
	}
	env.Advance(tick)
	if err := recv(t, wrote); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	if waited := env.Clock.Since(start); waited < lease || waited > lease+tick {
		t.Errorf("Lock() returned after %v; want between %v and %v", waited, lease, lease+tick)
	}
}

// Readers stuck for the whole timeout make a writer fail with ErrStale
// under Fail; a reader leaving restarts the writer's patience, as the set
// of blockers changed.
func TestRWMutex_staleReaders(t *testing.T) {
	env, waiters := semEnv(t)
	ctx := context.Background()
	stuck, leaving := mustRW(t, env.Client, uncomplicated.WithLease(0)), mustRW(t, env.NewClient(), uncomplicated.WithLease(0))
	mustRLock(t, stuck)
	mustRLock(t, leaving)
	writer := mustRW(t, waiters)
	start := env.Clock.Now()
	wrote := async(func() error { return writer.Lock(ctx) })
	env.AwaitWaiters(1)
	env.Advance(patience / 2)
	if err := leaving.RUnlock(ctx); err != nil {
		t.Fatalf("RUnlock() = %v", err)
	}
	env.Advance(patience - time.Nanosecond)
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() = %d at %v; want 1: a reader left at %v", n, env.Clock.Since(start), patience/2)
	}
	env.Advance(tick + time.Nanosecond) // it saw the reader leave by its next tick
	checkStale(t, recv(t, wrote), writer.Name())
	if r, _ := tries(t, env.NewClient()); !r {
		t.Error("readers held back after the writer failed")
	}
}

// Under TakeOver a writer evicts exactly the stuck readers it saw, and
// they find out.
func TestRWMutex_takeOverReaders(t *testing.T) {
	env, waiters := semEnv(t, uncomplicated.WithTakeOver(true))
	ctx := context.Background()
	a, b := mustRW(t, env.Client, uncomplicated.WithLease(0)), mustRW(t, env.NewClient(uncomplicated.WithTimeout(patience)), uncomplicated.WithLease(0))
	mustRLock(t, a)
	mustRLock(t, b)
	writer := mustRW(t, waiters)
	wrote := async(func() error { return writer.Lock(ctx) })
	env.AwaitWaiters(1)
	env.Advance(patience)
	if err := recv(t, wrote); err != nil {
		t.Fatalf("Lock() = %v; want the stuck readers taken over", err)
	}
	if f := writer.Fence(); f == 0 {
		t.Errorf("Fence() = %d; want one", f)
	}
	for _, rw := range []*uncomplicated.RWMutex{a, b} {
		if err := rw.RUnlock(ctx); !errors.Is(err, uncomplicated.ErrLost) || !errors.Is(err, uncomplicated.ErrNotHeld) {
			t.Errorf("evicted reader's RUnlock() = %v; want ErrLost and ErrNotHeld", err)
		}
	}
}

// A reader behind a stuck writer fails with ErrStale under Fail, and
// evicts it under TakeOver; the evicted writer's Unlock reports ErrLost.
func TestRWMutex_readerBehindStuckWriter(t *testing.T) {
	for _, policy := range []bool{false, true} {
		t.Run(fmt.Sprintf("takeover=%v", policy), func(t *testing.T) {
			env, waiters := semEnv(t, uncomplicated.WithTakeOver(policy))
			ctx := context.Background()
			w := mustRW(t, env.Client, uncomplicated.WithLease(0))
			mustWLock(t, w)
			reader := mustRW(t, waiters)
			read := async(func() error { return reader.RLock(ctx) })
			env.AwaitWaiters(1)
			env.Advance(patience)
			err := recv(t, read)
			if !policy {
				checkStale(t, err, reader.Name())
				return
			}
			if err != nil {
				t.Fatalf("RLock() = %v; want the stuck writer evicted", err)
			}
			if err := w.Unlock(ctx); !errors.Is(err, uncomplicated.ErrLost) {
				t.Errorf("evicted writer's Unlock() = %v; want ErrLost", err)
			}
		})
	}
}

// A reader behind a waiting writer is never stale: the writer waits for
// readers, and has its own patience. When the writer gives up on stuck
// readers, the reader gets in.
func TestRWMutex_readerBehindWaitingWriter(t *testing.T) {
	env, waiters := semEnv(t)
	ctx := context.Background()
	mustRLock(t, mustRW(t, env.Client, uncomplicated.WithLease(0)))
	writer := mustRW(t, waiters)
	wrote := async(func() error { return writer.Lock(ctx) })
	env.AwaitWaiters(1)
	env.Advance(patience / 2)
	reader := mustRW(t, env.NewClient(uncomplicated.WithTimeout(patience/4), uncomplicated.WithTicks(ticks)))
	read := async(func() error { return reader.RLock(ctx) })
	env.AwaitWaiters(2)
	env.Advance(patience / 2)
	checkStale(t, recv(t, wrote), writer.Name())
	env.Advance(tick)
	if err := recv(t, read); err != nil {
		t.Fatalf("RLock() = %v; want in once the writer gave up", err)
	}
}

// Do and RDo hold the lock while fn runs and release it after.
func TestRWMutex_DoAndRDo(t *testing.T) {
	env, _ := semEnv(t)
	ctx := context.Background()
	rw := mustRW(t, env.Client)
	err := rw.Do(ctx, func(context.Context) error {
		if r, w := tries(t, env.NewClient()); r || w {
			t.Errorf("inside Do: reader %v, writer %v; want false, false", r, w)
		}
		if rw.Fence() == 0 {
			t.Error("Fence() inside Do = 0")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do() = %v", err)
	}
	boom := errors.New("boom")
	err = rw.RDo(ctx, func(context.Context) error {
		if r, w := tries(t, env.NewClient()); !r || w {
			t.Errorf("inside RDo: reader %v, writer %v; want true, false", r, w)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("RDo() = %v; want fn's error", err)
	}
	if err := rw.RUnlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("RUnlock() after RDo = %v; want ErrNotHeld: RDo's read lock is its own", err)
	}
	if r, w := tries(t, env.NewClient()); !r || !w {
		t.Errorf("after Do and RDo: reader %v, writer %v; want true, true", r, w)
	}
}

// With auto-refresh, RDo's reader outlives its lease, so a writer keeps
// waiting, and its patience restarts at each Refresh.
func TestRWMutex_RDo_autoRefresh(t *testing.T) {
	env, waiters := semEnv(t)
	ctx := context.Background()
	rw := mustRW(t, env.Client, uncomplicated.WithLease(10*time.Second), uncomplicated.WithAutoRefresh(3*time.Second))
	inside, release := make(chan struct{}), make(chan struct{})
	read := async(func() error {
		return rw.RDo(ctx, func(context.Context) error {
			close(inside)
			<-release
			return nil
		})
	})
	<-inside
	for range 15 {
		env.Clock.Add(time.Second)
		time.Sleep(time.Millisecond) // let the refresh run, in real time
	}
	if _, w := tries(t, waiters); w {
		t.Error("a writer got in past the reader's lease, under auto-refresh")
	}
	close(release)
	if err := recv(t, read); err != nil {
		t.Fatalf("RDo() = %v", err)
	}
}

// A writer's Unlock lets in the readers queued before the next writer:
// they get in before it, so a stream of writers cannot starve readers;
// the writer gets the lock when they leave.
func TestRWMutex_readersTurnAfterWriter(t *testing.T) {
	env, waiters := semEnv(t)
	ctx := context.Background()
	first := mustRW(t, env.Client)
	mustWLock(t, first)
	reader := mustRW(t, waiters)
	read := async(func() error { return reader.RLock(ctx) })
	env.AwaitWaiters(1)
	second := mustRW(t, env.NewClient(uncomplicated.WithTimeout(patience), uncomplicated.WithTicks(ticks)))
	wrote := async(func() error { return second.Lock(ctx) })
	env.AwaitWaiters(2)
	if err := first.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if err := recv(t, read); err != nil {
		t.Fatalf("waiting reader's RLock() = %v", err)
	}
	env.Advance(2 * tick)
	if n := env.Waiters(); n != 1 {
		t.Fatalf("Waiters() = %d while the reader holds; want 1, the second writer", n)
	}
	if r, _ := tries(t, env.NewClient()); r {
		t.Error("a new reader got in while the second writer waited")
	}
	if err := reader.RUnlock(ctx); err != nil {
		t.Fatalf("RUnlock() = %v", err)
	}
	if err := recv(t, wrote); err != nil {
		t.Fatalf("second writer's Lock() = %v", err)
	}
}

// A reader that died in the queue holds nobody back: its entry, ahead of
// a waiting writer, expires a few ticks after its last attempt, and a
// release passes it over to the writer. (Before the queue, a reader that
// died in the turn a writer's release gave it held writers back as long.)
func TestRWMutex_deadReaderInQueueExpires(t *testing.T) {
	env, waiters := semEnv(t)
	ctx := context.Background()
	first := mustRW(t, env.Client)
	mustWLock(t, first)
	queue := "lock:rwqueue:{" + first.Name() + "}"
	if _, err := env.Redis.Push(queue, "s dead 0 lock:wake:{"+first.Name()+"}:gone"); err != nil {
		t.Fatal(err)
	}
	intent := 3*tick + 100*time.Millisecond
	if _, err := env.Redis.ZAdd("lock:waiting:{"+first.Name()+"}", float64(env.Clock.Now().Add(intent).UnixMilli()), "dead"); err != nil {
		t.Fatal(err)
	}
	second := mustRW(t, waiters)
	wrote := async(func() error { return second.Lock(ctx) })
	env.AwaitWaiters(1)
	env.Advance(intent)
	if err := first.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if err := recv(t, wrote); err != nil {
		t.Fatalf("waiting writer's Lock() = %v", err)
	}
	if r, _ := tries(t, env.NewClient()); r {
		t.Error("a reader got in while the writer holds")
	}
}

// The write hold has Refresh, Held and Lost as a Mutex's hold has: a
// Refresh keeps it past its lease, and a take-over is found.
func TestRWMutex_writeHold(t *testing.T) {
	env, waiters := semEnv(t, uncomplicated.WithTakeOver(true))
	ctx := context.Background()
	rw := mustRW(t, env.Client, uncomplicated.WithLease(time.Minute))
	if err := rw.Refresh(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Refresh() without a write hold = %v; want ErrNotHeld", err)
	}
	if ok, err := rw.Held(ctx); ok || err != nil {
		t.Errorf("Held() without a write hold = %v, %v; want false, nil", ok, err)
	}
	if !isClosedChan(rw.Lost()) {
		t.Error("Lost() open without a write hold")
	}
	mustWLock(t, rw)
	lost := rw.Lost()
	env.Advance(50 * time.Second)
	if err := rw.Refresh(ctx); err != nil {
		t.Fatalf("Refresh() = %v", err)
	}
	env.Advance(50 * time.Second) // past the first lease
	if ok, err := rw.Held(ctx); !ok || err != nil {
		t.Fatalf("Held() after a Refresh = %v, %v; want true", ok, err)
	}
	other := mustRW(t, waiters)
	done := async(func() error { return other.Lock(ctx) })
	env.AwaitWaiters(1)
	env.Advance(patience) // the writer is stuck now: taken over
	if err := recv(t, done); err != nil {
		t.Fatalf("take-over Lock() = %v", err)
	}
	if ok, err := rw.Held(ctx); ok || err != nil {
		t.Errorf("Held() after the take-over = %v, %v; want false, nil", ok, err)
	}
	if !isClosedChan(lost) {
		t.Error("Lost() still open after the take-over was found")
	}
	if err := rw.Refresh(ctx); !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("Refresh() after the take-over = %v; want ErrLost", err)
	}
}

// Do frees the process's writer slot when it ends, also when fn unlocked
// itself, which Do then reports.
func TestRWMutex_Do_freesWriterSlot(t *testing.T) {
	env, _ := semEnv(t)
	ctx := context.Background()
	rw := mustRW(t, env.Client)
	if err := rw.Do(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Do() = %v", err)
	}
	mustWLock(t, rw)
	if err := rw.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	err := rw.Do(ctx, func(ctx context.Context) error { return rw.Unlock(ctx) })
	if !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Do() whose fn unlocked = %v; want ErrNotHeld", err)
	}
	mustWLock(t, rw)
}
