package uncomplicated_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// Faults a connection can have, injected one command at a time: a reply
// lost after the command ran, and a command that hangs before it is sent.

var errLostReply = errors.New("connection reset by test")

// faultPool hands out connections to a miniredis that misbehave on request.
type faultPool struct {
	pool    *redis.Pool
	drop    atomic.Int32                  // commands still to drop before they are sent
	lose    atomic.Int32                  // commands still to lose the reply of
	then    atomic.Bool                   // a lost reply makes the next command drop
	down    atomic.Bool                   // every command fails unsent
	failed  atomic.Int32                  // commands failed by down
	loading atomic.Int32                  // commands still to answer LOADING
	hang    atomic.Pointer[chan struct{}] // when set, commands wait for it to close
	hung    chan struct{}                 // gets a value when a command starts to hang
	// hungScripts makes hung hear of scripts only: other commands, such as
	// the restart watch's, still hang, unreported.
	hungScripts atomic.Bool
	stall       atomic.Pointer[chan struct{}] // when set, the next script's reply waits for it to close
	stalled     chan struct{}                 // gets a value when a reply starts to wait
	delay       atomic.Pointer[delayed]       // when set, the next EVALSHA of its script waits to be sent
}

// A delayed is a script's call held back (see delayNext).
type delayed struct {
	sha        string
	until, ran chan struct{}
}

// delayNext holds the next EVALSHA of the script sha back until the
// returned func is called, which then waits for it to have run.
func (p *faultPool) delayNext(t *testing.T, sha string) (release func()) {
	d := &delayed{sha: sha, until: make(chan struct{}), ran: make(chan struct{})}
	p.delay.Store(d)
	return func() {
		close(d.until)
		select {
		case <-d.ran:
		case <-time.After(5 * time.Second):
			t.Fatal("the delayed script never ran")
		}
	}
}

func newFaultPool(t *testing.T) (*faultPool, *miniredis.Miniredis) {
	t.Helper()
	mr := miniredis.RunT(t)
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", mr.Addr())
	}}
	t.Cleanup(func() { _ = pool.Close() })
	return &faultPool{pool: pool, hung: make(chan struct{}, 16), stalled: make(chan struct{}, 1)}, mr
}

// loseNextReply makes the next command that succeeds report errLostReply.
func (p *faultPool) loseNextReply() { p.lose.Store(1) }

// dropNextRequest makes the next command fail with errLostReply unsent.
func (p *faultPool) dropNextRequest() { p.drop.Store(1) }

// stallNextReply makes the next script that succeeds hold its reply back,
// after Redis ran it, until the returned func is called.
func (p *faultPool) stallNextReply() (release func()) {
	ch := make(chan struct{})
	p.stall.Store(&ch)
	return func() { close(ch) }
}

// hangNext makes commands wait until the returned func is called.
func (p *faultPool) hangNext() (release func()) {
	ch := make(chan struct{})
	p.hang.Store(&ch)
	return func() { p.hang.Store(nil); close(ch) }
}

func (p *faultPool) GetContext(ctx context.Context) (redis.Conn, error) {
	c, err := p.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return &faultConn{ConnWithContext: c.(redis.ConnWithContext), p: p}, nil
}

type faultConn struct {
	redis.ConnWithContext
	p *faultPool
}

func (c *faultConn) Do(cmd string, args ...any) (any, error) {
	return c.DoContext(context.Background(), cmd, args...)
}

