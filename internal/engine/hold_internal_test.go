package engine

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/uncomplicated-mutex/uncomplicated/internal/config"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// A claim is a second, and never more than the lease; the holder must take
// it unless it is the whole lease.
func TestConfig_claim(t *testing.T) {
	cases := []struct {
		name   string
		opts   []config.Option
		claim  time.Duration
		claims bool
	}{
		{"defaults", nil, time.Second, true},
		{"short ticks: the same", []config.Option{config.WithTimeout(time.Second)}, time.Second, true},
		{"a lease of a second", []config.Option{config.WithTimeout(time.Second), config.WithLease(time.Second)}, time.Second, false},
		{"a short lease", []config.Option{config.WithLease(500 * time.Millisecond)}, 500 * time.Millisecond, false},
		{"no lease", []config.Option{config.WithLease(0)}, time.Second, true},
		{"a lease below a millisecond", []config.Option{config.WithLease(time.Microsecond)}, time.Millisecond, false},
		{"a lease of a millisecond and a half", []config.Option{config.WithLease(1500 * time.Microsecond)}, time.Millisecond, true},
	}
	for _, tc := range cases {
		cfg, err := config.Build(tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := cfg.Claim(); got != tc.claim || cfg.Claims() != tc.claims {
			t.Errorf("%s: claim() = %v, claims() = %v; want %v, %v", tc.name, got, cfg.Claims(), tc.claim, tc.claims)
		}
	}
}

// A waiter's queue entry states its claim, not its lease: what a release
// gives it until it takes the lock; and the number of the attempt that
// writes it.
func TestWaiter_entryStatesTheClaim(t *testing.T) {
	cfg, _ := config.Build([]config.Option{config.WithLease(time.Hour)})
	w := waiter{b: &base{cfg: cfg}, c: &spec{entry: wire.EntryExclusive, channel: "ch"}, entries: 6}
	entry := w.nextEntry(cfg.Expiry())
	fields := strings.Fields(entry)
	if len(fields) != 5 || fields[1] != strconv.FormatInt(cfg.Claim().Milliseconds(), 10) || fields[3] != "7" {
		t.Errorf("entry = %q; want the claim, %v, after the kind, and attempt 7 before the channel", entry, cfg.Claim())
	}
}

// A waiter trusts a hand-off only while half its claim surely remains: from
// the send time of its last attempt, which the release followed, for half
// a claim. One heard later (the waiter was paused) sends it back to
// trying.
func TestWaiter_handedOverWithinTheClaim(t *testing.T) {
	mock := clock.NewMock()
	cfg, _ := config.Build([]config.Option{config.WithClock(mock)})
	claim := cfg.Claim()
	now := mock.Now()
	cases := []struct {
		name string
		wu   wire.WakeUp
		from time.Time
		want bool
	}{
		{"no hand-off", wire.WakeUp{}, now, false},
		{"of the entry of an attempt before the last", wire.WakeUp{Fence: 9, Attempt: 2}, now, false},
		{"of the last attempt's entry, at once", wire.WakeUp{Fence: 9, Attempt: 3}, now, true},
		{"a nanosecond before half the claim", wire.WakeUp{Fence: 9, Attempt: 3}, now.Add(-claim/2 + time.Nanosecond), true},
		{"half the claim on", wire.WakeUp{Fence: 9, Attempt: 3}, now.Add(-claim / 2), false},
		{"long after (a paused waiter)", wire.WakeUp{Fence: 9, Attempt: 3}, now.Add(-time.Minute), false},
	}
	for _, tc := range cases {
		w := waiter{b: &base{cfg: cfg}, entries: 3, inQueue: true}
		if got := w.handedOver(tc.wu, tc.from); got != tc.want || w.inQueue == got {
			t.Errorf("%s: handedOver() = %v (in queue: %v); want %v", tc.name, got, w.inQueue, tc.want)
		}
	}
}

// The restart watch's list of holds: each hold in it once, any of them
// taken out in any order, and one not in it ignored.
func TestWatched_addRemove(t *testing.T) {
	var l watched
	hs := []*hold{{}, {}, {}, {}}
	for _, h := range hs {
		l.add(h)
	}
	l.add(hs[0]) // again: nothing changes
	if got := l.all(); l.n != 4 || len(got) != 4 {
		t.Fatalf("after 4 adds (one twice): n %d, all %d; want 4", l.n, len(got))
	}
	for _, i := range []int{2, 3, 0} { // the middle, the first added, the last
		l.remove(hs[i])
		l.remove(hs[i]) // again: nothing changes
	}
	if got := l.all(); l.n != 1 || len(got) != 1 || got[0] != hs[1] {
		t.Fatalf("after removing 3: n %d, all %v; want only the second hold", l.n, got)
	}
	l.remove(hs[1])
	if l.n != 0 || l.first != nil || len(l.all()) != 0 {
		t.Fatalf("after removing all: n %d, first %v", l.n, l.first)
	}
}
