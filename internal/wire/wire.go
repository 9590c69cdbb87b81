// Package wire holds what the library writes to Redis and reads back, as
// formats: key and channel names, tokens and holders' values, the
// arguments of the acquiring scripts, queue entries and wake-up messages,
// and the parsing of replies. It does no I/O and starts no goroutine; the
// Lua in internal/lua reads and writes the same formats, and the tests
// here hold both sides to them.
package wire
