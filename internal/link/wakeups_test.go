package link

import (
	"context"
	"slices"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// recordingSub records what is sent on a listening connection.
type recordingSub struct{ sent []string }

func (s *recordingSub) Subscribe(c string) { s.sent = append(s.sent, "sub "+c) }

func (s *recordingSub) Unsubscribe(c string) { s.sent = append(s.sent, "unsub "+c) }

func (s *recordingSub) Ping() {}

func (s *recordingSub) Close() {}

func (s *recordingSub) Receive(ctx context.Context) (driver.Event, error) {
	<-ctx.Done()
	return driver.Event{}, ctx.Err()
}

// A Cluster ends the subscriptions to the channels of a slot that moves;
// the Client subscribes again, which reaches the slot's new master, and
// its waiters count as unheard until Redis confirms.
func TestWakeups_followsMovedSlot(t *testing.T) {
	w := NewWakeups(nil, clock.New(), 0, "lock")
	sub := &recordingSub{}
	w.conn = sub
	l := w.Listen("c", "token", false)
	w.confirm(driver.Event{Kind: driver.EventSubscribed, Channel: "c"})
	if confirmed, _, _, _ := l.State(); !confirmed {
		t.Fatal("not confirmed after the subscription")
	}
	w.confirm(driver.Event{Kind: driver.EventUnsubscribed, Channel: "c"}) // the slot moved
	if confirmed, coming, _, _ := l.State(); confirmed || !coming {
		t.Errorf("state after Redis unsubscribed = %v, %v; want unconfirmed, coming", confirmed, coming)
	}
	if want := []string{"sub c", "sub c"}; !slices.Equal(sub.sent, want) {
		t.Errorf("sent %q; want %q", sub.sent, want)
	}
	w.confirm(driver.Event{Kind: driver.EventSubscribed, Channel: "c"})
	if confirmed, _, _, _ := l.State(); !confirmed {
		t.Error("not confirmed after the new subscription")
	}

	// An unsubscription the Client asked for is only counted.
	old := MaxIdleChannels.Swap(0)
	defer MaxIdleChannels.Store(old)
	l.Close(nil) // no idle channels kept: UNSUBSCRIBE at once
	w.confirm(driver.Event{Kind: driver.EventUnsubscribed, Channel: "c"})
	if want := []string{"sub c", "sub c", "unsub c"}; !slices.Equal(sub.sent, want) {
		t.Errorf("sent %q; want %q", sub.sent, want)
	}
	if _, ok := w.chans["c"]; ok {
		t.Error("channel kept after its unsubscription was confirmed")
	}
}