func (c *faultConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	switch cmd {
	case "SPUBLISH", "INFO", "CLUSTER", "PUBSUB": // the Client's own background work takes no one-shot fault
		if c.p.down.Load() {
			return nil, errLostReply
		}
		return c.ConnWithContext.DoContext(ctx, cmd, args...)
	}
	if h := c.p.hang.Load(); h != nil {
		if cmd == "EVALSHA" || cmd == "EVAL" || !c.p.hungScripts.Load() {
			c.p.hung <- struct{}{}
		}
		select {
		case <-*h:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if d := c.p.delay.Load(); d != nil && cmd == "EVALSHA" && len(args) > 0 && args[0] == d.sha && c.p.delay.CompareAndSwap(d, nil) {
		<-d.until
		defer close(d.ran)
	}
	if c.p.loading.Add(-1) >= 0 {
		return nil, redis.Error("LOADING Redis is loading the dataset in memory")
	}
	if c.p.down.Load() {
		c.p.failed.Add(1)
		return nil, errLostReply
	}
	if c.p.drop.CompareAndSwap(1, 0) {
		return nil, errLostReply
	}
	reply, err := c.ConnWithContext.DoContext(ctx, cmd, args...)
	if err == nil && (cmd == "EVALSHA" || cmd == "EVAL") {
		if s := c.p.stall.Swap(nil); s != nil {
			c.p.stalled <- struct{}{}
			<-*s
		}
	}
	if err == nil && c.p.lose.CompareAndSwap(1, 0) {
		if c.p.then.CompareAndSwap(true, false) {
			c.p.drop.Store(1)
		}
		return nil, errLostReply
	}
	return reply, err
}

// An acquisition whose reply is lost after the script ran is resolved by
// asking Redis again with the same token: the lock is ours, with the fence
// the lost reply carried.
func TestFault_lostAcquireReply(t *testing.T) {
	for _, try := range []string{"Lock", "TryLock"} {
		t.Run(try, func(t *testing.T) {
			fp, mr := newFaultPool(t)
			m := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1})
			fp.loseNextReply()
			var err error
			if try == "Lock" {
				err = m.Lock(context.Background())
			} else {
				var ok bool
				if ok, err = m.TryLock(context.Background()); !ok && err == nil {
					t.Fatalf("TryLock() = false, nil; want true")
				}
			}
			if err != nil {
				t.Fatalf("%s() = %v; want nil: the lost reply is resolved", try, err)
			}
			_, fence := holderIn(mr, m.Name())
			if held, err := m.Held(context.Background()); !held || err != nil || m.Fence() != fence {
				t.Errorf("Held() = %v, %v, Fence() = %d; want true, nil, the lock's, %d", held, err, m.Fence(), fence)
			}
			if err := m.Unlock(context.Background()); err != nil {
				t.Errorf("Unlock() = %v; want nil", err)
			}
			if mr.Exists(m.Name()) {
				t.Errorf("key %s left behind", m.Name())
			}
		})
	}
}

// When the question that would resolve a lost reply fails too, TryLock
// fails, and Lock tries again as a new waiter, with a token of its own, and
// gets the lock; neither leaves a key behind: the Client deletes the first
// token's, if it still holds it, and Close waits for that.
func TestFault_lostAcquireReply_unresolved(t *testing.T) {
	for _, try := range []string{"Lock", "TryLock"} {
		t.Run(try, func(t *testing.T) {
			fp, mr := newFaultPool(t)
			client := uncomplicated.NewClient(redigo.New(fp))
			m := mustNew(t, client, Order{1})
			fp.then.Store(true)
			fp.loseNextReply()
			if try == "Lock" {
				if err := m.Lock(context.Background()); err != nil {
					t.Fatalf("Lock() = %v; want the lock, at a later attempt", err)
				}
				if err := m.Unlock(context.Background()); err != nil {
					t.Fatal(err)
				}
			} else if _, err := m.TryLock(context.Background()); !errors.Is(err, errLostReply) {
				t.Fatalf("TryLock() = %v; want the lost reply's error", err)
			}
			if err := client.Close(); err != nil {
				t.Fatal(err)
			}
			if mr.Exists(m.Name()) {
				t.Errorf("key %s left behind by an acquisition whose reply was lost", m.Name())
			}
		})
	}
}

