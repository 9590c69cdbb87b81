package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// Order is a domain object: anything with an ID method can be locked.
type Order struct{ N int64 }

func (o Order) ID() int64 { return o.N }

func Example() {
	srv, err := miniredis.Run() // or your Redis server
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	pool := &redis.Pool{
		MaxIdle:     128, // the goroutines that lock at once, and one (see redigo.Pool)
		IdleTimeout: 5 * time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", srv.Addr(),
				redis.DialConnectTimeout(5*time.Second),
				redis.DialReadTimeout(5*time.Second), // above 1s: see redigo.Pool
				redis.DialWriteTimeout(5*time.Second))
		},
	}
	defer pool.Close()

	client := uncomplicated.NewClient(redigo.New(pool)) // one per process
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	order := Order{N: 42}
	m, err := uncomplicated.New(client, order)
	if err != nil {
		log.Fatal(err)
	}
	err = m.Do(ctx, func(ctx context.Context) error {
		fence, _ := uncomplicated.FenceOf(ctx) // or m.Fence(): above every earlier hold's
		fmt.Println("charging order", order.N, "under", m.Name(), "with a fence:", fence > 0)
		return nil // your work here, passing fence to the store it writes to
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// charging order 42 under lock:uncomplicated_test.Order:42 with a fence: true
}

// exampleClient returns a Client on a fresh in-memory Redis, and a func
// that stops both.
func exampleClient(opts ...uncomplicated.Option) (*uncomplicated.Client, func()) {
	srv, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", srv.Addr())
	}}
	client := uncomplicated.NewClient(redigo.New(pool), opts...)
	return client, func() { client.Close(); pool.Close(); srv.Close() }
}

// Do holds the lock while fn runs and releases it after, also when fn fails
// or panics. Its error tells a failed fn from a lock lost while fn ran.
func ExampleMutex_Do() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	last := map[int64]uint64{} // each order's last fence
	for _, n := range []int64{1, 1, 2} {
		m, err := uncomplicated.New(client, Order{N: n})
		if err != nil {
			log.Fatal(err)
		}
		err = m.Do(ctx, func(ctx context.Context) error {
			fmt.Printf("order %d, fence above its last: %v\n", n, m.Fence() > last[n])
			last[n] = m.Fence()
			return nil
		})
		if errors.Is(err, uncomplicated.ErrNotHeld) {
			fmt.Println("the lock expired or was taken over while we worked")
		} else if err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// order 1, fence above its last: true
	// order 1, fence above its last: true
	// order 2, fence above its last: true
}

// With WithAutoRefresh, Do keeps the lock through a job longer than the
// lease, and cancels the job's ctx when the lock is lost all the same.
func ExampleWithAutoRefresh() {
	srv, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", srv.Addr())
	}}
	defer pool.Close()
	client := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithLease(300*time.Millisecond),
		uncomplicated.WithAutoRefresh(100*time.Millisecond))
	defer client.Close()

	m, err := uncomplicated.New(client, Order{N: 42})
	if err != nil {
		log.Fatal(err)
	}
	err = m.Do(context.Background(), func(ctx context.Context) error {
		time.Sleep(500 * time.Millisecond) // longer than the 300ms lease
		held, err := m.Held(ctx)
		fmt.Println("held after 500ms:", held, err)

		srv.Del(m.Name()) // as if Redis lost the key
		select {
		case <-ctx.Done():
			fmt.Println("job stopped:", errors.Is(context.Cause(ctx), uncomplicated.ErrLost))
			return ctx.Err()
		case <-time.After(time.Second):
			return nil
		}
	})
	fmt.Println("Do reports the loss:", errors.Is(err, uncomplicated.ErrLost))
	// Output:
	// held after 500ms: true <nil>
	// job stopped: true
	// Do reports the loss: true
}

// Code deep inside fn reaches the fence of Do's hold through its ctx, to
// pass it to the store it writes to.
func ExampleFenceOf() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	exports, err := uncomplicated.NewSemaphore(client, uncomplicated.Named("exports"), 3)
	if err != nil {
		log.Fatal(err)
	}
	var stored uint64 // the highest fence the store has seen
	save := func(ctx context.Context, report string) error {
		fence, ok := uncomplicated.FenceOf(ctx)
		fmt.Println("saving", report, "with a fence above the stored one:", ok && fence > stored)
		stored = fence
		return nil
	}
	for range 2 {
		if err := exports.Do(ctx, func(ctx context.Context) error { return save(ctx, "export") }); err != nil {
			log.Fatal(err)
		}
	}
	_, ok := uncomplicated.FenceOf(ctx)
	fmt.Println("outside Do:", ok)
	// Output:
	// saving export with a fence above the stored one: true
	// saving export with a fence above the stored one: true
	// outside Do: false
}

// TryLock answers at once: a job that finds its order locked skips it.
func ExampleMutex_TryLock() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	first, _ := uncomplicated.New(client, Order{N: 7})
	second, _ := uncomplicated.New(client, Order{N: 7})
	ok, err := first.TryLock(ctx)
	fmt.Println(ok, err)
	ok, err = second.TryLock(ctx)
	fmt.Println(ok, err)
	// Output:
	// true <nil>
	// false <nil>
}

