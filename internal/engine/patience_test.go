package engine

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// The patience of a waiter blocked by several holders, step by step: each
// step shows the blockers seen at an instant (seconds from the start) and
// the stale blockers and patience age that follow.
func TestCrowd_steps(t *testing.T) {
	const timeout = 10 * time.Second
	type step struct {
		at       int // seconds
		blockers []string
		stale    []string
		age      int // seconds
	}
	cases := []struct {
		name  string
		each  bool
		steps []step
	}{
		{"set unchanged is stale at the timeout", false, []step{
			{0, []string{"a", "b"}, nil, 0},
			{9, []string{"b", "a"}, nil, 9},
			{10, []string{"a", "b"}, []string{"a", "b"}, 10},
		}},
		{"a reader leaving restarts the set's patience", false, []step{
			{0, []string{"a", "b"}, nil, 0},
			{5, []string{"a"}, nil, 0},
			{14, []string{"a"}, nil, 9},
			{15, []string{"a"}, []string{"a"}, 10},
		}},
		{"a new writer token restarts it", false, []step{
			{0, []string{"w:x"}, nil, 0},
			{8, []string{"w:y"}, nil, 0},
			{18, []string{"w:y"}, []string{"w:y"}, 10},
		}},
		{"no blockers is busy, never stale", false, []step{
			{0, nil, nil, 0},
			{10, nil, nil, 0},
			{30, nil, nil, 0},
		}},
		{"each holder: one stuck among busy ones is stale", true, []step{
			{0, []string{"a", "b"}, nil, 0},
			{4, []string{"a", "c"}, nil, 4},
			{9, []string{"a", "d"}, nil, 9},
			{10, []string{"d", "a"}, []string{"a"}, 10},
		}},
		{"each holder: the one seen longest goes first", true, []step{
			{0, []string{"a"}, nil, 0},
			{3, []string{"a", "b"}, nil, 3},
			{10, []string{"b", "a"}, []string{"a"}, 10},
			{12, []string{"b"}, nil, 9},
			{13, []string{"b"}, []string{"b"}, 10},
		}},
		{"each holder: ties go to the smallest token", true, []step{
			{0, []string{"c", "a", "b"}, nil, 0},
			{10, []string{"b", "c", "a"}, []string{"a"}, 10},
		}},
	}
	start := time.Unix(1_700_000_000, 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := patience{each: tc.each, own: timeout}
			for _, s := range tc.steps {
				now := start.Add(time.Duration(s.at) * time.Second)
				p.watch(s.blockers, now)
				stale, age, _ := p.stale(now)
				if !slices.Equal(stale, s.stale) || age != time.Duration(s.age)*time.Second {
					t.Fatalf("at %ds: stale() = %v, %v; want %v, %ds", s.at, stale, age, s.stale, s.age)
				}
			}
		})
	}
}

// restart makes every blocker new, for either kind of patience.
func TestCrowd_restart(t *testing.T) {
	for _, each := range []bool{false, true} {
		start := time.Unix(1_700_000_000, 0)
		p := patience{each: each, own: time.Minute}
		p.watch([]string{"a"}, start)
		now := start.Add(time.Minute)
		p.restart(now)
		if stale, age, _ := p.stale(now); stale != nil || age != 0 {
			t.Errorf("each=%v: stale() after restart = %v, %v; want none, 0", each, stale, age)
		}
	}
}

// After a failed take-over a Mutex's or an RWMutex's waiter watches the
// winner for a whole timeout, even when the reply names holders it had
// seen; a Semaphore's waiter tries a holder that is still there after a
// tick.
func TestCrowd_overtaken(t *testing.T) {
	const tick, timeout = time.Second, time.Minute
	cases := []struct {
		each     bool
		blockers []string // what the failed take-over's reply names
		wait     time.Duration
		stale    []string
	}{
		{false, []string{"a", "b"}, timeout, nil},
		{true, []string{"b", "c"}, tick, []string{"b"}},
	}
	start := time.Unix(1_700_000_000, 0)
	for _, tc := range cases {
		p := patience{each: tc.each, own: timeout}
		p.watch([]string{"a", "b"}, start)
		now := start.Add(timeout)
		if wait := p.overtaken(tc.blockers, now, tick); wait != tc.wait {
			t.Errorf("each=%v: overtaken() = %v; want %v", tc.each, wait, tc.wait)
		}
		if stale, _, _ := p.stale(now); !slices.Equal(stale, tc.stale) {
			t.Errorf("each=%v: stale() after overtaken = %v; want %v", tc.each, stale, tc.stale)
		}
	}
}

// tokenOf returns a token of this version whose holder's timeout is d.
func tokenOf(name string, d time.Duration) string {
	secret := strings.Repeat(name, wire.SecretLen+wire.ClientIDLen)[:wire.SecretLen+wire.ClientIDLen]
	return secret + ".0." + strconv.FormatInt(d.Milliseconds(), 36) + ".label"
}

// A holder is stuck once it has kept one token for its own timeout, or
// the waiter's if that is longer: tokens carry their holder's timeout.
func TestPatience_holdersTimeouts(t *testing.T) {
	const own = 10 * time.Second
	long, short := tokenOf("l", 30*time.Second), tokenOf("s", 5*time.Second)
	cases := []struct {
		name     string
		each     bool
		blockers []string
		stuckAt  []int // seconds: when stale() first names blockers
		stale    []string
	}{
		{"a holder with a longer timeout", false, []string{long}, []int{29, 30}, []string{long}},
		{"a holder with a shorter timeout", false, []string{short}, []int{9, 10}, []string{short}},
		{"an old token, without one", false, []string{"old"}, []int{9, 10}, []string{"old"}},
		{"a writer's mark", false, []string{wire.WriterMark + long}, []int{29, 30}, []string{wire.WriterMark + long}},
		{"a set: its longest", false, []string{short, long}, []int{29, 30}, []string{long, short}},
		{"each holder: the shorter first", true, []string{short, long}, []int{9, 10}, []string{short}},
	}
	start := time.Unix(1_700_000_000, 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := patience{each: tc.each, own: own}
			p.watch(tc.blockers, start)
			before := start.Add(time.Duration(tc.stuckAt[0]) * time.Second)
			if stale, _, left := p.stale(before); stale != nil || left != time.Second {
				t.Errorf("stale() at %ds = %v, left %v; want none, 1s left", tc.stuckAt[0], stale, left)
			}
			at := start.Add(time.Duration(tc.stuckAt[1]) * time.Second)
			if stale, _, left := p.stale(at); !slices.Equal(stale, tc.stale) || left != 0 {
				t.Errorf("stale() at %ds = %v, left %v; want %v, none left", tc.stuckAt[1], stale, left, tc.stale)
			}
		})
	}
}
