package engine

import (
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
)

// What the tests of package uncomplicated, which see the engine from
// outside, need of it.

// SetMaxIdleChannels changes how many idle subscriptions a Client keeps,
// until the returned func restores it.
func SetMaxIdleChannels(n int) (restore func()) {
	old := link.MaxIdleChannels.Swap(int64(n))
	return func() { link.MaxIdleChannels.Store(old) }
}

// SetPinAfter changes how old a hold is before its Client keeps a
// listening connection for it (see pinAfter), until the returned func
// restores it: the tests that count subscriptions set it long.
func SetPinAfter(d time.Duration) (restore func()) {
	old := pinAfter.Swap(int64(d))
	return func() { pinAfter.Store(old) }
}

// IsClosed reports whether ch is closed.
func IsClosed(ch <-chan struct{}) bool { return isClosed(ch) }
