package engine

// The queue of waiters, for the acquiring and releasing scripts (see
// internal/lua/queue_wait.lua). An acquiring script's ARGV are, first, the waiter's token, its
// lease, its entry (see queueEntry), what to do with the entry (op), and
// its expiry in ms, "0" for an attempt that does not wait (TryLock); the
// attempt of a Mutex, an RWMutex's writer or a Semaphore with no op and no
// take-over passes a lean form instead (see attemptArgs.argv).
//
// op: join the queue once the subscription is confirmed ("q"), rejoin if
// a release passed the waiter over ("r": its key is gone), or stay queued
// without rejoining ("x": in the queue but not listening), or nothing
// (""). A blocked attempt restarts the waiter's key, writing its entry,
// whose attempt number tells the waiter whether a hand-off came after it
// (see waiter.handedOver); a successful one takes the waiter out of the
// queue.
//
// A release takes ARGV[1], then the tokens of the hold. ARGV[1] is "" for
// a holder's release; a clean-up of waiters that gave up passes "q"
// (opLeave, see cleanup.go) and their tokens, so that each leaves the
// queue and stops counting as waiting (a waiting writer holds readers
// back), and releases what a hand-off may have just given it. The scripts
// still take "-", which earlier versions passed for a waiter not queued.

// attemptArgs are the ARGV of an acquiring script, as internal/lua/queue_wait.lua reads them:
// the five of an attempt, then the primitive's own, which say what a
// take-over evicts (see the scripts of each primitive); or the lean form
// (see argv).
type attemptArgs struct {
	token  string
	lease  int64  // ms; 0: none
	entry  string // the waiter's queue entry; "" before it may queue
	op     string // what to do with the entry: "q", "r", "x" or ""
	expiry int64  // the entry's, in ms; 0: the attempt does not wait
	form   argForm
	// stale are the stale blockers to take over from; nil for an attempt
	// that takes over nothing.
	stale   []string
	permits int // a Semaphore's
}

// argv returns a's ARGV, in the order the scripts read them. An attempt
// of a Mutex, an RWMutex's writer or a Semaphore with no op and no
// take-over (TryLock's, the first of a Lock and those before its waiter
// may queue) gets the lean form: its token and lease, then what its script
// still reads, a writer's expiry (a blocked writer counts among the
// waiting writers for it) or a Semaphore's permits. Redis copies every
// argument into Lua, and the scripts read the others only for an op or a
// take-over.
func (a attemptArgs) argv() []any {
	if a.op == "" && a.stale == nil {
		switch a.form {
		case mutexArgs:
			return []any{a.token, a.lease}
		case writerArgs:
			return []any{a.token, a.lease, a.expiry}
		case permitArgs:
			return []any{a.token, a.lease, a.permits}
		}
	}
	args := []any{a.token, a.lease, a.entry, a.op, a.expiry}
	var first string // the first stale blocker, a writer's token without its mark
	if a.stale != nil {
		first, _ = cutWriter(a.stale[0])
	}
	switch a.form {
	case mutexArgs:
		if a.stale != nil {
			args = append(args, first)
		}
	case writerArgs:
		if a.stale == nil {
			return append(args, "", "")
		}
		writer, readers := "", []any(nil)
		for _, s := range a.stale {
			if w, ok := cutWriter(s); ok {
				writer = w
			} else {
				readers = append(readers, s)
			}
		}
		args = append(append(args, "x", writer), readers...)
	case readerArgs:
		args = append(args, first)
	case permitArgs:
		stale := ""
		if a.stale != nil {
			stale = a.stale[0]
		}
		args = append(args, a.permits, stale)
	}
	return args
}

// anys converts tokens to script arguments.
func anys(tokens []string) []any {
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	return args
}
