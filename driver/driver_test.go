package driver_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
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
	if !errors.Is(context.Cause(w), context.Canceled) || call.Err() != nil {
		t.Errorf("Waiting's cause = %v, the call's ctx %v; want the caller's, and the call's alive", context.Cause(w), call.Err())
	}
}
