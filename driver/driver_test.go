package driver_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"testing"

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
