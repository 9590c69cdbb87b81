package ulocktest

import "testing"

// recorder is a testing.TB that records whether it failed.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }

func TestWantOneLine(t *testing.T) {
	cases := []struct {
		name   string
		r      Result
		failed bool
	}{
		{"one line", Result{Code: 2, Stderr: "ulock: bad flag; run 'ulock help'\n"}, false},
		{"another code", Result{Code: 1, Stderr: "ulock: bad flag; run 'ulock help'\n"}, true},
		{"two lines", Result{Code: 2, Stderr: "ulock: bad flag\nrun 'ulock help'\n"}, true},
		{"no newline", Result{Code: 2, Stderr: "ulock: bad flag; run 'ulock help'"}, true},
		{"nothing", Result{Code: 2}, true},
		{"a want missing", Result{Code: 2, Stderr: "ulock: bad flag\n"}, true},
	}
	for _, tc := range cases {
		rec := &recorder{TB: t}
		WantOneLine(rec, tc.r, 2, "bad flag", "run 'ulock help")
		if rec.failed != tc.failed {
			t.Errorf("%s: WantOneLine(%+v) failed = %v; want %v", tc.name, tc.r, rec.failed, tc.failed)
		}
	}
}
