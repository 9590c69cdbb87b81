package uncomplicated

import "github.com/uncomplicated-mutex/uncomplicated/internal/wire"

// Lock names.
//
// An object's lock is named prefix:Type:ID, where Type is what obj's
// LockType method returns, if it has one, or else the object's type as
// reflect prints it ("orders.Order"; a pointer names the same as its
// element), and ID is fmt's %v of obj.ID(). A plain name gives prefix:name.
//
// Type, ID and plain name are escaped: ASCII letters, digits, '-', '_' and
// '.' stand for themselves and every other byte becomes %XX. The escape is
// injective and never writes ':', '{' or '}', so distinct IDs of one type
// never share a name, and a name holds no Redis Cluster hash tag. The lock's
// other keys start with the prefix and end with the whole name in braces
// ("lock:queue:{lock:orders.Order:42}"): Redis Cluster hashes them exactly
// as it hashes the name itself, so every key of one lock lives in one slot,
// and no lock name can be one of them.

// The engine names the locks by this rule (internal/wire/lockname.go).

// Named returns an object whose lock has a plain name: New(client,
// Named("nightly-report")) makes the Mutex of lock:nightly-report, and
// NewRW and NewSemaphore take it alike. An empty name makes them return an
// error wrapping ErrInvalidArgument.
func Named(name string) interface{ ID() string } { return wire.Named(name) }
