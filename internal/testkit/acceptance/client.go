package acceptance

import (
	"context"
	"errors"
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/orders"
)

// After Close, Lock reports ErrClosed, and Unlock still releases.
func clientClosed(t *testing.T, d Deployment) {
	r := newRig(t, d)
	c := r.client()
	m := mustNew(t, c, orders.Order{N: 1})
	mustLock(t, m)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(context.Background()); !errors.Is(err, uncomplicated.ErrClosed) || !errors.Is(err, uncomplicated.ErrNotObtained) {
		t.Errorf("Lock() after Close = %v; want ErrClosed and ErrNotObtained", err)
	}
	if err := m.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrClosed) || errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Unlock() after Close = %v; want ErrClosed alone", err)
	}
	if n := r.number(m.Name(), "EXISTS", m.Name()); n != 0 {
		t.Errorf("EXISTS after Unlock = %d; want 0: Unlock releases after Close too", n)
	}
}
