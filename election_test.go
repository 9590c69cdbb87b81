package uncomplicated_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// miniClients returns a miniredis and n Clients on it with opts, as n
// processes would have, closed when the test ends.
func miniClients(t *testing.T, n int, opts ...uncomplicated.Option) (*miniredis.Miniredis, []*uncomplicated.Client) {
	t.Helper()
	mr := miniredis.RunT(t)
	pool := poolOf(t, mr.Addr())
	var cs []*uncomplicated.Client
	for range n {
		c := uncomplicated.NewClient(redigo.New(pool), opts...)
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	return mr, cs
}

// mustElection returns the Election name on c or fails the test.
func mustElection(t *testing.T, c *uncomplicated.Client, name string, opts ...uncomplicated.Option) *uncomplicated.Election {
	t.Helper()
	e, err := c.Election(name, opts...)
	if err != nil {
		t.Fatalf("Election(%q) = %v", name, err)
	}
	return e
}

// Bad input to an Election is refused before anything reaches Redis.
func TestElection_invalid(t *testing.T) {
	mr, cs := miniClients(t, 1)
	c := cs[0]
	for name, opts := range map[string][]uncomplicated.Option{
		"empty name": nil, "no lease": {uncomplicated.WithLease(0)}, "bad option": {uncomplicated.WithTicks(0)},
	} {
		n := "x"
		if name == "empty name" {
			n = ""
		}
		if _, err := c.Election(n, opts...); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
			t.Errorf("Election(%q) with %s = %v; want ErrInvalidArgument", n, name, err)
		}
	}
	e := mustElection(t, c, "x")
	long := strings.Repeat("v", 65)
	if err := e.Campaign(context.Background(), long); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("Campaign(65 bytes) = %v; want ErrInvalidArgument", err)
	}
	if err := e.Campaign(nil, "v"); !errors.Is(err, uncomplicated.ErrInvalidArgument) { //nolint:staticcheck // the point
		t.Errorf("Campaign(nil ctx) = %v; want ErrInvalidArgument", err)
	}
	if err := e.Lead(context.Background(), "v", nil); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("Lead(nil fn) = %v; want ErrInvalidArgument", err)
	}
	var zero *uncomplicated.Election
	if err := zero.Resign(context.Background()); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("nil Election's Resign() = %v; want ErrInvalidArgument", err)
	}
	if _, ok := <-zero.Observe(context.Background()); ok || zero.IsLeader() || zero.Name() != "" {
		t.Errorf("nil Election: Observe sent, IsLeader %v, Name %q; want a closed channel, false, \"\"", zero.IsLeader(), zero.Name())
	}
	if keys := mr.Keys(); len(keys) != 0 {
		t.Errorf("keys in Redis after bad input: %v", keys)
	}
}

// go doc shows what Election.Leader and Observe give: Leader's fields and
// what each means.
func TestLeader_goDoc(t *testing.T) {
	wantDocFields(t, "Leader", "Value", "Fence", "Since")
}

// One campaigner leads; Leader shows its value, fence and when it was
// elected; a Resign elects the next campaigner at once, with a higher
// fence; a Resign that does not lead is ErrNotHeld.
func TestElection_campaignResign(t *testing.T) {
	_, cs := miniClients(t, 2)
	ctx := context.Background()
	a, b := mustElection(t, cs[0], "scheduler"), mustElection(t, cs[1], "scheduler")
	if a.Name() != "lock:election:scheduler" {
		t.Errorf("Name() = %q; want lock:election:scheduler", a.Name())
	}
	if _, err := a.Leader(ctx); !errors.Is(err, uncomplicated.ErrNoLeader) {
		t.Errorf("Leader() before any campaign = %v; want ErrNoLeader", err)
	}
	if err := a.Resign(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Errorf("Resign() without leading = %v; want ErrNotHeld", err)
	}
	before := time.Now().Truncate(time.Millisecond)
	if err := a.Campaign(ctx, "host-a"); err != nil {
		t.Fatal(err)
	}
	if err := a.Campaign(ctx, "again"); err != nil || !a.IsLeader() {
		t.Errorf("Campaign() while leading = %v, IsLeader %v; want nil, true", err, a.IsLeader())
	}
	campaigned := make(chan time.Time, 1)
	done := make(chan error, 1)
	go func() {
		err := b.Campaign(ctx, "host-b")
		campaigned <- time.Now()
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // b waits
	l, err := b.Leader(ctx)
	first := l.Fence
	if err != nil || l.Value != "host-a" || first == 0 || l.Since.Before(before) || l.Since.After(time.Now()) {
		t.Errorf("Leader() = %+v, %v; want host-a, a fence, since the campaign", l, err)
	}
	if !a.IsLeader() || b.IsLeader() {
		t.Errorf("IsLeader() = %v, %v; want true, false", a.IsLeader(), b.IsLeader())
	}
	resigned := time.Now()
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("b's Campaign() = %v", err)
	}
	if d := (<-campaigned).Sub(resigned); d > time.Second {
		t.Errorf("b elected %v after a's Resign; want at once", d)
	}
	l, err = a.Leader(ctx)
	if err != nil || l.Value != "host-b" || l.Fence <= first || l.Since.Before(resigned.Truncate(time.Millisecond)) {
		t.Errorf("Leader() after the Resign = %+v, %v; want host-b, a fence above %d, elected after the Resign", l, err, first)
	}
	if a.IsLeader() || !b.IsLeader() {
		t.Errorf("IsLeader() = %v, %v; want false, true", a.IsLeader(), b.IsLeader())
	}
}

