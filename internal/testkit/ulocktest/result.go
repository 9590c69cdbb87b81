package ulocktest

import (
	"strings"
	"testing"
	"time"
)

// A Result is how a ulock ended.
type Result struct {
	Code           int // its exit code; -1 when a signal killed it
	Stdout, Stderr string
	Took           time.Duration // from its start until the test saw it end
}

// WantOneLine fails tb unless r ended with code and one line on stderr
// that holds each of wants.
func WantOneLine(tb testing.TB, r Result, code int, wants ...string) {
	tb.Helper()
	if r.Code != code {
		tb.Errorf("exit %d; want %d; stderr: %q", r.Code, code, r.Stderr)
	}
	if strings.Count(r.Stderr, "\n") != 1 || !strings.HasSuffix(r.Stderr, "\n") {
		tb.Errorf("stderr = %q; want one line", r.Stderr)
	}
	for _, w := range wants {
		if !strings.Contains(r.Stderr, w) {
			tb.Errorf("stderr = %q; want it to hold %q", r.Stderr, w)
		}
	}
}
