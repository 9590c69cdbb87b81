package engine

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Lock names: see package uncomplicated's lockname.go for the rule.

// An identifier is a domain object with an ID: ID() int64, string,
// uuid.UUID... The ID's fmt %v form names the lock.
type identifier[K any] interface{ ID() K }

// A lockTyper names the type part of its lock itself, so that the lock
// survives a rename of its Go package or type. Processes built before and
// after the rename still exclude each other. Two Go types with the same
// LockType share their locks, ID for ID. A LockType with a pointer receiver
// names the locks of values too, so T and *T still share them. A LockType
// that returns "" or panics makes the constructors return an error wrapping
// ErrInvalidArgument.
type lockTyper interface {
	LockType() string
}

var lockTyperType = reflect.TypeFor[lockTyper]()

// objectName names obj's lock under cfg's prefix, as the gem does under
// WithGemNames, and returns the type part of the name ("" for a plain
// name), or returns an error wrapping ErrInvalidArgument when obj is nil,
// its ID or LockType method panics, or the ID is nil or prints empty, or
// LockType returns "", or a gem name would hold '{' or '}', or the name
// is one of an election's (LockType "election").
func objectName[K any](cfg config, obj identifier[K]) (name, typ string, err error) {
	name, typ, err = lockName(cfg, obj)
	if err == nil && strings.HasPrefix(name, cfg.prefix+electionPart) {
		return "", "", fmt.Errorf("%w: %s: names under %s%s are the elections' (Client.Election)", ErrInvalidArgument, name, cfg.prefix, electionPart)
	}
	return name, typ, err
}

// electionPart follows the prefix in the names of the elections' locks,
// which no other lock may take.
const electionPart = ":election:"

// lockName is objectName but for the names of the elections.
func lockName[K any](cfg config, obj identifier[K]) (name, typ string, err error) {
	if p, ok := any(obj).(plainID); ok {
		if cfg.gemNames {
			name, err = gemName(cfg.prefix, string(p))
		} else {
			name, err = plainName(cfg.prefix, string(p))
		}
		return name, "", err
	}
	if typ, err = lockType(obj, cfg.gemNames); err != nil {
		return "", "", err
	}
	id, err := callID(obj)
	if err != nil {
		return "", "", err
	}
	if cfg.gemNames {
		name, err = gemName(cfg.prefix, typ, id)
		return name, wire.Squeeze(typ), err
	}
	typ = wire.Escape(typ)
	return cfg.prefix + ":" + typ + ":" + wire.Escape(id), typ, nil
}

// gemName names a lock as the Ruby gem uncomplicated_mutex does: the prefix
// and the parts joined by ':', nothing escaped, and every run of ':'
// squeezed to one, so that type "Billing::Order" and ID 42 give
// lock:Billing:Order:42. Such names are not injective: "a::b" and "a:b"
// name one lock, as they do in the gem. A part holding '{' or '}' is
// refused, as it would move the name's keys to different Cluster slots
// (see the keys below).
func gemName(prefix string, parts ...string) (string, error) {
	for _, p := range parts {
		if p == "" {
			return "", fmt.Errorf("%w: empty name", ErrInvalidArgument)
		}
		if strings.ContainsAny(p, "{}") {
			return "", fmt.Errorf("%w: %q: a gem name cannot hold '{' or '}'", ErrInvalidArgument, p)
		}
	}
	return wire.Squeeze(prefix + ":" + strings.Join(parts, ":")), nil
}

// lockType is the type part of obj's lock name: its LockType, or its Go
// type as reflect prints it ("orders.Order"), or for the gem's names
// without its package ("Order"), a pointer naming the same as its element.
func lockType(obj any, gem bool) (typ string, err error) {
	t := reflect.TypeOf(obj)
	if t == nil {
		return "", fmt.Errorf("%w: nil object", ErrInvalidArgument)
	}
	lt, ok := obj.(lockTyper)
	if !ok && t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(lockTyperType) { // *T's
		p := reflect.New(t)
		p.Elem().Set(reflect.ValueOf(obj))
		lt, ok = p.Interface().(lockTyper)
	}
	if !ok {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if gem && t.Name() != "" {
			return t.Name(), nil
		}
		return t.String(), nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %T.LockType() panicked: %v", ErrInvalidArgument, obj, r)
		}
	}()
	if typ = lt.LockType(); typ == "" {
		return "", fmt.Errorf("%w: %T.LockType() is empty", ErrInvalidArgument, obj)
	}
	return typ, nil
}

// callID returns obj.ID() as %v prints it, turning a panic into an error.
// An ID must print the same in every process: a pointer is followed to
// what it points at (unless it has a String or Error method), and an ID
// that prints as an address (a func, chan or unsafe.Pointer) is refused.
func callID[K any](obj identifier[K]) (id string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %T.ID() panicked: %v", ErrInvalidArgument, obj, r)
		}
	}()
	v := any(obj.ID())
	for {
		if link.IsNil(v) {
			return "", fmt.Errorf("%w: %T.ID() is nil", ErrInvalidArgument, obj)
		}
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Func, reflect.Chan, reflect.UnsafePointer:
			return "", fmt.Errorf("%w: %T.ID() is a %v, which prints as an address", ErrInvalidArgument, obj, rv.Kind())
		case reflect.Pointer:
			if !printsItself(v) {
				v = rv.Elem().Interface()
				continue
			}
		}
		break
	}
	id = fmt.Sprintf("%v", v)
	if id == "" {
		return "", fmt.Errorf("%w: %T.ID() is empty", ErrInvalidArgument, obj)
	}
	return id, nil
}

func printsItself(v any) bool {
	switch v.(type) {
	case fmt.Stringer, error, fmt.Formatter:
		return true
	}
	return false
}

// Named: see uncomplicated.Named.
func Named(name string) interface{ ID() string } { return plainID(name) }

// A plainID is the object of Named, whose lock is named by its ID alone.
type plainID string

func (p plainID) ID() string { return string(p) }

// plainName names the lock of a plainID.
func plainName(prefix, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty name", ErrInvalidArgument)
	}
	return prefix + ":" + wire.Escape(name), nil
}
