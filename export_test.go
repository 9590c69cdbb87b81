package uncomplicated

import (
	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"

	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
)

// SetMaxIdleChannels changes how many idle subscriptions a Client keeps,
// until the returned func restores it.
func SetMaxIdleChannels(n int) (restore func()) {
	old := maxIdleChannels
	maxIdleChannels = n
	return func() { maxIdleChannels = old }
}

// KeySlot is hashslot.Of, Redis Cluster's slot of a key, for the external tests.
var KeySlot = hashslot.Of

// ReleaseSHA names the Mutex's release script in EVALSHA.
var ReleaseSHA = lua.Release.SHA1()

// IsClosed reports whether a channel is closed.
var IsClosed = isClosed

// CutFence is cutFence, for the external tests: the token and fence of a
// holder's value.
var CutFence = cutFence

// AcquireSHA names the Mutex's first attempt's script in EVALSHA.
var AcquireSHA = lua.Acquire.SHA1()
