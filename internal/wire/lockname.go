package wire

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
)

// Lock names: see package uncomplicated's lockname.go for the rule.

// An Identifier is a domain object with an ID: ID() int64, string,
// uuid.UUID... The ID's fmt %v form names the lock.
type Identifier[K any] interface{ ID() K }

// A LockTyper names the type part of its lock itself, so that the lock
// survives a rename of its Go package or type. Processes built before and
// after the rename still exclude each other. Two Go types with the same
// LockType share their locks, ID for ID. A LockType with a pointer receiver
// names the locks of values too, so T and *T still share them. A LockType
// that returns "" or panics makes the constructors return an error wrapping
// sentinel.ErrInvalidArgument.
type LockTyper interface {
	LockType() string
}

var lockTyperType = reflect.TypeFor[LockTyper]()

// ObjectName names obj's lock under cfg's prefix, as the gem does under
// WithGemNames, and returns the type part of the name ("" for a plain
// name), or returns an error wrapping sentinel.ErrInvalidArgument when obj is nil,
// its ID or LockType method panics, or the ID is nil or prints empty, or
// LockType returns "", or a gem name would hold '{' or '}', or the name
// is one of an election's (LockType "election").
func ObjectName[K any](prefix string, gem bool, obj Identifier[K]) (name, typ string, err error) {
	name, typ, err = LockName(prefix, gem, obj)
	if err == nil && strings.HasPrefix(name, prefix+ElectionPart) {
		return "", "", fmt.Errorf("%w: %s: names under %s%s are the elections' (Client.Election)", sentinel.ErrInvalidArgument, name, prefix, ElectionPart)
	}
	return name, typ, err
}

// ElectionPart follows the prefix in the names of the elections' locks,
// which no other lock may take.
const ElectionPart = ":election:"

// LockName is objectName but for the names of the elections.
func LockName[K any](prefix string, gem bool, obj Identifier[K]) (name, typ string, err error) {
	if p, ok := any(obj).(PlainID); ok {
		if gem {
			name, err = GemName(prefix, string(p))
		} else {
			name, err = PlainName(prefix, string(p))
		}
		return name, "", err
	}
	if typ, err = TypeName(obj, gem); err != nil {
		return "", "", err
	}
	id, err := CallID(obj)
	if err != nil {
		return "", "", err
	}
	if gem {
		name, err = GemName(prefix, typ, id)
		return name, Squeeze(typ), err
	}
	typ = Escape(typ)
	return prefix + ":" + typ + ":" + Escape(id), typ, nil
}

// GemName names a lock as the Ruby gem uncomplicated_mutex does: the prefix
// and the parts joined by ':', nothing escaped, and every run of ':'
// squeezed to one, so that type "Billing::Order" and ID 42 give
// lock:Billing:Order:42. Such names are not injective: "a::b" and "a:b"
// name one lock, as they do in the gem. A part holding '{' or '}' is
// refused, as it would move the name's keys to different Cluster slots
// (see the keys below).
func GemName(prefix string, parts ...string) (string, error) {
	for _, p := range parts {
		if p == "" {
			return "", fmt.Errorf("%w: empty name", sentinel.ErrInvalidArgument)
		}
		if strings.ContainsAny(p, "{}") {
			return "", fmt.Errorf("%w: %q: a gem name cannot hold '{' or '}'", sentinel.ErrInvalidArgument, p)
		}
	}
	return Squeeze(prefix + ":" + strings.Join(parts, ":")), nil
}

// TypeName is the type part of obj's lock name: its LockType, or its Go
// type as reflect prints it ("orders.Order"), or for the gem's names
// without its package ("Order"), a pointer naming the same as its element.
func TypeName(obj any, gem bool) (typ string, err error) {
	t := reflect.TypeOf(obj)
	if t == nil {
		return "", fmt.Errorf("%w: nil object", sentinel.ErrInvalidArgument)
	}
	lt, ok := obj.(LockTyper)
	if !ok && t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(lockTyperType) { // *T's
		p := reflect.New(t)
		p.Elem().Set(reflect.ValueOf(obj))
		lt, ok = p.Interface().(LockTyper)
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
			err = fmt.Errorf("%w: %T.LockType() panicked: %v", sentinel.ErrInvalidArgument, obj, r)
		}
	}()
	if typ = lt.LockType(); typ == "" {
		return "", fmt.Errorf("%w: %T.LockType() is empty", sentinel.ErrInvalidArgument, obj)
	}
	return typ, nil
}

// CallID returns obj.ID() as %v prints it, turning a panic into an error.
// An ID must print the same in every process: a pointer is followed to
// what it points at (unless it has a String or Error method), and an ID
// that prints as an address (a func, chan or unsafe.Pointer) is refused.
func CallID[K any](obj Identifier[K]) (id string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %T.ID() panicked: %v", sentinel.ErrInvalidArgument, obj, r)
		}
	}()
	v := any(obj.ID())
	for {
		if IsNil(v) {
			return "", fmt.Errorf("%w: %T.ID() is nil", sentinel.ErrInvalidArgument, obj)
		}
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Func, reflect.Chan, reflect.UnsafePointer:
			return "", fmt.Errorf("%w: %T.ID() is a %v, which prints as an address", sentinel.ErrInvalidArgument, obj, rv.Kind())
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
		return "", fmt.Errorf("%w: %T.ID() is empty", sentinel.ErrInvalidArgument, obj)
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

// Named is the object whose lock is named by name alone (see
// uncomplicated.Named).
func Named(name string) interface{ ID() string } { return PlainID(name) }

// A PlainID is the object of Named, whose lock is named by its ID alone.
type PlainID string

func (p PlainID) ID() string { return string(p) }

// PlainName names the lock of a plainID.
func PlainName(prefix, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty name", sentinel.ErrInvalidArgument)
	}
	return prefix + ":" + Escape(name), nil
}

// IsNil reports whether v is nil or a nil pointer, map, slice, func, chan
// or interface.
func IsNil(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan,
		reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
