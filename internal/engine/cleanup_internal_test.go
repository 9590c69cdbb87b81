package engine

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// coalesce merges the leaves of a lock that follow each other and share a
// script, each token once and up to maxLeaving, keeps the rest in order,
// and never merges a Semaphore's, whose release hands on one permit.
func TestCoalesce(t *testing.T) {
	leave := func(s string, tokens ...string) cleanup {
		return cleanup{script: map[string]*driver.Script{"m": lua.Release, "s": lua.SemRelease}[s], args: append([]string{wire.OpLeave}, tokens...)}
	}
	hold := cleanup{script: lua.Release, args: []string{"", "h 1"}}
	cases := []struct {
		name  string
		batch []cleanup
		want  [][]string
	}{
		{"leaves merged", []cleanup{leave("m", "a"), leave("m", "b"), leave("m", "a")}, [][]string{{"q", "a", "b"}}},
		{"a hold's release keeps its place", []cleanup{leave("m", "a"), hold, leave("m", "b")},
			[][]string{{"q", "a"}, {"", "h 1"}, {"q", "b"}}},
		{"a Semaphore's apart", []cleanup{leave("s", "a"), leave("s", "b")}, [][]string{{"q", "a"}, {"q", "b"}}},
		{"scripts apart", []cleanup{leave("m", "a"), leave("s", "b")}, [][]string{{"q", "a"}, {"q", "b"}}},
	}
	for _, tc := range cases {
		var got [][]string
		for _, x := range coalesce(tc.batch) {
			got = append(got, x.args)
		}
		if !slices.EqualFunc(got, tc.want, slices.Equal[[]string]) {
			t.Errorf("%s: coalesce = %q; want %q", tc.name, got, tc.want)
		}
	}
	var many []cleanup
	for i := range 2*maxLeaving + 10 {
		many = append(many, leave("m", strconv.Itoa(i)))
	}
	out := coalesce(many)
	n := 0
	for _, x := range out {
		if len(x.args)-1 > maxLeaving+1 {
			t.Errorf("a call of %d tokens; want at most %d", len(x.args)-1, maxLeaving+1)
		}
		n += len(x.args) - 1
	}
	if n != len(many) || len(out) != 3 {
		t.Errorf("%d leaves in %d calls; want all %d in 3", n, len(out), len(many))
	}
}

// A slack grows by a millisecond for each late hand-off, up to maxSlack,
// and shrinks by a 32nd (and a nanosecond) for each one taken, to zero.
func TestSlack(t *testing.T) {
	var s slack
	s.taken()
	if s.get() != 0 {
		t.Fatalf("slack after a hand-off taken from zero = %v; want 0", s.get())
	}
	for range 3 {
		s.late()
	}
	if s.get() != 3*time.Millisecond {
		t.Errorf("slack after three late hand-offs = %v; want 3ms", s.get())
	}
	for range 1000 {
		s.late()
	}
	if s.get() != maxSlack {
		t.Errorf("slack after a thousand = %v; want %v", s.get(), maxSlack)
	}
	before := s.get()
	s.taken()
	if want := before - before/32 - 1; s.get() != want {
		t.Errorf("slack after one taken = %v; want %v", s.get(), want)
	}
	for range 2000 {
		s.taken()
	}
	if s.get() != 0 {
		t.Errorf("slack after many taken = %v; want 0", s.get())
	}
}
