package uncomplicatedotel_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedotel"
)

// mutex is the attributes of the metrics without an outcome of the
// order's Mutex.
var mutex = attrs(inspect.KindMutex, "")

// A second Lock waits 2s, counted among the waiters, until the first
// Unlock hands it the lock. Its ticks stay under 300ms, so that its last
// attempt is within half a claim of the hand-off, which it then trusts
// (a waiter that last tried earlier tries again, and acquires).
func TestMetrics_contended(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	first, second := r.mutex(t), r.mutex(t, uncomplicated.WithTicks(1000))
	if err := first.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	done := r.lockAsync(t, second)
	if got := r.count(t, uncomplicatedotel.MetricWaiters, mutex); got != 1 {
		t.Errorf("%s while the second waits = %d; want 1", uncomplicatedotel.MetricWaiters, got)
	}
	r.Advance(2 * time.Second)
	if err := first.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("second Lock() = %v", err)
	}

	if got := r.count(t, uncomplicatedotel.MetricWaiters, mutex); got != 0 {
		t.Errorf("%s after the hand-off = %d; want 0", uncomplicatedotel.MetricWaiters, got)
	}
	for _, c := range []struct {
		outcome   observe.Outcome
		waitCount uint64
		waitSum   float64
	}{
		{observe.Acquired, 1, 0},
		{observe.HandedOff, 1, 2},
	} {
		a := attrs(inspect.KindMutex, c.outcome)
		if got := r.count(t, uncomplicatedotel.MetricAcquisitions, a); got != 1 {
			t.Errorf("%s{%s} = %d; want 1", uncomplicatedotel.MetricAcquisitions, c.outcome, got)
		}
		if n, sum := r.histogram(t, uncomplicatedotel.MetricWaitDuration, a); n != c.waitCount || sum != c.waitSum {
			t.Errorf("%s{%s} count, sum = %d, %v; want %d, %v", uncomplicatedotel.MetricWaitDuration, c.outcome, n, sum, c.waitCount, c.waitSum)
		}
	}
	if n, sum := r.histogram(t, uncomplicatedotel.MetricHoldDuration, mutex); n != 1 || sum != 2 {
		t.Errorf("%s count, sum = %d, %v; want 1, 2", uncomplicatedotel.MetricHoldDuration, n, sum)
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatalf("second Unlock() = %v", err)
	}
}

// A Do that waited stops counting among the waiters once it has the
// lock, before fn runs.
func TestMetrics_waitersDuringDo(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	holder, waiter := r.mutex(t), r.mutex(t)
	if err := holder.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	running, finish := make(chan struct{}), make(chan struct{})
	done := r.waitFor(t, waiter, func() error {
		return waiter.Do(ctx, func(context.Context) error {
			close(running)
			<-finish
			return nil
		})
	})
	if got := r.count(t, uncomplicatedotel.MetricWaiters, mutex); got != 1 {
		t.Errorf("%s while Do waits = %d; want 1", uncomplicatedotel.MetricWaiters, got)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	recv(t, running)
	if got := r.count(t, uncomplicatedotel.MetricWaiters, mutex); got != 0 {
		t.Errorf("%s while fn runs = %d; want 0", uncomplicatedotel.MetricWaiters, got)
	}
	close(finish)
	if err := recv(t, done); err != nil {
		t.Fatalf("Do() = %v", err)
	}
}

// A hold shows in the hold histogram once it is released, for how long it
// lasted.
func TestMetrics_holdTime(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	m := r.mutex(t)
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	r.Advance(90 * time.Second)
	if n, _ := r.histogram(t, uncomplicatedotel.MetricHoldDuration, mutex); n != 0 {
		t.Errorf("%s count while held = %d; want 0", uncomplicatedotel.MetricHoldDuration, n)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if n, sum := r.histogram(t, uncomplicatedotel.MetricHoldDuration, mutex); n != 1 || sum != 90 {
		t.Errorf("%s count, sum = %d, %v; want 1, 90", uncomplicatedotel.MetricHoldDuration, n, sum)
	}
}

// A TryLock that finds the lock held is busy, at once, and never waits.
func TestMetrics_busy(t *testing.T) {
	busy := attrs(inspect.KindMutex, observe.Busy)
	ctx := context.Background()
	r := newRig(t)
	holder, other := r.mutex(t), r.mutex(t)
	if err := holder.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock() = %v, %v; want false, nil", ok, err)
	}
	if got := r.count(t, uncomplicatedotel.MetricAcquisitions, busy); got != 1 {
		t.Errorf("%s{busy} = %d; want 1", uncomplicatedotel.MetricAcquisitions, got)
	}
	if n, sum := r.histogram(t, uncomplicatedotel.MetricWaitDuration, busy); n != 1 || sum != 0 {
		t.Errorf("%s{busy} count, sum = %d, %v; want 1, 0", uncomplicatedotel.MetricWaitDuration, n, sum)
	}
	if got := r.count(t, uncomplicatedotel.MetricWaiters, mutex); got != 0 {
		t.Errorf("%s = %d; want 0", uncomplicatedotel.MetricWaiters, got)
	}
}

// A hold whose key is deleted is found lost by Refresh, and counted once,
// though Unlock finds it lost again; the Lock's span, ended long before,
// does not show it.
func TestMetrics_lost(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	m := r.mutex(t)
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	r.Redis.Del(m.Name())
	if err := m.Refresh(ctx); !errors.Is(err, uncomplicated.ErrLost) {
		t.Fatalf("Refresh() = %v; want ErrLost", err)
	}
	if got := r.count(t, uncomplicatedotel.MetricLost, mutex); got != 1 {
		t.Errorf("%s after Refresh = %d; want 1", uncomplicatedotel.MetricLost, got)
	}
	if err := m.Unlock(ctx); !errors.Is(err, uncomplicated.ErrNotHeld) {
		t.Fatalf("Unlock() = %v; want ErrNotHeld", err)
	}
	if got := r.count(t, uncomplicatedotel.MetricLost, mutex); got != 1 {
		t.Errorf("%s after Unlock = %d; want 1", uncomplicatedotel.MetricLost, got)
	}
	if n, _ := r.histogram(t, uncomplicatedotel.MetricHoldDuration, mutex); n != 1 {
		t.Errorf("%s count = %d; want 1", uncomplicatedotel.MetricHoldDuration, n)
	}
	if s := r.span(t, "uncomplicated.Lock", observe.Acquired); len(s.Events()) != 0 {
		t.Errorf("Lock span events %v; want none", eventNames(s))
	}
}

// Both histograms count from a millisecond to ten minutes.
func TestMetrics_buckets(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	m := r.mutex(t)
	if err := m.Do(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Do() = %v", err)
	}
	want := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	metrics := r.metrics(t)
	for _, name := range []string{uncomplicatedotel.MetricWaitDuration, uncomplicatedotel.MetricHoldDuration} {
		h, ok := metrics[name].(metricdata.Histogram[float64])
		if !ok || len(h.DataPoints) != 1 {
			t.Fatalf("%s = %#v; want a Histogram[float64] with one point", name, metrics[name])
		}
		if got := h.DataPoints[0].Bounds; !slices.Equal(got, want) {
			t.Errorf("%s bounds %v; want %v", name, got, want)
		}
	}
}
