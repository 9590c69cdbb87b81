package wire

// The queue of waiters, for the acquiring and releasing scripts (see
// internal/lua/queue_wait.lua). An acquiring script's ARGV are, first, the waiter's token, its
// lease, its entry (see QueueEntry), what to do with the entry (op), and
// its expiry in ms, "0" for an attempt that does not wait (TryLock); the
// attempt of a Mutex, an RWMutex's writer or a Semaphore with no op and no
// take-over passes a lean form instead (see AttemptArgs.Argv).
//
// op: join the queue once the subscription is confirmed ("q"), rejoin if
// a release passed the waiter over ("r": its key is gone), or stay queued
// without rejoining ("x": in the queue but not listening), or nothing
// (""). A blocked attempt restarts the waiter's key, writing its entry,
// whose attempt number tells the waiter whether a hand-off came after it
// (see the engine's waiter.handedOver); a successful one takes the waiter out of the
// queue.
//
// A release takes ARGV[1], then the tokens of the hold. ARGV[1] is "" for
// a holder's release; a clean-up of waiters that gave up passes "q"
// (OpLeave, see the engine's cleanup.go) and their tokens, so that each leaves the
// queue and stops counting as waiting (a waiting writer holds readers
// back), and releases what a hand-off may have just given it. The scripts
// still take "-", which earlier versions passed for a waiter not queued.

// AttemptArgs are the ARGV of an acquiring script, as internal/lua/queue_wait.lua reads them:
// the five of an attempt, then the primitive's own, which say what a
// take-over evicts (see the scripts of each primitive); or the lean form
// (see Argv).
type AttemptArgs struct {
	Token  string
	Lease  int64  // ms; 0: none
	Entry  string // the waiter's queue entry; "" before it may queue
	Op     string // what to do with the entry: OpJoin, OpRejoin, OpStay or ""
	Expiry int64  // the entry's, in ms; 0: the attempt does not wait
	Form   ArgForm
	// Stale are the Stale blockers to take over from; nil for an attempt
	// that takes over nothing.
	Stale   []string
	Permits int // a Semaphore's
}

// Argv returns a's ARGV, in the order the scripts read them. An attempt
// of a Mutex, an RWMutex's writer or a Semaphore with no op and no
// take-over (TryLock's, the first of a Lock and those before its waiter
// may queue) gets the lean form: its token and lease, then what its script
// still reads, a writer's expiry (a blocked writer counts among the
// waiting writers for it) or a Semaphore's permits. Redis copies every
// argument into Lua, and the scripts read the others only for an op or a
// take-over.
func (a AttemptArgs) Argv() []any {
	if a.Op == "" && a.Stale == nil {
		switch a.Form {
		case MutexArgs:
			return []any{a.Token, a.Lease}
		case WriterArgs:
			return []any{a.Token, a.Lease, a.Expiry}
		case PermitArgs:
			return []any{a.Token, a.Lease, a.Permits}
		}
	}
	args := []any{a.Token, a.Lease, a.Entry, a.Op, a.Expiry}
	var first string // the first stale blocker, a writer's token without its mark
	if a.Stale != nil {
		first, _ = CutWriter(a.Stale[0])
	}
	switch a.Form {
	case MutexArgs:
		if a.Stale != nil {
			args = append(args, first)
		}
	case WriterArgs:
		if a.Stale == nil {
			return append(args, "", "")
		}
		writer, readers := "", []any(nil)
		for _, s := range a.Stale {
			if w, ok := CutWriter(s); ok {
				writer = w
			} else {
				readers = append(readers, s)
			}
		}
		args = append(append(args, takeOverMark, writer), readers...)
	case ReaderArgs:
		args = append(args, first)
	case PermitArgs:
		stale := ""
		if a.Stale != nil {
			stale = a.Stale[0]
		}
		args = append(args, a.Permits, stale)
	}
	return args
}

// Keys returns the keys of an attempt at a lock with keys, those its
// script may touch: the lean attempt of a Mutex touches the lock's own key
// alone (see internal/lua/acquire.lua), and Redis sets up every key a call
// declares for its script, about a third of a microsecond each on Redis 7.
func (a AttemptArgs) Keys(keys []string) []string {
	if a.Op == "" && a.Stale == nil && a.Form == MutexArgs {
		return keys[:1]
	}
	return keys
}

// takeOverMark tells a writer's script that its attempt takes over.
const takeOverMark = "x"

// Anys converts tokens to script arguments.
func Anys(tokens []string) []any {
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	return args
}

// An ArgForm is the form of a primitive's own ARGV.
type ArgForm int

const (
	MutexArgs  ArgForm = iota // a Mutex's: the stale holder's token, for a take-over
	WriterArgs                // an RWMutex's writer: "x" for a take-over, the stale writer, the stale readers
	ReaderArgs                // an RWMutex's reader: the stale writer
	PermitArgs                // a Semaphore's: its permits, the stale holder
)
