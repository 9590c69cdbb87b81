package uncomplicatedtest_test

// This file is a test as you would write it for your own code: copy it,
// and put your type and your worker in place of Order and Lock.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// A second worker takes the lock over from a hung one once the hung one has
// kept its token for the timeout, a minute that passes on the mock clock in
// milliseconds; under the Fail policy it gets ErrStale instead.
func TestSecondWorkerTakesOverFromHungOne(t *testing.T) {
	for _, tc := range []struct {
		policy bool
		want   error
	}{
		{true, nil},
		{false, uncomplicated.ErrStale},
	} {
		env := uncomplicatedtest.New(t, uncomplicated.WithTimeout(time.Minute),
			uncomplicated.WithTakeOver(tc.policy))
		ctx := context.Background()
		hung, err := uncomplicated.New(env.Client, Order{N: 7})
		if err != nil {
			t.Fatal(err)
		}
		if err := hung.Lock(ctx); err != nil {
			t.Fatalf("Lock() = %v", err)
		}

		second, err := uncomplicated.New(env.Client, Order{N: 7})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- second.Lock(ctx) }()
		env.AwaitWaiters(1)

		env.Advance(time.Minute - time.Second)
		if n := env.Waiters(); n != 1 {
			t.Fatalf("after 59s, %d waiters; want the second still waiting", n)
		}
		env.Advance(time.Second)
		if err := <-done; !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Fatalf("policy %v: second Lock() = %v; want %v", tc.policy, err, tc.want)
		}
		if tc.want == nil && second.Fence() <= hung.Fence() {
			t.Errorf("second's fence = %d; want above the hung holder's, %d", second.Fence(), hung.Fence())
		}
	}
}
