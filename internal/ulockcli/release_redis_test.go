package ulockcli_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/ulocktest"
)

func TestRelease_refused(t *testing.T) {
	f := newFixture(t, "m")
	before := f.inspect(t, "m")
	ulocktest.WantOneLine(t, f.ulock(t, "release", "m"), 2, "refusing to break m without --force")
	after := f.inspect(t, "m")
	if !after.Held() || after.Holders[0].Label != "t-mutex" || after.Fence != before.Fence || len(after.Waiters) != 1 {
		t.Errorf("after release without --force: %+v; want it as before, %+v", after, before)
	}
}

func TestRelease_force(t *testing.T) {
	f := newFixture(t)
	p := f.prefix + ":"
	r := f.ulock(t, "release", "--force", "m")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("release --force: exit %d, stderr %q", r.Code, r.Stderr)
	}
	fence := f.m.Fence()
	for _, want := range []string{fmt.Sprintf("released %sm (mutex, fence %d): removed 1 holder\n", p, fence), fmt.Sprintf("holder  t-mutex  fence %d  held for ", fence), "1 waiter queued: the next holder gets a higher fence"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("release --force printed\n%s\nwant it to hold %q", r.Stdout, want)
		}
	}
	select {
	case w := <-f.waited:
		if w.err != nil || w.fence <= fence {
			t.Errorf("the waiter got fence %d, error %v; want a fence above %d", w.fence, w.err, fence)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock within 5s of release --force")
	}
	if err := f.m.Unlock(context.Background()); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("the broken holder's Unlock() = %v; want ErrNotHeld", err)
	}

	r = f.ulock(t, "release", p+"rw", "--force") // a full name, the flag after it
	for _, want := range []string{"(rwmutex): removed 2 holders", "reader  t-reader1  fence -", "reader  t-reader2"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("release --force rw printed\n%s\nwant it to hold %q", r.Stdout, want)
		}
	}
	if info := f.inspect(t, "rw"); info.Held() {
		t.Errorf("rw after release --force: %+v; want free", info)
	}
	r = f.ulock(t, "release", "--force", "sem")
	if !strings.Contains(r.Stdout, "removed 2 holders") || strings.Count(r.Stdout, "permit  t-permit") != 2 {
		t.Errorf("release --force sem printed\n%s\nwant two permits of t-permit", r.Stdout)
	}
	if r := f.ulock(t, "release", "--force", "none"); r.Code != 0 || r.Stdout != p+"none was free: nothing removed\n" {
		t.Errorf("release --force of a free lock: exit %d, stdout %q", r.Code, r.Stdout)
	}
}
