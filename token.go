package uncomplicated

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Tokens. A hold's token is its secret, 22 random characters, followed by
// the ID of the Client that made it, 11 characters; then, after a '.',
// what Inspect and other waiters may read: when the hold began by its
// holder's clock (milliseconds since 1970, base 36), the holder's timeout
// (milliseconds, base 36) and the holder label, escaped as lock names
// are, each after a '.'. Every script compares whole tokens, so none of it
// costs a command or a round trip. Inspect drops the secret part and the
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