// A Lock whose attempt's reply was lost, and the question after it too,
// goes on as a new waiter with a new token: the release of the first
// token, which the Client sends in the background, cannot free what a
// later attempt got, however late it reaches Redis.
func TestFault_lostAcquireReply_lateRelease(t *testing.T) {
	fp, _ := newFaultPool(t)
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1})
	late := fp.delayNext(t, uncomplicated.ReleaseSHA)
	fp.then.Store(true)
	fp.loseNextReply()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v; want the lock, at a later attempt", err)
	}
	late() // the first token's release reaches Redis now
	if held, err := m.Held(ctx); !held || err != nil {
		t.Errorf("Held() after the first token's release = %v, %v; want true: the hold has a token of its own", held, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// An attempt whose caller gave up after it was sent, before it ran (held
// back here on its connection, as by a busy server), grants the lock
// after its caller left: its reply, when it comes, has a clean-up give the
// lock back, so another Client gets it at once.
func TestFault_leftAttemptGivenBack(t *testing.T) {
	fp, mr := newFaultPool(t)
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1})
	mustLock(t, m) // Redis has the scripts: the held-back EVALSHA runs
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	late := fp.delayNext(t, uncomplicated.AcquireSHA)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := m.Lock(ctx); !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Fatalf("Lock() = %v; want ErrNotObtained at its deadline", err)
	}
	late() // the attempt reaches Redis now, and gets the free lock
	eventually(t, "the late grant given back", func() bool { return !mr.Exists(m.Name()) })
	other := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1})
	if ok, err := other.TryLock(context.Background()); !ok || err != nil {
		t.Errorf("another Client's TryLock() = %v, %v; want the lock", ok, err)
	}
}

// A Refresh that fails may or may not have rotated the token: Unlock
// accepts either token and releases the lock, whichever Redis holds.
func TestFault_refreshOutcomeUnknown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   func(*faultPool)
		rotated bool
	}{
		{"reply lost", (*faultPool).loseNextReply, true},
		{"request lost", (*faultPool).dropNextRequest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp, mr := newFaultPool(t)
			m := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1})
			mustLock(t, m)
			before, _ := mr.Get(m.Name())
			tc.fault(fp)
			if err := m.Refresh(context.Background()); !errors.Is(err, errLostReply) {
				t.Fatalf("Refresh() = %v; want the fault's error", err)
			}
			if after, _ := mr.Get(m.Name()); (after != before) != tc.rotated {
				t.Fatalf("token rotated: %v; want %v", after != before, tc.rotated)
			}
			if err := m.Unlock(context.Background()); err != nil {
				t.Errorf("Unlock() = %v; want nil", err)
			}
			if mr.Exists(m.Name()) {
				t.Errorf("key %s left behind", m.Name())
			}
		})
	}
}

// Unlock gives up when its ctx ends while a Refresh hangs, and ends the
// hold in this process all the same.
func TestFault_unlockWhileRefreshHangs(t *testing.T) {
	fp, _ := newFaultPool(t)
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1})
	mustLock(t, m)
	release := fp.hangNext()
	refreshed := make(chan error, 1)
	go func() { refreshed <- m.Refresh(context.Background()) }()
	<-fp.hung

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	unlocked := make(chan error, 1)
	go func() { unlocked <- m.Unlock(ctx) }()
	err := recv(t, unlocked)
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > time.Second {
		t.Errorf("Unlock() = %v after %v; want DeadlineExceeded by its ctx", err, took)
	}
	if m.Fence() != 0 {
		t.Errorf("Fence() after Unlock = %d; want 0", m.Fence())
	}
	release()
	if err := recv(t, refreshed); err != nil {
		t.Logf("Refresh() = %v", err)
	}
	if ok, err := m.TryLock(context.Background()); ok || err != nil {
		t.Errorf("TryLock() = %v, %v; want false, nil: the hold ended here, and the key waits for its lease", ok, err)
	}
}

// A Pool that returns no connection gives an error, not a panic, and the
// Mutex stays usable.
func TestFault_nilConn(t *testing.T) {
	client := uncomplicated.NewClient(redigo.New(nilPool{}))
	m := mustNew(t, client, Order{1})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := m.Lock(ctx); err == nil {
		t.Fatal("Lock() = nil with a Pool returning nil connections")
	}
	if ok, err := m.TryLock(context.Background()); ok || err == nil {
		t.Errorf("TryLock() = %v, %v; want false and an error, not a Mutex stuck in this process", ok, err)
	}
}

type nilPool struct{}

func (nilPool) GetContext(context.Context) (redis.Conn, error) { return nil, nil }

