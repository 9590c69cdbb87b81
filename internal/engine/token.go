package engine

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Tokens. A hold's token is its secret, 22 random characters, followed by
// the ID of the Client that made it, 11 characters; then, after a '.',
// what package inspect and other waiters may read: when the hold began by its
// holder's clock (milliseconds since 1970, base 36), the holder's timeout
// (milliseconds, base 36) and the holder label, escaped as lock names
// are, each after a '.'. Every script compares whole tokens, so none of it
// costs a command or a round trip. Inspection drops the secret part and the
// Client ID before anything leaves the package.
//
// Tokens of the version before had no Client ID and no timeout
// ("<secret>.<since>.<label>"), and those of the one before that no
// public part at all; their holders read as of another Client, with an
// unknown timeout.

// secretLen and clientIDLen are the lengths of a token's secret and of a
// Client's ID.
const (
	secretLen   = 22
	clientIDLen = 11
)

// newToken returns 16 random bytes, base64url: the secret that proves a
// hold is ours. Every acquisition and every Refresh gets a new one.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// writerMark tells a writer's token from readers' among blockers.
const writerMark = "w:"

// cutWriter returns the writer's token from a blocker, if it is the
// writer.
func cutWriter(blocker string) (string, bool) {
	if len(blocker) > len(writerMark) && blocker[:len(writerMark)] == writerMark {
		return blocker[len(writerMark):], true
	}
	return "", false
}

// A holder's value is what a lock's key holds of a Mutex's holder, or of
// an RWMutex's writer: its token, a space and its fence, as fenced makes
// it and internal/lua/fenced.lua too; a holder of an earlier version, or of the Ruby
// gem, has its token alone.
func fenced(token string, fence uint64) string {
	return token + " " + strconv.FormatUint(fence, 10)
}

// cutFence returns the token and the fence of a holder's value, fence 0
// when it carries none; it reads value as internal/lua/fence_of.lua's fenceOf does.
func cutFence(value string) (token string, fence uint64) {
	i := strings.LastIndexByte(value, ' ')
	if i < 0 {
		return value, 0
	}
	f, err := strconv.ParseUint(value[i+1:], 10, 64)
	if err != nil || f >= 1<<53 {
		return value, 0
	}
	return value[:i], f
}

// tokenTail is what follows since in the tokens of a lock with cfg: its
// timeout and escaped label, each after a '.'.
func tokenTail(cfg config) string {
	return "." + strconv.FormatInt(cfg.timeout.Milliseconds(), 36) + "." + escape(cfg.label)
}

// A tokenInfo is what a token tells of its holder beyond its secret.
type tokenInfo struct {
	client  string        // the ID of the Client that made it; "" if unknown
	label   string        // its holder label, unescaped
	since   time.Time     // when its hold or wait began; zero if unknown
	timeout time.Duration // its holder's timeout; 0 if unknown
}

// parseToken reads what token tells of its holder.
func parseToken(token string) tokenInfo {
	secret, public, ok := strings.Cut(token, ".")
	if !ok {
		return tokenInfo{}
	}
	var t tokenInfo
	ms, rest, ok := strings.Cut(public, ".")
	switch {
	case !ok:
		return tokenInfo{}
	case len(secret) == secretLen: // the version before: <since>.<label>
		t.label = unescape(rest)
	case len(secret) == secretLen+clientIDLen:
		timeout, label, ok := strings.Cut(rest, ".")
		if !ok {
			return tokenInfo{}
		}
		t.client, t.label = secret[secretLen:], unescape(label)
		if n, err := strconv.ParseInt(timeout, 36, 64); err == nil && n > 0 && n <= maxTimeoutMillis {
			t.timeout = time.Duration(n) * time.Millisecond
		}
	default:
		return tokenInfo{}
	}
	if n, err := strconv.ParseInt(ms, 36, 64); err == nil {
		t.since = time.UnixMilli(n)
	}
	return t
}

// maxTimeoutMillis bounds the timeout a token may state: the longest
// time.Duration, in milliseconds.
const maxTimeoutMillis = int64(1<<63-1) / int64(time.Millisecond)

