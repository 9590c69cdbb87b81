package wire

import (
	"strconv"
	"strings"
	"time"
)

// QueueEntry is a waiter's entry in the queue, as internal/lua/queue_hand.lua's nextWaiter
// reads it: "<kind> <claim> <expiry> <attempt> <channel>", the claim and
// the expiry in milliseconds, attempt the number of the waiter's attempt
// that writes it, channel where its Client hears of hand-offs.
func QueueEntry(kind string, claim, expiry time.Duration, attempt uint64, channel string) string {
	return kind + " " + strconv.FormatInt(claim.Milliseconds(), 10) + " " + strconv.FormatInt(expiry.Milliseconds(), 10) +
		" " + strconv.FormatUint(attempt, 10) + " " + channel
}

// Broadcast, as the token of a message, wakes every listener of its
// channel: an Election announces a new leader so to its observers.
const Broadcast = "*"

// A WakeUp is a hand-off as its waiter hears it: the fence the lock was
// handed over under, and the number of the waiter's attempt whose queue
// entry the release took (see QueueEntry); 0 for a broadcast.
type WakeUp struct {
	Fence, Attempt uint64
}

// ParseWakeUp reads a message on a wake-up channel: a hand-off, "<token>
// <fence> <attempt>", as internal/lua/queue_hand.lua's offer publishes it, or a broadcast,
// "* <fence>", each fence one that Redis's clock can give (see FromClock).
// It reports false for anything else.
func ParseWakeUp(data string) (token string, wu WakeUp, ok bool) {
	token, rest, _ := strings.Cut(data, " ")
	f, a, hasAttempt := strings.Cut(rest, " ")
	fence, err := strconv.ParseUint(f, 10, 64)
	if err != nil || !FromClock(fence) || token == "" || hasAttempt == (token == Broadcast) {
		return "", WakeUp{}, false
	}
	wu.Fence = fence
	if hasAttempt {
		if wu.Attempt, err = strconv.ParseUint(a, 10, 64); err != nil || wu.Attempt == 0 {
			return "", WakeUp{}, false
		}
	}
	return token, wu, true
}

// What an attempt does with its waiter's queue entry (AttemptArgs.Op; see
// the comment at the top of args.go), and OpLeave, the first ARGV of a
// release by waiters that leave.
const (
	OpJoin   = "q" // join the queue: the subscription is confirmed
	OpRejoin = "r" // join again: a release passed the waiter over
	OpStay   = "x" // stay queued without rejoining: not listening now
	OpLeave  = "q" // a release's: leave the queue
)

// The kinds of queue entry (see QueueEntry) of a waiter for the lock itself
// (a Mutex's, an RWMutex's writer) and of an RWMutex's reader; a
// Semaphore's waiter's is its number of permits.
const (
	EntryExclusive = "x"
	EntryShared    = "s"
)