// A Pool that panics: the panic is the Pool's and goes on, but the Mutex is
// not left held in this process.
func TestFault_panickingPool(t *testing.T) {
	var panics atomic.Bool
	panics.Store(true)
	env := uncomplicatedtest.New(t)
	client := uncomplicated.NewClient(redigo.New(panicPool{&panics, env}))
	m := mustNew(t, client, Order{1})
	func() {
		defer func() { _ = recover() }()
		_ = m.Lock(context.Background())
		t.Error("Lock() returned; want the Pool's panic")
	}()
	panics.Store(false)
	if ok, err := m.TryLock(context.Background()); !ok || err != nil {
		t.Errorf("TryLock() after the panic = %v, %v; want true, nil", ok, err)
	}
}

type panicPool struct {
	panics *atomic.Bool
	env    *uncomplicatedtest.Env
}

func (p panicPool) GetContext(ctx context.Context) (redis.Conn, error) {
	if p.panics.Load() {
		panic("pool panics")
	}
	return redis.DialContext(ctx, "tcp", p.env.Redis.Addr())
}

// Closing the Client while Do's fn runs: the lock is still released, and
// Do reports ErrClosed.
func TestClient_Close_duringDo(t *testing.T) {
	env := uncomplicatedtest.New(t)
	client := env.NewClient()
	m := mustNew(t, client, Order{1})
	err := m.Do(context.Background(), func(context.Context) error {
		return client.Close()
	})
	if !errors.Is(err, uncomplicated.ErrClosed) {
		t.Errorf("Do() = %v; want ErrClosed", err)
	}
	if env.Redis.Exists(m.Name()) {
		t.Errorf("key %s left behind by Close during Do", m.Name())
	}
}

// recv receives from ch, failing the test if nothing comes within ten
// seconds: a regression shows as a failure, not as a hung test.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing received after 10s")
		panic("unreachable")
	}
}

// Do's Unlock ignores the cancellation of ctx but not its deadline: with
// Redis hanging, Do returns soon after the deadline, not 5s later.
func TestFault_doReturnsByDeadline(t *testing.T) {
	fp, _ := newFaultPool(t)
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var release func()
	start := time.Now()
	err := m.Do(ctx, func(ctx context.Context) error {
		release = fp.hangNext()
		<-ctx.Done()
		return nil
	})
	took := time.Since(start)
	release()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do() = %v; want the Unlock's DeadlineExceeded", err)
	}
	if took > 2*time.Second {
		t.Errorf("Do() returned %v after it began; want soon after its 100ms deadline", took)
	}
}

// A waiter that gives up while its Client cannot reach Redis leaves its
// entry in the queue. When a release hands it the lock, its Client, which
// still listens, releases the lock at once rather than leaving it to the
// gone waiter's lease.
func TestFault_goneWaiterHandOffReleased(t *testing.T) {
	fp, mr := newFaultPool(t)
	holderClient := uncomplicated.NewClient(redigo.New(fp.pool))
	t.Cleanup(func() { _ = holderClient.Close() })
	holder := mustNew(t, holderClient, Order{1})
	mustLock(t, holder)

	client := uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithTimeout(10*time.Second))
	t.Cleanup(func() { _ = client.Close() })
	waiter := mustNew(t, client, Order{1})
	ctx, cancel := context.WithCancel(context.Background())
	done := lockAsync(ctx, waiter)
	queue := "lock:queue:{" + waiter.Name() + "}"
	eventually(t, "the waiter in the queue", func() bool {
		entries, _ := mr.List(queue)
		return len(entries) == 1
	})
	fp.down.Store(true)
	cancel()
	if err := recv(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock() = %v; want context.Canceled", err)
	}
	eventually(t, "the leave script failed", func() bool { return fp.failed.Load() > 0 })
	fp.down.Store(false)

	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	eventually(t, "the lock freed", func() bool { return !mr.Exists(holder.Name()) })
}

// A Redis that restarted and is loading its data answers LOADING: Lock
// waits for it on its ticks instead of failing.
func TestFault_lockWaitsWhileLoading(t *testing.T) {
	fp, _ := newFaultPool(t)
	m := mustNew(t, uncomplicated.NewClient(redigo.New(fp)), Order{1}, uncomplicated.WithTimeout(time.Second))
	fp.loading.Store(3)
	mustLock(t, m)
	if n := fp.loading.Load(); n >= 0 {
		t.Errorf("%d LOADING replies left; want all 3 used", n+1)
	}
}

