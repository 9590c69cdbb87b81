package lua

import (
	"embed"
	"strings"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// Every Lua script of the package is a file in lua/: its documentation in
// comment lines, a blank line, then its code, in which a line
// "--#include <name>" stands for the code of lua/<name>.lua, a piece that
// several scripts share (the clock, the fence, the queue...), so that each
// piece is written once. Redis runs the code as one script, pieces
// included in place.

// A lease argument is in milliseconds, "0" meaning no expiry. Times in
// sorted-set scores are milliseconds of Redis's own clock (TIME), so that
// the clocks of the Clients never matter.
//
// Fences. A fence is Redis's own clock in microseconds when it is granted,
// or one above the fences the lock's holders have, or the script granted
// before, if the clock is not past them: so it is unique and rises with
// every grant of the lock as long as Redis's clock does not go back, even
// when Redis has lost the lock's keys. The holder of a Mutex, or of an
// RWMutex as its writer, is stored as "<token> <fence>" (see wire.Fenced and
// wire.CutFence), so that its fence lives and dies with it, a Mutex's with
// a mark at its end while a waiter may be queued (see queued.lua); a Semaphore keeps
// the fence of each holder beside it, and the highest in a counter that
// lives as long as its holders, in the same hash.
//
// The holders of an RWMutex (its readers) and of a Semaphore are members
// of a sorted set whose score is when their lease ends, or +inf without a
// lease; the scripts drop the members whose lease has ended, so that a
// holder that died frees its share by itself and no count can go wrong.
// Such a set, and what a Semaphore keeps beside it, expires when its
// latest member's lease or expiry ends (see expireWith); the waiting
// writers' set, when the latest expiry written to it ends (see rw_lock.lua).
//
// Every lock has a queue of waiters: a list of their tokens, oldest first.
// Beside it, a hash holds each queued waiter's entry under its token,
// "<deadline> <kind> <claim> <expiry> <attempt> <channel>" (see
// wire.QueueEntry for what follows the deadline), where kind is "x" for a
// waiter of the lock itself (a Mutex's, an RWMutex's writer), "s" for an
// RWMutex's reader and, for a Semaphore, its number of permits, and
// attempt numbers the attempt that wrote it. The deadline, in Redis's
// milliseconds, ends the waiter's expiry (a few ticks), which each of its
// attempts restarts: a waiter that died soon stops counting. The queue and
// the hash outlive each entry, by one expiry at most. Every key a script
// touches is thus one of its KEYS, as Redis asks of scripts (and Redis
// Cluster proxies and Dragonfly enforce). A waiter joins the
// queue once its Client listens on channel. A release hands the lock to
// the oldest waiter whose entry is still alive: it makes that waiter a
// holder for its claim (a short lease, which the waiter restarts as its
// whole lease: see the claims in internal/engine/hold.go), under a new fence, and publishes "<token>
// <fence> <attempt>" on its channel (see wire.ParseWakeUp), with SPUBLISH
// (sharded pub/sub), which on Redis Cluster reaches the subscribers of the
// lock's slot. It offers the lock only to a waiter whose Client listens on
// this very node (PUBSUB SHARDNUMSUB): a waiter whose Client lost its
// connection is passed over, and so is one subscribed on a replica, which
// hears what the master publishes and would take a message for a grant. A
// server without sharded pub/sub (miniredis) gets PUBSUB NUMSUB and
// PUBLISH, and its Clients SUBSCRIBE.
//
// A key that no script writes any more, such as the fence counter that
// earlier versions kept for each lock, is not among any script's KEYS:
// it stays as it is, for SCAN to find.

//go:embed *.lua
var luaFiles embed.FS

// includeLine begins a line that includes a piece.
const includeLine = "--#include "

// Source returns the code of lua/<name>.lua with its pieces included.
// A file that is missing or has no documentation panics at the package's
// initialization: a defect of the package, which any test finds.
func Source(name string) string {
	data, err := luaFiles.ReadFile(name + ".lua")
	if err != nil {
		panic("uncomplicated: " + err.Error())
	}
	_, body, ok := strings.Cut(string(data), "\n\n")
	if !ok {
		panic("uncomplicated: " + name + ".lua has no blank line after its documentation")
	}
	var src, run strings.Builder
	flush := func() { // a run of the file's own lines, as Go's scripts had them
		if run.Len() > 0 {
			src.WriteString("\n" + run.String())
			run.Reset()
		}
	}
	for line := range strings.Lines(body) {
		if piece, ok := strings.CutPrefix(line, includeLine); ok {
			flush()
			src.WriteString(Source(strings.TrimSpace(piece)))
			continue
		}
		run.WriteString(line)
	}
	flush()
	return src.String()
}

// UndeclaredKeys names the list where check_keys.lua, when CheckingKeys,
// pushes each key a script touched that was not among its KEYS.
const UndeclaredKeys = "uncomplicated:undeclared-keys"

// newScript is the Script of lua/<name>.lua, which takes keys KEYS; after
// check_keys.lua when CheckingKeys.
func newScript(keys int, name string) *driver.Script {
	src := Source(name)
	if CheckingKeys {
		src = Source("check_keys") + src
	}
	return driver.NewScript(keys, src)
}