// Observe sends the current leader, then each new one, each once, and
// closes when ctx ends.
func TestElection_observe(t *testing.T) {
	_, cs := miniClients(t, 3)
	ctx := context.Background()
	a, b := mustElection(t, cs[0], "scheduler"), mustElection(t, cs[1], "scheduler")
	if err := a.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	octx, cancel := context.WithCancel(ctx)
	leaders := mustElection(t, cs[2], "scheduler").Observe(octx)
	first := recv(t, leaders)
	if first.Value != "a" || first.Fence == 0 {
		t.Errorf("first leader observed = %+v; want a, with a fence", first)
	}
	go func() { _ = b.Campaign(ctx, "b") }()
	time.Sleep(100 * time.Millisecond)
	elected := time.Now()
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if l := recv(t, leaders); l.Value != "b" || l.Fence <= first.Fence {
		t.Errorf("next leader observed = %+v; want b, a fence above %d", l, first.Fence)
	}
	if d := time.Since(elected); d > time.Second {
		t.Errorf("new leader observed after %v; want within a second", d)
	}
	select {
	case l := <-leaders:
		t.Errorf("observed %+v again; want each leader once", l)
	case <-time.After(1500 * time.Millisecond): // more than a tick
	}
	cancel()
	for l := range leaders {
		t.Errorf("observed %+v after ctx ended", l)
	}
}

// Lead runs fn while leading, cancels fn's ctx when leadership is lost and
// reports ErrLost; it resigns when fn returns.
func TestElection_lead(t *testing.T) {
	mr, cs := miniClients(t, 1, uncomplicated.WithTimeout(300*time.Millisecond))
	ctx := context.Background()
	e := mustElection(t, cs[0], "scheduler")
	err := e.Lead(ctx, "a", func(ctx context.Context) error {
		if !e.IsLeader() {
			t.Error("IsLeader() inside fn = false")
		}
		return nil
	})
	if err != nil || e.IsLeader() || mr.Exists(e.Name()) {
		t.Errorf("Lead() = %v, IsLeader %v, key exists %v; want nil, false, false", err, e.IsLeader(), mr.Exists(e.Name()))
	}
	err = e.Lead(ctx, "a", func(ctx context.Context) error {
		mr.Set(e.Name(), "someone else") // taken from it
		return causeWithin(ctx, 5*time.Second)
	})
	if !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("Lead() with leadership lost = %v; want ErrLost", err)
	}
	err = e.Lead(ctx, "a", func(ctx context.Context) error {
		mr.Set(e.Name(), "someone else")
		<-ctx.Done()
		select {
		case <-e.Lost():
		default:
			t.Error("Lost() open inside fn after leadership was lost")
		}
		if e.IsLeader() {
			t.Error("IsLeader() inside fn after leadership was lost")
		}
		return nil
	})
	if !errors.Is(err, uncomplicated.ErrLost) {
		t.Errorf("Lead() = %v; want ErrLost", err)
	}
}

