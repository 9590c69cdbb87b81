// Package sentinel holds the errors that package uncomplicated documents
// and its callers match with errors.Is, at the ground of the library so
// that every layer can return them.
package sentinel

import "errors"

// The sentinel errors; package uncomplicated documents each under the
// same name.
var (
	ErrNotObtained     = errors.New("uncomplicated: lock not obtained")
	ErrStale           = errors.New("uncomplicated: stale lock")
	ErrNotHeld         = errors.New("uncomplicated: lock not held")
	ErrLost            = errors.New("uncomplicated: lock lost")
	ErrInvalidArgument = errors.New("uncomplicated: invalid argument")
	ErrClosed          = errors.New("uncomplicated: client closed")
	ErrNotReplicated   = errors.New("uncomplicated: acquisition not replicated")
	ErrNoLeader        = errors.New("uncomplicated: no leader")
)
