package engine

import (
	"strconv"
	"testing"
	"time"
)

// A Client's own tokens: an orphan is a token of its own that no waiter or
// hold owns, counted as often as owned.
func TestOwned_orphan(t *testing.T) {
	var o owned
	const id = "ccccccccccc"
	mine, theirs := "ssssssssssssssssssssss"+id+".0.0.x", "ssssssssssssssssssssssddddddddddd.0.0.x"
	if !o.orphan(id, mine) || o.orphan(id, theirs) || o.orphan(id, "old") {
		t.Fatal("orphan(): want only a token of this Client that nothing owns")
	}
	o.own(mine, mine)
	o.disown(mine)
	if o.orphan(id, mine) {
		t.Error("orphan() of a token still owned once = true")
	}
	o.disown(mine)
	if !o.orphan(id, mine) || len(o.tokens) != 0 {
		t.Errorf("orphan() once disowned = false, or %d tokens kept", len(o.tokens))
	}
}

// Releases are remembered until their lease would have ended, at most
// maxReleased of them, the newest; those repeated are forgotten.
func TestOwned_releases(t *testing.T) {
	defer func(n int) { maxReleased = n }(maxReleased)
	maxReleased = 3
	var o owned
	now := time.Unix(1_700_000_000, 0)
	for i := range 4 {
		o.remember(releaseRecord{tokens: []string{strconv.Itoa(i)}, until: now.Add(time.Duration(i) * time.Second)})
	}
	o.remember(releaseRecord{tokens: []string{"no lease"}})
	tokens := func(rs []releaseRecord) (ts []string) {
		for _, r := range rs {
			ts = append(ts, r.tokens[0])
		}
		return ts
	}
	if got := tokens(o.releases(now)); len(got) != 3 || got[0] != "2" || got[2] != "no lease" {
		t.Fatalf("releases() = %q; want the newest 3: 2, 3, no lease", got)
	}
	if got := tokens(o.releases(now.Add(2 * time.Second))); len(got) != 2 || got[0] != "3" {
		t.Fatalf("releases() once 2's lease ended = %q; want 3, no lease", got)
	}
	o.forget([]releaseRecord{{tokens: []string{"3"}}})
	if got := tokens(o.releases(now.Add(time.Hour))); len(got) != 1 || got[0] != "no lease" {
		t.Errorf("releases() after forgetting 3, an hour on = %q; want no lease", got)
	}
}
