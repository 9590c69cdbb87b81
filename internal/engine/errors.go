// Package engine is what the locks of package uncomplicated do, below the
// names users read: holds, the wait loop, patience, claims, the
// primitives, elections, LockAll and the restart watch. It reaches Redis
// through package link, writes and reads it in package wire's formats,
// and takes its options from package config.
package engine

// Errors makes the errors of operations on locks, of the type users match
// with errors.As: package uncomplicated passes its own to NewClientWith. A
// Client made by NewClient makes errors of the engine's own type.
type Errors interface {
	// New returns the error msg of the lock named name, for cause, that
	// also matches is.
	New(name, msg string, cause error, is ...error) error
	// SetOp names op in err if err is one of New's, of the lock named
	// name, that names no op yet; any other err it leaves alone.
	SetOp(err error, op, name string)
}

// lockErrors are the Errors of a Client made by NewClient: *lockError.
type lockErrors struct{}

var _ Errors = lockErrors{}

// A lockError is the error of an operation on a lock: the method, the
// lock's name and the cause, as uncomplicated.Error has them.
type lockError struct {
	op   string // the method that failed: "Lock", "Unlock", "Refresh", "Acquire"...
	name string // the lock's full name, as Mutex.Name returns it
	err  error  // the cause
	msg  string
	is   []error // the sentinels it matches besides err
}

func (e *lockError) Error() string { return e.msg }

// Unwrap returns the cause and the sentinels the error matches.
func (e *lockError) Unwrap() []error { return append([]error{e.err}, e.is...) }

// New: see Errors.New.
func (lockErrors) New(name, msg string, cause error, is ...error) error {
	return &lockError{name: name, err: cause, msg: msg, is: is}
}

// SetOp: see Errors.SetOp.
func (lockErrors) SetOp(err error, op, name string) {
	if e, ok := err.(*lockError); ok && e.op == "" && e.name == name {
		e.op = op
	}
}

// nameOp names op, by errs, in err and every error it wraps.
func nameOp(errs Errors, op, name string, err error) {
	if err == nil {
		return
	}
	errs.SetOp(err, op, name)
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, err := range e.Unwrap() {
			nameOp(errs, op, name, err)
		}
	case interface{ Unwrap() error }:
		nameOp(errs, op, name, e.Unwrap())
	}
}
