package uncomplicatedotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// The events of a call's span.
const (
	// EventTakenOver: the call replaced a stale holder.
	EventTakenOver = "taken_over"
	// EventLost: the hold was found lost before the call ended, as while
	// Do's fn runs; with the attribute KeyLostReason.
	EventLost = "lost"
)

// spanPrefix begins the name of every span, which ends with the method:
// "uncomplicated.Lock".
const spanPrefix = "uncomplicated."

// startSpan starts the span of call on a lock of kind and typ, and
// returns ctx with it.
func (ob *observer) startSpan(ctx context.Context, call observe.Call, kind, typ attribute.KeyValue) (context.Context, trace.Span) {
	return ob.tracer.Start(ctx, spanPrefix+call.Op,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(KeyName.String(call.Name), kind, typ))
}

// acquiredSpan adds an acquisition to span: its outcome, its fence if it
// has one (a reader has none), and the event of a take-over.
func acquiredSpan(span trace.Span, outcome observe.Outcome, fence uint64) {
	span.SetAttributes(KeyOutcome.String(string(outcome)))
	if fence > 0 { // a Redis counter: it fits an int64
		span.SetAttributes(KeyFence.Int64(int64(fence)))
	}
	if outcome == observe.TakenOver {
		span.AddEvent(EventTakenOver)
	}
}

// notAcquiredSpan adds a failed acquisition to span: its outcome, and the
// Error status for a stale holder or a failure of Redis.
func notAcquiredSpan(span trace.Span, outcome observe.Outcome, err error) {
	span.SetAttributes(KeyOutcome.String(string(outcome)))
	if (outcome == observe.Stale || outcome == observe.Error) && err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
}

// lostSpan adds the loss of the hold to span, which must not have ended.
func lostSpan(span trace.Span, why string) {
	span.AddEvent(EventLost, trace.WithAttributes(KeyLostReason.String(why)))
}

// endSpan ends span, with the Error status when the call returns err.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
