package wire

import (
	"errors"
	"slices"
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

func TestParseGrant(t *testing.T) {
	cases := []struct {
		reply any
		want  Grant
		err   bool
	}{
		{[]any{int64(1), int64(7)}, Grant{OK: true, Fence: 7}, false},
		{int64(7), Grant{OK: true, Free: true, Fence: 7}, false}, // a Mutex's bare fence
		{int64(0), Grant{}, true},
		{int64(-1), Grant{}, true},
		{[]any{int64(1), int64(0)}, Grant{OK: true}, false},
		{[]any{int64(0), []byte("w"), []any{[]byte("a"), []byte("b")}}, Grant{Writer: "w", Holders: []string{"a", "b"}}, false},
		{[]any{int64(0), []byte("h 7"), []any{}}, Grant{Writer: "h", Holders: []string{}}, false},
		{[]any{int64(0), []byte("h 7*"), []any{}}, Grant{Writer: "h", Holders: []string{}}, false}, // marked (see QueuedMark)
		{[]any{int64(0), []byte("h x"), []any{}}, Grant{Writer: "h x", Holders: []string{}}, false},
		{[]any{int64(0), []byte("h*"), []any{}}, Grant{Writer: "h*", Holders: []string{}}, false},
		{[]any{int64(0), []byte("h 9007199254740992"), []any{}}, Grant{Writer: "h 9007199254740992", Holders: []string{}}, false},
		{[]any{int64(0), []byte(""), []any{}}, Grant{Holders: []string{}}, false},
		{[]any{int64(1), int64(-1)}, Grant{}, true},
		{[]any{int64(0), int64(0)}, Grant{}, true},
		{[]any{int64(0), int64(3), []any{}}, Grant{}, true},
		{[]any{int64(0), []byte(""), []any{int64(1)}}, Grant{}, true},
		{[]any{int64(2), int64(1)}, Grant{}, true},
		{[]any{int64(0), int64(0), []byte(""), []any{}}, Grant{}, true},
		{[]any{int64(1), int64(7), int64(1)}, Grant{}, true},
		{[]any{int64(0), []byte("h"), int64(7)}, Grant{}, true},
		{"OK", Grant{}, true},
		{nil, Grant{}, true},
	}
	for _, tc := range cases {
		got, err := ParseGrant(tc.reply, true)
		if tc.err {
			if !errors.Is(err, driver.ErrUnexpectedReply) {
				t.Errorf("parseGrant(%v) = %v; want driver.ErrUnexpectedReply", tc.reply, err)
			}
			continue
		}
		if err != nil || !grantsEqual(got, tc.want) {
			t.Errorf("parseGrant(%v) = %+v, %v; want %+v", tc.reply, got, err, tc.want)
		}
	}
	// Only a Mutex's script replies a bare fence: for the other locks an
	// integer is no grant.
	if _, err := ParseGrant(int64(7), false); !errors.Is(err, driver.ErrUnexpectedReply) {
		t.Errorf("parseGrant(7, false) = %v; want driver.ErrUnexpectedReply", err)
	}
}

func TestGrant_blockers(t *testing.T) {
	g := Grant{Writer: "x", Holders: []string{"a"}}
	if got := g.Blockers(); !slices.Equal(got, []string{"w:x", "a"}) {
		t.Errorf("blockers() = %v; want [w:x a]", got)
	}
	if w, ok := CutWriter("w:x"); !ok || w != "x" {
		t.Errorf(`cutWriter("w:x") = %q, %v; want "x", true`, w, ok)
	}
	if _, ok := CutWriter("a"); ok {
		t.Error(`cutWriter("a") reports a writer`)
	}
}

// FromClock takes fences of Redis's clock, in microseconds since 2001 and
// below 2^53, and nothing a server answering nonsense replies.
func TestFromClock(t *testing.T) {
	for _, tc := range []struct {
		fence uint64
		want  bool
	}{
		{0, false}, {1, false}, {12345, false}, {MinFence - 1, false}, {MinFence, true},
		{1_796_185_736_000_001, true}, {1<<53 - 1, true}, {1 << 53, false}, {1<<64 - 1, false},
	} {
		if got := FromClock(tc.fence); got != tc.want {
			t.Errorf("fromClock(%d) = %v; want %v", tc.fence, got, tc.want)
		}
	}
}
