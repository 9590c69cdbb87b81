package driver_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// NotSent marks an error without changing what it says or wraps.
func TestNotSent(t *testing.T) {
	err := driver.NotSent(io.EOF)
	if !errors.Is(err, driver.ErrNotSent) || !errors.Is(err, io.EOF) {
		t.Errorf("NotSent(EOF) = %v; want it to match ErrNotSent and io.EOF", err)
	}
	if err.Error() != io.EOF.Error() {
		t.Errorf("NotSent(EOF).Error() = %q; want %q", err.Error(), io.EOF.Error())
	}
	if errors.Is(io.EOF, driver.ErrNotSent) {
		t.Error("io.EOF matches ErrNotSent unmarked")
	}
	if driver.NotSent(nil) != nil {
		t.Error("NotSent(nil) != nil")
	}
}

// A Script carries its source, the source's SHA-1 for EVALSHA, and its
// number of KEYS.
func TestNewScript(t *testing.T) {
	src := "return KEYS[1]"
	s := driver.NewScript(1, src)
	sum := sha1.Sum([]byte(src))
	if s.Source() != src || s.SHA1() != hex.EncodeToString(sum[:]) || s.Keys() != 1 {
		t.Errorf("NewScript(1, %q) = %q, %q, %d; want the source, its SHA-1, 1", src, s.Source(), s.SHA1(), s.Keys())
	}
}

// Waiting ends with the caller that WithCaller names, or with the call's
// own ctx, and keeps the call's deadline; without a caller it is the
// call's ctx.
func TestWaiting(t *testing.T) {
	call, cancelCall := context.WithTimeout(context.Background(), time.Hour)
	defer cancelCall()
	if w, stop := driver.Waiting(call); w != call {
		t.Errorf("Waiting without a caller = %v; want the call's ctx", w)
	} else {
		stop()
	}
	caller, leave := context.WithCancel(context.Background())
	w, stop := driver.Waiting(driver.WithCaller(call, caller))
	defer stop()
	if dl, _ := w.Deadline(); !dl.Equal(func() time.Time { d, _ := call.Deadline(); return d }()) {
		t.Errorf("Waiting's deadline = %v; want the call's", dl)
	}
	if w.Err() != nil {
		t.Fatalf("Waiting ended before its caller: %v", w.Err())
	}
	leave()
	select {
	case <-w.Done():
	case <-time.After(time.Second):
		t.Fatal("Waiting still open a second after its caller left")
	}
	if !errors.Is(w.Err(), context.Canceled) || call.Err() != nil {
		t.Errorf("Waiting's error = %v, the call's ctx %v; want the caller's, and the call's alive", w.Err(), call.Err())
	}
}

// A Waiting whose Done nobody asks for watches nothing: a driver that gets
// an idle connection at once costs no goroutine. Asked for after its
// caller left, Done is already closed, and Err agrees; asked for before,
// it closes when the call's own ctx ends.
func TestWaiting_lazy(t *testing.T) {
	call := &chanCtx{Context: context.Background(), done: make(chan struct{})}
	caller, leave := context.WithCancel(context.Background())
	defer leave()
	before := goroutinesCreated()
	for range 100 {
		w, stop := driver.Waiting(driver.WithCaller(call, caller))
		if w.Err() != nil {
			t.Fatalf("Waiting ended with both ctxs alive: %v", w.Err())
		}
		stop()
	}
	if n := goroutinesCreated() - before; n > 10 {
		t.Errorf("100 Waitings nobody waited on started %d goroutines; want none", n)
	}

	w, stop := driver.Waiting(driver.WithCaller(call, caller))
	defer stop()
	leave()
	if !errors.Is(w.Err(), context.Canceled) {
		t.Errorf("Err after the caller left = %v; want context.Canceled", w.Err())
	}
	select {
	case <-w.Done():
	default:
		t.Error("Done, asked for after the caller left, is open")
	}

	caller2, leave2 := context.WithCancel(context.Background())
	defer leave2()
	w2, stop2 := driver.Waiting(driver.WithCaller(call, caller2))
	defer stop2()
	done := w2.Done()
	call.end()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Waiting still open a second after the call's ctx ended")
	}
	if !errors.Is(w2.Err(), context.DeadlineExceeded) {
		t.Errorf("Err after the call's ctx ended = %v; want the call's, context.DeadlineExceeded", w2.Err())
	}
}

// chanCtx is a ctx of a type package context does not know, as the
// Client's bounds are, ended by end.
type chanCtx struct {
	context.Context
	done chan struct{}
}

func (c *chanCtx) Done() <-chan struct{} { return c.done }
func (c *chanCtx) end()                  { close(c.done) }
func (c *chanCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// goroutinesCreated is how many goroutines the process has started.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A Waiting ends with context.Canceled when its caller leaves, whatever
// ended the caller (a driver tells a wait its caller left by it), and its
// Done is closed at once when asked for after that; asked for after stop,
// it watches nothing.
func TestWaiting_endsAndStops(t *testing.T) {
	call := &chanCtx{Context: context.Background(), done: make(chan struct{})}
	caller, leave := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer leave()
	w, stop := driver.Waiting(driver.WithCaller(call, caller))
	select {
	case <-w.Done():
	default:
		t.Error("Done of a Waiting whose caller had left: open")
	}
	if !errors.Is(w.Err(), context.Canceled) {
		t.Errorf("Err after the caller's deadline = %v; want context.Canceled", w.Err())
	}
	stop()

	alive, leave2 := context.WithCancel(context.Background())
	defer leave2()
	w2, stop2 := driver.Waiting(driver.WithCaller(call, alive))
	stop2()
	before := goroutinesCreated()
	done := w2.Done()
	call.end()
	leave2()
	time.Sleep(10 * time.Millisecond)
	if n := goroutinesCreated() - before; n > 0 {
		t.Errorf("Done asked after stop started %d goroutines; want none", n)
	}
	select {
	case <-done:
		t.Error("Done asked after stop closed: it watches nothing")
	default:
	}
}
