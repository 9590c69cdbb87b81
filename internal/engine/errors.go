// Package engine is the engine of package uncomplicated: what its locks
// do, below the names users read. Package uncomplicated re-exports what
// users see of it.
package engine

import "github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"

// The sentinel errors, as package sentinel defines them.
var (
	ErrNotObtained     = sentinel.ErrNotObtained
	ErrStale           = sentinel.ErrStale
	ErrNotHeld         = sentinel.ErrNotHeld
	ErrLost            = sentinel.ErrLost
	ErrInvalidArgument = sentinel.ErrInvalidArgument
	ErrClosed          = sentinel.ErrClosed
	ErrNotReplicated   = sentinel.ErrNotReplicated
	ErrNoLeader        = sentinel.ErrNoLeader
)

// An Error is the error of an operation on a lock: the method, the lock's
// name and the cause; see uncomplicated.Error.
type Error struct {
	Op   string // the method that failed: "Lock", "Unlock", "Refresh", "Acquire"...
	Name string // the lock's full name, as Mutex.Name returns it
	Err  error  // the cause
	msg  string
	is   []error // the sentinels it matches besides Err
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the cause and the sentinels the error matches.
func (e *Error) Unwrap() []error { return append([]error{e.Err}, e.is...) }

// NewError is the error msg of the lock named name, for cause, that also
// matches is. Without a cause, the first of is is the cause.
func NewError(name, msg string, cause error, is ...error) *Error {
	if cause == nil && len(is) > 0 {
		cause, is = is[0], is[1:]
	}
	return &Error{Name: name, Err: cause, msg: msg, is: is}
}

// OpError names op in the Errors of the lock named name within err that
// name none yet, and returns err.
func OpError(op, name string, err error) error {
	switch e := err.(type) {
	case nil:
	case *Error:
		if e.Op == "" && e.Name == name {
			e.Op = op
		}
		OpError(op, name, e.Err)
	case interface{ Unwrap() []error }:
		for _, err := range e.Unwrap() {
			OpError(op, name, err)
		}
	case interface{ Unwrap() error }:
		OpError(op, name, e.Unwrap())
	}
	return err
}
