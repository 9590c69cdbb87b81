package wire

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
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

// SecretLen and ClientIDLen are the lengths of a token's secret and of a
// Client's ID.
const (
	SecretLen   = 22
	ClientIDLen = 11
)

// HoldSecretLen is the length of the part of a hold's secret that its
// Refreshes keep (see RefreshedSecret): it names the hold, as the fence
// does, so that a copy of the hold resumed from a handle, whose token a
// Refresh of the other made old, can find the hold again (see
// SameHold). 96 random bits.
const HoldSecretLen = 16

// NewToken returns 16 random bytes, base64url: the secret that proves a
// hold is ours. Every acquisition gets a new one, and every Refresh a new
// one that keeps the hold's part (see RefreshedSecret).
func NewToken() string {
	var b [SecretLen]byte
	return string(AppendNewToken(b[:0]))
}

// AppendNewToken appends a new secret, as NewToken returns it, to dst.
func AppendNewToken(dst []byte) []byte {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return base64.RawURLEncoding.AppendEncode(dst, b[:])
}

// RefreshedSecret returns a new secret for a Refresh of the hold whose
// token is old: old's first HoldSecretLen characters, then new random
// ones; a token unlike ours (the gem's) gets a new secret whole.
func RefreshedSecret(old string) string {
	s := NewToken()
	if len(old) >= SecretLen+ClientIDLen {
		return old[:HoldSecretLen] + s[HoldSecretLen:]
	}
	return s
}

// SameHold reports whether tokens a and b are of one hold: b a Refresh of
// a, or the reverse (see RefreshedSecret).
func SameHold(a, b string) bool {
	return len(a) >= SecretLen+ClientIDLen && len(b) >= SecretLen+ClientIDLen && a[:HoldSecretLen] == b[:HoldSecretLen]
}

// WriterMark tells a writer's token from readers' among blockers.
const WriterMark = "w:"

// CutWriter returns the writer's token from a blocker, if it is the
// writer.
func CutWriter(blocker string) (string, bool) {
	if len(blocker) > len(WriterMark) && blocker[:len(WriterMark)] == WriterMark {
		return blocker[len(WriterMark):], true
	}
	return "", false
}

// A holder's value is what a lock's key holds of a Mutex's holder, or of
// an RWMutex's writer: its token, a space and its fence, as Fenced makes
// it and internal/lua/Fenced.lua too; a holder of an earlier version, or of the Ruby
// gem, has its token alone.
func Fenced(token string, fence uint64) string {
	return token + " " + strconv.FormatUint(fence, 10)
}

// QueuedMark ends a Mutex's holder value while a waiter may be queued
// behind it (see internal/lua/queued.lua).
const QueuedMark = "*"

// CutFence returns the token and the fence of a holder's value, marked
// (QueuedMark) or not, fence 0 when it carries none; it reads value as
// internal/lua/fence_of.lua's fenceOf does.
func CutFence(value string) (token string, fence uint64) {
	v := strings.TrimSuffix(value, QueuedMark)
	i := strings.LastIndexByte(v, ' ')
	if i < 0 {
		return value, 0
	}
	f, err := strconv.ParseUint(v[i+1:], 10, 64)
	if err != nil || f >= 1<<53 {
		return value, 0
	}
	return v[:i], f
}

// A TokenInfo is what a token tells of its holder beyond its secret.
type TokenInfo struct {
	Client  string        // the ID of the Client that made it; "" if unknown
	Label   string        // its holder label, unescaped
	Since   time.Time     // when its hold or wait began; zero if unknown
	Timeout time.Duration // its holder's timeout; 0 if unknown
}

// ParseToken reads what token tells of its holder.
func ParseToken(token string) TokenInfo {
	secret, public, ok := strings.Cut(token, ".")
	if !ok {
		return TokenInfo{}
	}
	var t TokenInfo
	ms, rest, ok := strings.Cut(public, ".")
	switch {
	case !ok:
		return TokenInfo{}
	case len(secret) == SecretLen: // the version before: <since>.<label>
		t.Label = Unescape(rest)
	case len(secret) == SecretLen+ClientIDLen:
		timeout, label, ok := strings.Cut(rest, ".")
		if !ok {
			return TokenInfo{}
		}
		t.Client, t.Label = secret[SecretLen:], Unescape(label)
		if n, err := strconv.ParseInt(timeout, 36, 64); err == nil && n > 0 && n <= MaxTimeoutMillis {
			t.Timeout = time.Duration(n) * time.Millisecond
		}
	default:
		return TokenInfo{}
	}
	if n, err := strconv.ParseInt(ms, 36, 64); err == nil {
		t.Since = time.UnixMilli(n)
	}
	return t
}

// MaxTimeoutMillis bounds the timeout a token may state: the longest
// time.Duration, in milliseconds.
const MaxTimeoutMillis = int64(1<<63-1) / int64(time.Millisecond)

// Unescape undoes escape; a malformed escape stays as it is.
func Unescape(s string) string {
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

// TokenTail is what follows since in the tokens of a lock whose holders
// wait timeout and carry label: the timeout and the escaped label, each
// after a '.'.
func TokenTail(timeout time.Duration, label string) string {
	return "." + strconv.FormatInt(timeout.Milliseconds(), 36) + "." + Escape(label)
}
