package ulockcli_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// staleFor finds how long the demo's stale lock had one holder token.
var staleFor = regexp.MustCompile(`stale: one holder token for (\d+)ms`)

// quick makes the demo take about a second.
var quick = []string{"-timeout", "300ms", "-work", "40ms"}

func runDemoT(t *testing.T, args ...string) string {
	t.Helper()
	r := ulock(t, append([]string{"demo"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("ulock demo %v: exit %d, stderr:\n%s\nstdout:\n%s", args, r.Code, r.Stderr, r.Stdout)
	}
	return r.Stdout
}

func wantLines(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestDemo_takeOver(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	out := runDemoT(t, quick...)
	wantLines(t, out, "embedded in-memory Redis", "hangs for", "taken over", "store REJECTED the write of order 2: fence 1",
		"lost order 2's lock: uncomplicated: lock lost", "1 rejected by their fence")
}

func TestDemo_fail(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	out := runDemoT(t, append(quick, "-policy", "fail")...)
	wantLines(t, out, "stale policy Fail", "gave up on order 2", "0 rejected by their fence")
	// Judged stale once its one token has sat there for the timeout, which
	// a loaded machine (the race detector) may overshoot by milliseconds.
	if m := staleFor.FindStringSubmatch(out); m == nil {
		t.Errorf("output lacks %q:\n%s", "stale: one holder token for …ms", out)
	} else if ms, _ := strconv.Atoi(m[1]); ms < 300 || ms >= 900 {
		t.Errorf("judged stale after %dms; want the timeout, 300ms, or a little more:\n%s", ms, out)
	}
	if strings.Contains(out, "taken over") {
		t.Errorf("Fail policy took a lock over:\n%s", out)
	}
	n := strings.Count(out, "gave up on order")
	want := fmt.Sprintf("; %d jobs gave up on a stale lock;", n)
	if n == 1 {
		want = "; 1 job gave up on a stale lock;"
	}
	wantLines(t, out, want)
}

func TestDemo_usage(t *testing.T) {
	cases := []struct {
		args []string
		code int
	}{{[]string{"-policy", "maybe"}, 2}, {[]string{"-workers", "1"}, 2}, {[]string{"extra"}, 2}, {[]string{"-h"}, 0}}
	for _, tc := range cases {
		if r := ulock(t, append([]string{"demo"}, tc.args...)...); r.Code != tc.code {
			t.Errorf("ulock demo %q = %d; want %d", tc.args, r.Code, tc.code)
		}
	}
}