// unescape undoes escape; a malformed escape stays as it is.
func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// A Client knows its own tokens. Each token carries the ID of the Client
// that made it (see holderToken), and the Client keeps the tokens that its
// waiters and holds may have in Redis. A token of this Client that none of
// them owns is an orphan: a release that never reached Redis, or an
// acquisition whose reply was lost. A waiter that finds an orphan holding
// its lock releases it at once (see waiter.releaseOrphans), rather than
// wait for its lease or its timeout.
//
// It also remembers the holds it released, for as long as their leases
// would have lasted, up to maxReleased of them: a failover to a replica
// that had not yet received a release, or the Refresh before it, brings
// the hold back on the new master. When the restart watch sees a new
// master, it releases those of them that the new master still has (see
// restartWatch.rerelease); a release that failed, or found the hold gone
// (it may have met a node without the lock), it repeats at its next
// reading.

// maxReleased bounds the releases a Client remembers: about 150 bytes
// each with their tokens, so 600 KB at most. A variable for the tests.
var maxReleased = 4096

// owned is what a Client knows of its tokens.
type owned struct {
	mu sync.Mutex // guards the fields below
	// tokens counts, by token, the waiters and holds that may have it in
	// Redis.
	tokens map[string]int
	// released are the releases to repeat on a new master: a ring, whose
	// oldest is at index oldest.
	released []release
	oldest   int
}

// A release is a hold given back, as the restart watch may repeat it.
type release struct {
	kind   *holdKind
	keys   []string // the lock's keys, shared with its locks
	tokens []string // the hold's tokens, and those its last Refreshes replaced, as its release passes them (see hold.inKey)
	// failed is set when the release did not surely reach Redis, or found
	// the hold gone, as a node without the lock would: the watch repeats
	// it at its next reading, whatever the run_id.
	failed bool
	// until is when the hold's lease would have ended, by the Client's
	// clock; zero when it had none.
	until time.Time
}

// own records that a waiter or a hold may have tokens in Redis.
func (o *owned) own(tokens ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tokens == nil {
		o.tokens = map[string]int{}
	}
	for _, t := range tokens {
		o.tokens[t]++
	}
}

// disown records that a waiter or a hold no longer has tokens.
func (o *owned) disown(tokens ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range tokens {
		if o.tokens[t] <= 1 {
			delete(o.tokens, t)
		} else {
			o.tokens[t]--
		}
	}
}

// orphan reports whether token is one of the Client with id that no waiter
// or hold of the Client owns.
func (o *owned) orphan(id, token string) bool {
	if parseToken(token).client != id {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tokens[token] == 0
}

// remember records a release, to repeat on a new master until the hold's
// lease would have ended; at maxReleased, it takes the place of the
// oldest.
func (o *owned) remember(r release) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.released) < maxReleased {
		o.released = append(o.released, r)
		return
	}
	o.released[o.oldest] = r
	o.oldest = (o.oldest + 1) % len(o.released)
}

// releases returns the releases to repeat at now, oldest first, dropping
// those whose lease has ended.
func (o *owned) releases(now time.Time) []release {
	return o.keep(func(r release) bool { return r.until.IsZero() || now.Before(r.until) })
}

// forget drops the releases done.
func (o *owned) forget(done []release) {
	if len(done) == 0 {
		return
	}
	gone := make(map[string]bool, len(done))
	for _, r := range done {
		gone[r.tokens[0]] = true
	}
	o.keep(func(r release) bool { return !gone[r.tokens[0]] })
}

// keep keeps the releases that keep reports true of, oldest first, and
// returns a copy of them.
func (o *owned) keep(keep func(release) bool) []release {
	o.mu.Lock()
	defer o.mu.Unlock()
	kept := make([]release, 0, len(o.released))
	for i := range o.released {
		if r := o.released[(o.oldest+i)%len(o.released)]; keep(r) {
			kept = append(kept, r)
		}
	}
	o.released, o.oldest = kept, 0
	return append([]release(nil), kept...)
}
