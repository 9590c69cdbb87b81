package wire

import "strings"

// Squeeze replaces every run of ':' in s with one.
func Squeeze(s string) string {
	if !strings.Contains(s, "::") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && i > 0 && s[i-1] == ':' {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// QueueKey names the list of lock name's waiters.
func QueueKey(prefix, name string) string {
	return prefix + ":queue:{" + name + "}"
}

// EntriesKey names the hash of the entries of lock name's queue (see
// internal/lua/queue_keep.lua).
func EntriesKey(prefix, name string) string {
	return prefix + ":entries:{" + name + "}"
}

// SharedKey names one of the keys of lock name that an RWMutex or a
// Semaphore keeps, such as lock:readers:{lock:orders.Order:42}.
func SharedKey(prefix, part, name string) string {
	return prefix + ":" + part + ":{" + name + "}"
}

// WakeChannel names the channel on which the Client with id hears that
// lock name was handed to one of its waiters.
func WakeChannel(prefix, name, id string) string {
	return prefix + ":wake:{" + name + "}:" + id
}

// Escape keeps ASCII letters, digits, '-', '_' and '.' and writes every
// other byte as %XX (upper-case hex).
func Escape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !simple(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if simple(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func simple(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.'
}

// MutexKeys, RWKeys and SemaphoreKeys name the keys of a lock of each kind, in
// the order its scripts take them.
func MutexKeys(prefix, name string) []string {
	return []string{name, QueueKey(prefix, name), EntriesKey(prefix, name)}
}

// RWKeys names an RWMutex's keys (see MutexKeys).
func RWKeys(prefix, name string) []string {
	return []string{
		SharedKey(prefix, "writer", name), SharedKey(prefix, "readers", name),
		SharedKey(prefix, "writers", name), SharedKey(prefix, "rwqueue", name),
		SharedKey(prefix, "rwentries", name),
	}
}

// SemaphoreKeys names a Semaphore's keys (see MutexKeys).
func SemaphoreKeys(prefix, name string) []string {
	return []string{
		SharedKey(prefix, "permits", name), SharedKey(prefix, "fences", name),
		SharedKey(prefix, "semqueue", name), SharedKey(prefix, "sementries", name),
	}
}
