package uncomplicated_test

import (
	"context"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// mustNew returns the Mutex of obj or fails the test.
func mustNew(t testing.TB, c *uncomplicated.Client, obj Order, opts ...uncomplicated.Option) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(c, obj, opts...)
	if err != nil {
		t.Fatalf("New(%v) = %v", obj, err)
	}
	return m
}

// mustLock locks m, which must be free, or fails the test within ten
// seconds.
func mustLock(t testing.TB, m *uncomplicated.Mutex) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock(%s) = %v", m.Name(), err)
	}
}

// lockAsync runs m.Lock(ctx) in a goroutine and delivers its error.
func lockAsync(ctx context.Context, m *uncomplicated.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	return done
}

// Code is a domain object with a string ID.
type Code string

func (c Code) ID() string { return string(c) }

// nilID has an ID that is a nil pointer.
type nilID struct{}

func (nilID) ID() *int { return nil }

// panicky has an ID method that panics.
type panicky struct{}

func (panicky) ID() int { panic("no id") }

// fenceKeyOf is the key of the fence counter of m, a lock under prefix.
func fenceKeyOf(prefix string, m *uncomplicated.Mutex) string {
	return prefix + ":fence:{" + m.Name() + "}"
}

// funcID has an ID that prints as an address.
type funcID struct{}

func (funcID) ID() func() { return func() {} }
