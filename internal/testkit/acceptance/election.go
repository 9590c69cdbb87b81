package acceptance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// mustElection returns the Election name on c or fails the test.
func mustElection(t *testing.T, c *uncomplicated.Client, name string, opts ...uncomplicated.Option) *uncomplicated.Election {
	t.Helper()
	e, err := c.Election(name, opts...)
	if err != nil {
		t.Fatalf("Election(%q) = %v", name, err)
	}
	return e
}

// electionHandOver: a Resign elects the waiting campaigner at once, with a
// higher fence, and an observer of a third Client sees each leader within
// a second of its election.
func electionHandOver(t *testing.T, d Deployment) {
	r := newRig(t, d)
	ctx := context.Background()
	a, b := mustElection(t, r.client(), "scheduler"), mustElection(t, r.client(), "scheduler")
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	leaders := mustElection(t, r.client(), "scheduler").Observe(octx)
	if err := a.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	first := recv(t, leaders)
	if first.Value != "a" || first.Fence == 0 {
		t.Errorf("first leader observed = %+v; want a", first)
	}
	done := make(chan error, 1)
	go func() { done <- b.Campaign(ctx, "b") }()
	eventually(t, "b queued", func() bool { return r.llen(r.key("queue", b.Name())) == 1 })
	resigned := time.Now()
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("b's Campaign() = %v", err)
	}
	next := recv(t, leaders)
	if d := time.Since(resigned); d > time.Second {
		t.Errorf("b observed %v after a's Resign; want within a second", d)
	}
	if next.Value != "b" || next.Fence <= first.Fence {
		t.Errorf("next leader observed = %+v; want b, above fence %d", next, first.Fence)
	}
	if l, err := a.Leader(ctx); err != nil || l != next {
		t.Errorf("Leader() = %+v, %v; want %+v", l, err, next)
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Leader(ctx); !errors.Is(err, uncomplicated.ErrNoLeader) {
		t.Errorf("Leader() after the last Resign = %v; want ErrNoLeader", err)
	}
}

// electionTakeOver: a leader that keeps one token for the timeout (it
// froze) is replaced by a campaigner: an Election takes over by default.
func electionTakeOver(t *testing.T, d Deployment) {
	r := newRig(t, d)
	e := mustElection(t, r.client(uncomplicated.WithTimeout(500*time.Millisecond)), "scheduler")
	r.do(e.Name(), "SET", e.Name(), "a-frozen-leader", "PX", 60000)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	if err := e.Campaign(ctx, "b"); err != nil {
		t.Fatalf("Campaign() behind a frozen leader = %v; want it taken over", err)
	}
	if d := time.Since(began); d < 500*time.Millisecond {
		t.Errorf("took over after %v; want after the timeout", d)
	}
	if err := e.Resign(context.Background()); err != nil {
		t.Error(err)
	}
}

// electionLeadLost: Lead cancels fn's ctx when its leadership is lost, and
// reports ErrLost; an Election never meets a Mutex of the same name.
func electionLeadLost(t *testing.T, d Deployment) {
	r := newRig(t, d)
	c := r.client(uncomplicated.WithTimeout(300 * time.Millisecond))
	m, err := uncomplicated.New(c, uncomplicated.Named("scheduler"))
	if err != nil {
		t.Fatal(err)
	}
	mustLock(t, m)
	e := mustElection(t, c, "scheduler")
	err = e.Lead(context.Background(), "a", func(ctx context.Context) error {
		r.do(e.Name(), "SET", e.Name(), "someone-else", "PX", 60000)
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			return errors.New("fn's ctx not cancelled")
		}
		if e.IsLeader() {
			t.Error("IsLeader() inside fn after the loss = true")
		}
		return nil
	})
	if !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("Lead() with leadership lost = %v; want ErrLost", err)
	}
}
