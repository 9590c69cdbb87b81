package uncomplicatedotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedotel"
)

// A holder that keeps one token for the whole timeout is stale: under
// TakeOver the waiter replaces it, and its span shows the take-over; under
// Fail the waiter's Lock fails, and its span is an error.
func TestSpans_staleHolder(t *testing.T) {
	cases := []struct {
		policy     bool
		outcome    observe.Outcome
		wantErr    error
		wantEvents []string
		wantStatus codes.Code
		wantFence  bool
	}{
		{true, observe.TakenOver, nil, []string{uncomplicatedotel.EventTakenOver}, codes.Unset, true},
		{false, observe.Stale, uncomplicated.ErrStale, nil, codes.Error, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("takeover=%v", tc.policy), func(t *testing.T) {
			ctx := context.Background()
			r := newRig(t)
			holder := r.mutex(t, uncomplicated.WithLease(0), uncomplicated.WithTimeout(time.Minute))
			if err := holder.Lock(ctx); err != nil {
				t.Fatalf("Lock() = %v", err)
			}
			waiter := r.mutex(t, uncomplicated.WithTimeout(time.Minute), uncomplicated.WithTicks(60),
				uncomplicated.WithTakeOver(tc.policy))
			done := r.lockAsync(t, waiter)
			r.Advance(time.Minute)
			if err := recv(t, done); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Lock() = %v; want %v", err, tc.wantErr)
			}

			s := r.span(t, "uncomplicated.Lock", tc.outcome)
			if got := eventNames(s); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("span events %v; want %v", got, tc.wantEvents)
			}
			if got := s.Status().Code; got != tc.wantStatus {
				t.Errorf("span status %v; want %v", got, tc.wantStatus)
			}
			if fence, ok := attr(s.Attributes(), uncomplicatedotel.KeyFence); ok != tc.wantFence || ok && uint64(fence.AsInt64()) != waiter.Fence() {
				t.Errorf("span %s = %v (set: %v); want the waiter's, %d (set: %v)", uncomplicatedotel.KeyFence, fence.AsInt64(), ok, waiter.Fence(), tc.wantFence)
			}
			a := attrs(inspect.KindMutex, tc.outcome)
			if got := r.count(t, uncomplicatedotel.MetricAcquisitions, a); got != 1 {
				t.Errorf("%s{%s} = %d; want 1", uncomplicatedotel.MetricAcquisitions, tc.outcome, got)
			}
			if n, sum := r.histogram(t, uncomplicatedotel.MetricWaitDuration, a); n != 1 || sum != 60 {
				t.Errorf("%s{%s} count, sum = %d, %v; want 1, 60", uncomplicatedotel.MetricWaitDuration, tc.outcome, n, sum)
			}
		})
	}
}

// A TryLock that finds the lock held is busy, and its span is no error:
// TryLock returned (false, nil).
func TestSpans_busy(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	holder, other := r.mutex(t), r.mutex(t)
	if err := holder.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock() = %v, %v; want false, nil", ok, err)
	}
	s := r.span(t, "uncomplicated.TryLock", observe.Busy)
	if got := s.Status().Code; got != codes.Unset {
		t.Errorf("span status %v; want Unset", got)
	}
	if _, ok := attr(s.Attributes(), uncomplicatedotel.KeyFence); ok {
		t.Errorf("span has %s; want none", uncomplicatedotel.KeyFence)
	}
}

// Do's span is the parent of fn's ctx, and shows a loss found while fn
// runs: auto-refresh finds the key gone, fn's ctx is cancelled, and Do
// returns ErrLost.
func TestSpans_doLost(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	m := r.mutex(t, uncomplicated.WithAutoRefresh(time.Second))
	running := make(chan trace.SpanContext, 1)
	done := make(chan error, 1)
	var fence uint64 // the hold's, set before running receives
	go func() {
		done <- m.Do(ctx, func(ctx context.Context) error {
			fence, _ = uncomplicated.FenceOf(ctx)
			running <- trace.SpanContextFromContext(ctx)
			<-ctx.Done()
			return nil
		})
	}()
	fnSpan := recv(t, running)
	r.Redis.Del(m.Name())
	r.Advance(time.Second) // the auto-refresh finds it gone
	if err := recv(t, done); !errors.Is(err, uncomplicated.ErrLost) {
		t.Fatalf("Do() = %v; want ErrLost", err)
	}

	s := r.span(t, "uncomplicated.Do", observe.Acquired)
	if !s.SpanContext().Equal(fnSpan) {
		t.Errorf("fn ran under span %v; want Do's, %v", fnSpan.SpanID(), s.SpanContext().SpanID())
	}
	if got := eventNames(s); !slices.Equal(got, []string{uncomplicatedotel.EventLost}) {
		t.Fatalf("span events %v; want [%s]", got, uncomplicatedotel.EventLost)
	}
	if why, _ := attr(s.Events()[0].Attributes, uncomplicatedotel.KeyLostReason); why.AsString() == "" {
		t.Errorf("lost event %s = %q; want a reason", uncomplicatedotel.KeyLostReason, why.AsString())
	}
	if got := s.Status().Code; got != codes.Error {
		t.Errorf("span status %v; want Error", got)
	}
	if name, _ := attr(s.Attributes(), uncomplicatedotel.KeyName); name.AsString() != m.Name() {
		t.Errorf("span %s = %q; want %q", uncomplicatedotel.KeyName, name.AsString(), m.Name())
	}
	if f, _ := attr(s.Attributes(), uncomplicatedotel.KeyFence); fence == 0 || f.AsInt64() != int64(fence) {
		t.Errorf("span %s = %d; want the hold's, %d", uncomplicatedotel.KeyFence, f.AsInt64(), fence)
	}
	if got := r.count(t, uncomplicatedotel.MetricLost, mutex); got != 1 {
		t.Errorf("%s = %d; want 1", uncomplicatedotel.MetricLost, got)
	}
}

// Every span is of kind Internal and named after its method.
func TestSpans_kindAndName(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	m := r.mutex(t)
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
	if ok, err := m.TryDo(ctx, func(context.Context) error { return nil }); !ok || err != nil {
		t.Fatalf("TryDo() = %v, %v; want true, nil", ok, err)
	}
	var names []string
	for _, s := range r.spans.Ended() {
		names = append(names, s.Name())
		if s.SpanKind() != trace.SpanKindInternal {
			t.Errorf("span %s is of kind %v; want Internal", s.Name(), s.SpanKind())
		}
	}
	if want := []string{"uncomplicated.Lock", "uncomplicated.TryDo"}; !slices.Equal(names, want) {
		t.Errorf("spans %v; want %v", names, want)
	}
}