// A Pool that panics under an RWMutex's writer: the panic goes on, and the
// writer slot of the process is free again.
func TestFault_panickingPool_RWMutex(t *testing.T) {
	var panics atomic.Bool
	panics.Store(true)
	env := uncomplicatedtest.New(t)
	rw := mustRW(t, uncomplicated.NewClient(redigo.New(panicPool{&panics, env})))
	for _, lock := range []func() error{
		func() error { return rw.Lock(context.Background()) },
		func() error { _, err := rw.TryLock(context.Background()); return err },
	} {
		func() {
			defer func() { _ = recover() }()
			_ = lock()
			t.Error("the lock returned; want the Pool's panic")
		}()
	}
	panics.Store(false)
	if ok, err := rw.TryLock(context.Background()); !ok || err != nil {
		t.Errorf("TryLock() after the panics = %v, %v; want true, nil", ok, err)
	}
}

// Closing the Client while an RDo or a Semaphore's Do runs: the hold is
// still released, and Do reports ErrClosed.
func TestClient_Close_duringRDoAndSemaphoreDo(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	c := env.NewClient()
	rw := mustRW(t, c)
	if err := rw.RDo(ctx, func(context.Context) error { return c.Close() }); !errors.Is(err, uncomplicated.ErrClosed) {
		t.Errorf("RDo() = %v; want ErrClosed", err)
	}
	c = env.NewClient()
	s := mustSemaphore(t, c, 1)
	if err := s.Do(ctx, func(context.Context) error { return c.Close() }); !errors.Is(err, uncomplicated.ErrClosed) {
		t.Errorf("Semaphore Do() = %v; want ErrClosed", err)
	}
	for _, k := range []string{"lock:readers:{" + rw.Name() + "}", permitsKey(env.Client, 1)} {
		if env.Redis.Exists(k) {
			t.Errorf("key %s left behind by Close during Do", k)
		}
	}
}

// The reply of a waiter's attempt, which Redis ran before the lock was
// handed to the waiter, comes after the hand-off message and after the
// hand-off's lease ended unheard, while a newcomer holds the lock. The
// message's fence is above what the attempt saw, but too late to trust:
// Lock must not return it (the torture's TestMutex_staleHandOff, at once).
func TestFault_handOffOutlivedItsLease(t *testing.T) {
	const lease = time.Second
	fp, mr, mock := newMockFaultPool(t)
	direct := uncomplicated.NewClient(redigo.New(fp.pool), uncomplicated.WithClock(mock))
	t.Cleanup(func() { _ = direct.Close() })
	holder := mustNew(t, direct, Order{1})
	mustLock(t, holder)
	waiter := mustNew(t, uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithClock(mock), uncomplicated.WithLease(lease)), Order{1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := lockAsync(ctx, waiter)
	queue := "lock:queue:{" + waiter.Name() + "}"
	eventually(t, "the waiter queued", func() bool { l, _ := mr.List(queue); return len(l) == 1 })

	release := fp.stallNextReply()
	// The waiter's next tick: an attempt that finds the holder, runs in
	// Redis and has its reply held back. The waiter may set its tick's
	// timer after a first Add, so time moves on until the attempt comes.
	deadline := time.Now().Add(10 * time.Second)
	for stalled := false; !stalled; {
		mock.Add(time.Second)
		select {
		case <-fp.stalled:
			stalled = true
		case <-time.After(20 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no attempt of the waiter after 10s")
			}
		}
	}
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err) // hands the lock to the waiter, fence 2
	}
	mock.Add(lease) // the hand-off's lease ends unheard
	mr.FastForward(lease)
	newcomer := mustNew(t, direct, Order{1})
	mustLock(t, newcomer)
	release()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("Lock() = nil with fence %d while the newcomer holds fence %d; want it to wait", waiter.Fence(), newcomer.Fence())
		}
		t.Fatalf("Lock() = %v; want it to wait", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	if err := recv(t, done); !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Errorf("Lock() after cancel = %v; want ErrNotObtained", err)
	}
}
