package uncomplicatedtest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

type Order struct{ N int64 }

func (o Order) ID() int64 { return o.N }

// A user's test of "a second worker takes over from a hung one after the
// timeout": a minute passes on the mock clock in milliseconds. In a real
// test, t is the test's *testing.T.
func Example() {
	t := &standIn{}
	defer t.finish()

	env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(time.Minute),
		uncomplicated.WithTakeOver(true))
	ctx := context.Background()

	hung, _ := uncomplicated.New(env.Client, Order{N: 7}) // lease: twice the timeout
	if err := hung.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}

	second, _ := uncomplicated.New(env.Client, Order{N: 7})
	done := make(chan error, 1)
	go func() { done <- second.Lock(ctx) }()
	env.AwaitWaiters(1)

	env.Advance(time.Minute - time.Second)
	fmt.Println("waiting after 59s:", env.Waiters())
	env.Advance(time.Second)
	fmt.Println("Lock:", <-done, "fence above the hung one's:", second.Fence() > hung.Fence())
	// Output:
	// waiting after 59s: 1
	// Lock: <nil> fence above the hung one's: true
}

// standIn is the *testing.T of Example, which has none: just the methods
// that New and Env call.
type standIn struct {
	testing.TB // nil; the methods below are all that is used
	cleanups   []func()
}

func (*standIn) Helper()                           {}
func (t *standIn) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (*standIn) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (t *standIn) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