// A worker that hangs holding a lock with no lease is stale once nobody has
// seen its token change for the timeout; with WithTakeOver the next worker
// replaces it under a higher fence, and the hung worker finds out when it
// tries to unlock.
func Example_takeOver() {
	client, stop := exampleClient(uncomplicated.WithTimeout(100 * time.Millisecond))
	defer stop()
	ctx := context.Background()

	hung, _ := uncomplicated.New(client, Order{N: 42}, uncomplicated.WithLease(0))
	if err := hung.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("hung worker holds a fence:", hung.Fence() > 0)

	patient, _ := uncomplicated.New(client, Order{N: 42}) // the default: WithTakeOver(false)
	err := patient.Lock(ctx)
	fmt.Println("Fail:", errors.Is(err, uncomplicated.ErrStale))

	next, _ := uncomplicated.New(client, Order{N: 42}, uncomplicated.WithTakeOver(true))
	if err := next.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("TakeOver: next worker's fence is higher:", next.Fence() > hung.Fence())

	err = hung.Unlock(ctx)
	fmt.Println("hung worker's Unlock:", err)
	// Output:
	// hung worker holds a fence: true
	// Fail: true
	// TakeOver: next worker's fence is higher: true
	// hung worker's Unlock: uncomplicated: lock lost: lock:uncomplicated_test.Order:42: lock expired or taken over
}

// Many readers or one writer: a report is read by many at once and
// rebuilt by one. Once a writer waits, new readers wait behind it.
func ExampleRWMutex() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	report := Order{N: 7}
	rw, err := uncomplicated.NewRW(client, report)
	if err != nil {
		log.Fatal(err)
	}
	other, _ := uncomplicated.NewRW(client, report) // as another process would

	if err := rw.RLock(ctx); err != nil {
		log.Fatal(err)
	}
	reading, _ := other.TryRLock(ctx)
	writing, _ := other.TryLock(ctx)
	fmt.Println("second reader in:", reading, "writer in:", writing)
	_ = other.RUnlock(ctx)
	_ = rw.RUnlock(ctx)

	err = rw.Do(ctx, func(ctx context.Context) error {
		fmt.Println("rebuilding with a fence:", rw.Fence() > 0)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// second reader in: true writer in: false
	// rebuilding with a fence: true
}

// At most three exports run at once, across every process.
func ExampleSemaphore() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	exports, err := uncomplicated.NewSemaphore(client, uncomplicated.Named("exports"), 3)
	if err != nil {
		log.Fatal(err)
	}
	var permits []*uncomplicated.Permit
	for range 3 {
		p, err := exports.Acquire(ctx)
		if err != nil {
			log.Fatal(err)
		}
		permits = append(permits, p)
	}
	_, ok, _ := exports.TryAcquire(ctx)
	fmt.Println("fourth export may start:", ok)

	_ = permits[0].Release(ctx)
	err = exports.Do(ctx, func(ctx context.Context) error {
		fmt.Println("exporting under", exports.Name())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// fourth export may start: false
	// exporting under lock:exports
}

// LockAll holds several locks at once: a transfer between two accounts
// locks both, and two transfers in opposite directions never deadlock, as
// LockAll takes locks in the order of their names. DoAll does the same
// around a function.
func ExampleLockAll() {
	client, stop := exampleClient()
	defer stop()

	from, err := uncomplicated.New(client, Account{Name: "bob"})
	if err != nil {
		log.Fatal(err)
	}
	to, err := uncomplicated.New(client, Account{Name: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := uncomplicated.LockAll(ctx, from, to); err != nil {
		log.Fatal(err)
	}
	fmt.Println("moving 10 from", from.Name(), "to", to.Name(), "each with its fence:", from.Fence() > 0 && to.Fence() > 0)
	if err := uncomplicated.UnlockAll(ctx, from, to); err != nil {
		log.Fatal(err)
	}
	// Output:
	// moving 10 from lock:uncomplicated_test.Account:bob to lock:uncomplicated_test.Account:alice each with its fence: true
}

// Account is a bank account, locked by its holder's name.
type Account struct{ Name string }

func (a Account) ID() string { return a.Name }

// An Election runs the scheduler on one replica only: each replica
// campaigns, and the one elected leads until it resigns or dies; the
// others wait, and take over at once on a Resign, or after the timeout
// from a leader that froze.
func ExampleElection() {
	client, stop := exampleClient()
	defer stop()

	election, err := client.Election("scheduler")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	err = election.Lead(ctx, "replica-1", func(ctx context.Context) error {
		leader, err := election.Leader(ctx)
		if err != nil {
			return err
		}
		fmt.Println(leader.Value, "leads in", election.Name(), "with a fence:", leader.Fence > 0)
		return nil // run the scheduler until ctx ends: it does when leadership is lost
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = election.Leader(ctx)
	fmt.Println(errors.Is(err, uncomplicated.ErrNoLeader))
	// Output:
	// replica-1 leads in lock:election:scheduler with a fence: true
	// true
}
