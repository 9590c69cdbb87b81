package main

import (
	"context"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// TestStore_fences steps through READs and WRITEs of one key and checks
// what the fenced store accepts.
func TestStore_fences(t *testing.T) {
	requireRedis(t)
	srv := redistest.Start(t)
	s := store{pool: srv.Pool(t)}
	ctx := context.Background()
	const key = "k"
	if err := s.reset(ctx, key); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		op    string // "read" or "write"
		fence uint64
		value int64 // written, or want read
		ok    bool
	}{
		{"read", 1, 0, true},
		{"write", 1, 1, true},
		{"read", 3, 1, true},   // a higher fence reads: 3 is the highest now
		{"write", 1, 9, false}, // the old holder's late write
		{"read", 2, 0, false},  // a fence below the highest may not read
		{"write", 3, 2, true},
		{"read", 3, 2, true}, // the same fence may read again
		{"write", 4, 7, false},
	}
	for i, st := range steps {
		switch st.op {
		case "read":
			ok, v, at, err := s.read(ctx, key, st.fence)
			if err != nil || ok != st.ok || (ok && v != st.value) || at == 0 {
				t.Fatalf("step %d: read(%d) = %v, %d, at %d, %v; want %v, %d", i, st.fence, ok, v, at, err, st.ok, st.value)
			}
		case "write":
			ok, at, err := s.write(ctx, key, st.fence, st.value)
			if err != nil || ok != st.ok || at == 0 {
				t.Fatalf("step %d: write(%d, %d) = %v, at %d, %v; want %v", i, st.fence, st.value, ok, at, err, st.ok)
			}
		}
	}
	got, err := s.tally(ctx, key)
	if want := (tally{Value: 2, Accepted: 2, Rejected: 2}); err != nil || got != want {
		t.Errorf("tally() = %+v, %v; want %+v", got, err, want)
	}
}

// TestStore_timesOrdered checks that the store's times follow the order
// of the calls, which the overlap count relies on.
func TestStore_timesOrdered(t *testing.T) {
	requireRedis(t)
	srv := redistest.Start(t)
	s := store{pool: srv.Pool(t)}
	ctx := context.Background()
	if err := s.reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	_, _, readAt, err := s.read(ctx, "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, writeAt, err := s.write(ctx, "k", 1, 1)
	if err != nil || writeAt < readAt {
		t.Errorf("write at %d, %v; want no error, not before the read at %d", writeAt, err, readAt)
	}
}

// TestStore_look checks that a reader's two LOOKs differ exactly when a
// writer READ or WRITE between them.
func TestStore_look(t *testing.T) {
	requireRedis(t)
	srv := redistest.Start(t)
	s := store{pool: srv.Pool(t)}
	ctx := context.Background()
	if err := s.reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	look := func() look {
		t.Helper()
		l, at, err := s.look(ctx, "k")
		if err != nil || at == 0 {
			t.Fatalf("look() = %+v, at %d, %v", l, at, err)
		}
		return l
	}
	before := look()
	if again := look(); again != before {
		t.Errorf("two looks with nothing between: %+v, then %+v", before, again)
	}
	if _, _, _, err := s.read(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	afterRead := look()
	if afterRead == before {
		t.Errorf("a look after a writer's READ = %+v, as before it", afterRead)
	}
	if _, _, err := s.write(ctx, "k", 1, 1); err != nil {
		t.Fatal(err)
	}
	if afterWrite := look(); afterWrite == afterRead {
		t.Errorf("a look after a writer's WRITE = %+v, as before it", afterWrite)
	}
	if _, _, err := s.write(ctx, "k", 0, 5); err != nil { // refused: changes nothing a reader sees
		t.Fatal(err)
	}
	if l, again := look(), look(); l != again {
		t.Errorf("looks around nothing differ: %+v, %+v", l, again)
	}
	if at, err := s.now(ctx); err != nil || at < time.Now().Add(-time.Minute).UnixNano() {
		t.Errorf("now() = %d, %v; want the server's time", at, err)
	}
}
