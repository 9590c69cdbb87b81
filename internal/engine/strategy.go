package engine

import (
	"strconv"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/inspection"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// A primitive's strategy, gathered in one place: the kind of its holds
// (holdKind), its spec (what its acquisitions send Redis and how its
// waiters queue and judge their blockers), the form of its attempts' own
// ARGV (wire.ArgForm) and its keys. The wait loop takes a spec; the takers
// (exclusive, reader, Semaphore) hold theirs.

// A holdKind is what differs between the kinds of hold.
type holdKind struct {
	what    string         // "lock", "write lock", "read lock" or "permit", for errors and logs
	refresh *driver.Script // ARGV: lease, new token, tokens...
	release *driver.Script // ARGV: entry or "", tokens...; replies as wire.ParseRelease reads
	// quickRelease, if not nil, releases a hold that took the lock free
	// on its first key alone (see lua.QuickRelease); ARGV: tokens...
	quickRelease *driver.Script
	// refreshKeys is how many of the lock's keys refresh takes, from the
	// first; release takes them all.
	refreshKeys int
	// set is the index among the keys of the set of holders; -1 when the
	// first key holds the holder's token.
	set    int
	fenced bool // its holds have fences; a reader's do not
}

var (
	mutexKind  = &holdKind{what: "lock", refresh: lua.Refresh, release: lua.Release, quickRelease: lua.QuickRelease, refreshKeys: 1, set: -1, fenced: true}
	writerKind = &holdKind{what: "write lock", refresh: lua.Refresh, release: lua.RWUnlock, refreshKeys: 1, set: -1, fenced: true}
	readerKind = &holdKind{what: "read lock", refresh: lua.RWRRefresh, release: lua.RWRUnlock, refreshKeys: 2, set: 1}
	permitKind = &holdKind{what: "permit", refresh: lua.SemRefresh, release: lua.SemRelease, refreshKeys: 2, set: 0, fenced: true}
)

// A spec is what differs between the locks' acquisitions: the kind of
// hold, the lock's keys and channel, and the scripts of an attempt and a
// take-over, with the arguments that follow the five of an attempt (see
// wire.AttemptArgs).
type spec struct {
	primitive string // the primitive, for an Observer
	kind      *holdKind
	keys      []string
	channel   string         // where this Client hears of hand-offs to its waiters
	acquire   *driver.Script // one attempt
	takeOver  *driver.Script // a take-over of stale blockers
	args      wire.ArgForm   // the form of its own arguments (see wire.AttemptArgs)
	permits   int            // a Semaphore's
	// writer and holder are the kinds of hold that block it: the writer
	// (or a Mutex's holder) and the others (readers, permits); nil when
	// none can.
	writer, holder *holdKind
	entry          string // the kind of the waiter's queue entry: wire.EntryExclusive, wire.EntryShared or permits
	each           bool   // each holder has its own patience (see patience)
	who            string // what a stale error blames: "one holder token", "the same holders"
}

// mutexSpec is the spec of the Mutex name under prefix, whose Client has
// id.
func mutexSpec(prefix, name, id string) *spec {
	return &spec{
		primitive: inspection.KindMutex, kind: mutexKind,
		keys: wire.MutexKeys(prefix, name), channel: wire.WakeChannel(prefix, name, id),
		acquire: lua.Acquire, takeOver: lua.TakeOver, args: wire.MutexArgs,
		writer: mutexKind, entry: wire.EntryExclusive, who: "one holder token",
	}
}

// rwSpecs are the specs of the RWMutex name's writer and readers.
func rwSpecs(prefix, name, id string) (writer, reader *spec) {
	keys, channel := wire.RWKeys(prefix, name), wire.WakeChannel(prefix, name, id)
	writer = &spec{
		primitive: inspection.KindRWMutex, kind: writerKind, keys: keys, channel: channel,
		acquire: lua.RWLock, takeOver: lua.RWLock, args: wire.WriterArgs,
		writer: writerKind, holder: readerKind, entry: wire.EntryExclusive, who: "the same holders",
	}
	reader = &spec{
		primitive: inspection.KindRWMutex, kind: readerKind, keys: keys, channel: channel,
		acquire: lua.RWRLock, takeOver: lua.RWRLock, args: wire.ReaderArgs,
		writer: writerKind, holder: readerKind, entry: wire.EntryShared, who: "the same holders",
	}
	return writer, reader
}

// permitSpec is the spec of the Semaphore name of permits permits.
func permitSpec(prefix, name, id string, permits int) *spec {
	return &spec{
		primitive: inspection.KindSemaphore, kind: permitKind,
		keys: wire.SemaphoreKeys(prefix, name), channel: wire.WakeChannel(prefix, name, id),
		acquire: lua.SemAcquire, takeOver: lua.SemAcquire, args: wire.PermitArgs, permits: permits,
		holder: permitKind, entry: strconv.Itoa(permits), each: true, who: "the same holders",
	}
}
