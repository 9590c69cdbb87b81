package uncomplicated

import (
	"strconv"
	"strings"
	"time"
)

// Holder labels. A hold's token is its secret, 22 random characters, and
// then, after a '.', what Inspect may show: when the hold began by its
// holder's clock (milliseconds since 1970, base 36) and, after another '.',
// the holder label, escaped as lock names are. Every script compares
// whole tokens, so the label costs no command and no round trip, and
// Inspect drops the secret part before anything leaves the package.

// holderToken returns a new token for a hold, or a waiter, that began at
// since.
func (b *base) holderToken(since time.Time) string {
	return newToken() + "." + strconv.FormatInt(since.UnixMilli(), 36) + "." + b.label
}

// publicPart reads what a token shows of its holder: its label and since,
// the zero time when the token has none (a holder of an older version).
func publicPart(token string) (label string, since time.Time) {
	_, public, ok := strings.Cut(token, ".")
	if !ok {
		return "", time.Time{}
	}
	ms, label, ok := strings.Cut(public, ".")
	if !ok {
		return "", time.Time{}
	}
	if n, err := strconv.ParseInt(ms, 36, 64); err == nil {
		since = time.UnixMilli(n)
	}
	return unescape(label), since
}

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
