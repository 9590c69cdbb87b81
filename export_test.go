package uncomplicated

import (
	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// SetMaxIdleChannels changes how many idle subscriptions a Client keeps,
// until the returned func restores it.
var SetMaxIdleChannels = engine.SetMaxIdleChannels

// SetPinAfter changes how old a hold is before its Client keeps a
// listening connection for it, until the returned func restores it.
var SetPinAfter = engine.SetPinAfter

// KeySlot is hashslot.Of, Redis Cluster's slot of a key, for the external tests.
var KeySlot = hashslot.Of

// ReleaseSHA names the Mutex's release script in EVALSHA.
var ReleaseSHA = lua.Release.SHA1()

// IsClosed reports whether a channel is closed.
var IsClosed = engine.IsClosed

// CutFence is the token and fence of a holder's value, for the external tests.
var CutFence = wire.CutFence

// AcquireSHA names the Mutex's first attempt's script in EVALSHA.
var AcquireSHA = lua.Acquire.SHA1()