// Lead calls on one Election run one after the other, never two fns at
// once; a Resign while fn runs cancels fn's ctx.
func TestElection_leadOneAtATime(t *testing.T) {
	_, cs := miniClients(t, 1)
	e := mustElection(t, cs[0], "scheduler")
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.Lead(context.Background(), "a", func(context.Context) error {
				n := inside.Add(1)
				defer inside.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(50 * time.Millisecond)
				return nil
			})
			if err != nil {
				t.Errorf("Lead() = %v", err)
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d fns ran at once; want 1", most.Load())
	}
	err := e.Lead(context.Background(), "a", func(ctx context.Context) error {
		if err := e.Resign(context.Background()); err != nil {
			t.Errorf("Resign() inside fn = %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Error("fn's ctx not cancelled by the Resign")
		}
		return nil
	})
	if err != nil {
		t.Errorf("Lead() with fn resigning = %v; want nil", err)
	}
}

// Closing the Client ends the leadership: the Election resigns, and
// another campaigner is elected at once.
func TestElection_closeResigns(t *testing.T) {
	_, cs := miniClients(t, 2)
	ctx := context.Background()
	a, b := mustElection(t, cs[0], "scheduler"), mustElection(t, cs[1], "scheduler")
	if err := a.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Campaign(ctx, "b") }()
	time.Sleep(100 * time.Millisecond)
	if err := cs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if l, err := b.Leader(ctx); err != nil || l.Value != "b" { // Close waited for the resignation
		t.Errorf("Leader() as Close returned = %+v, %v; want b", l, err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("b's Campaign() after a's Client closed = %v", err)
	}
	if a.IsLeader() {
		t.Error("a's IsLeader() after its Client closed = true")
	}
}

// Observers report when a leader was elected, not when it began to
// campaign, also when they read it between its election and its
// announcement.
func TestElection_observedSince(t *testing.T) {
	_, cs := miniClients(t, 3, uncomplicated.WithTimeout(100*time.Millisecond)) // 1 ms ticks
	ctx := context.Background()
	for i := range 5 {
		name := "scheduler" + strconv.Itoa(i)
		a, b := mustElection(t, cs[0], name), mustElection(t, cs[1], name)
		if err := a.Campaign(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		octx, cancel := context.WithCancel(ctx)
		leaders := mustElection(t, cs[2], name).Observe(octx)
		recv(t, leaders)
		campaigned := make(chan error, 1)
		go func() { campaigned <- b.Campaign(ctx, "b") }()
		time.Sleep(200 * time.Millisecond) // b campaigns for a while
		resigned := time.Now().Truncate(time.Millisecond)
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if l := recv(t, leaders); l.Value != "b" || l.Since.Before(resigned) {
			t.Errorf("round %d: observed %+v; want b, elected at or after the Resign at %v", i, l, resigned)
		}
		if err := recv(t, campaigned); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := b.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// An Election and a Mutex of the same name do not exclude each other.
func TestElection_ownKeySpace(t *testing.T) {
	_, cs := miniClients(t, 1)
	ctx := context.Background()
	e := mustElection(t, cs[0], "scheduler")
	m, err := uncomplicated.New(cs[0], uncomplicated.Named("scheduler"))
	if err != nil {
		t.Fatal(err)
	}
	mustLock(t, m)
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := e.Campaign(cctx, "a"); err != nil {
		t.Fatalf("Campaign() beside a Mutex of the same name = %v", err)
	}
	if _, err := uncomplicated.New(cs[0], electionTyped{"scheduler"}); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("New() of a lock named %s = %v; want ErrInvalidArgument", e.Name(), err)
	}
	if _, err := uncomplicated.New(cs[0], uncomplicated.Named("election:scheduler"), uncomplicated.WithGemNames()); !errors.Is(err, uncomplicated.ErrInvalidArgument) {
		t.Errorf("New() of the gem name election:scheduler = %v; want ErrInvalidArgument", err)
	}
}

// electionTyped is an object whose lock would be named as an election's.
type electionTyped struct{ id string }

func (o electionTyped) ID() string     { return o.id }
func (electionTyped) LockType() string { return "election" }

// Observers hear a new leader's announcement: on the mock clock, which
// never moves here, no tick could have shown it to them.
func TestElection_observeWokenByAnnouncement(t *testing.T) {
	env := uncomplicatedtest.New(t)
	ctx := context.Background()
	a, b := mustElection(t, env.Client, "scheduler"), mustElection(t, env.NewClient(), "scheduler")
	if err := a.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	leaders := mustElection(t, env.NewClient(), "scheduler").Observe(octx)
	first := recv(t, leaders)
	if first.Value != "a" {
		t.Fatalf("first leader observed = %+v; want a", first)
	}
	done := make(chan error, 1)
	go func() { done <- b.Campaign(ctx, "b") }()
	env.AwaitWaiters(1)
	time.Sleep(50 * time.Millisecond) // the observer sleeps on its timer
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	if l := recv(t, leaders); l.Value != "b" || l.Fence <= first.Fence {
		t.Errorf("leader observed = %+v; want b, a fence above %d", l, first.Fence)
	}
}

// An Election's lease is 15s unless WithLease, on the Election or its
// Client, sets one, or twice the timeout is shorter: a dead leader makes
// way within it.
func TestElection_defaultLease(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client []uncomplicated.Option
		opts   []uncomplicated.Option
		want   time.Duration
	}{
		{"defaults", nil, nil, 15 * time.Second},
		{"short timeout", nil, []uncomplicated.Option{uncomplicated.WithTimeout(2 * time.Second)}, 4 * time.Second},
		{"lease given", nil, []uncomplicated.Option{uncomplicated.WithLease(time.Minute)}, time.Minute},
		{"lease given to the Client", []uncomplicated.Option{uncomplicated.WithLease(time.Minute)}, nil, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr, cs := miniClients(t, 1, tc.client...)
			e := mustElection(t, cs[0], "scheduler", tc.opts...)
			if err := e.Campaign(context.Background(), "host-a"); err != nil {
				t.Fatal(err)
			}
			if got := mr.TTL(e.Name()); got != tc.want {
				t.Errorf("the leader's key lives %v; want %v", got, tc.want)
			}
		})
	}
	// A Client's auto-refresh period too slow for the default lease gives
	// way to a third of it: the leader keeps its lease.
	mr, cs := miniClients(t, 1, uncomplicated.WithAutoRefresh(time.Minute))
	e := mustElection(t, cs[0], "scheduler")
	if err := e.Campaign(context.Background(), "host-a"); err != nil {
		t.Fatal(err)
	}
	if got := mr.TTL(e.Name()); got != 15*time.Second {
		t.Errorf("under a Client's 1m auto-refresh, the leader's key lives %v; want 15s", got)
	}
}
