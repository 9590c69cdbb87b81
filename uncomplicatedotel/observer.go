// Package uncomplicatedotel turns the calls of uncomplicated's locks into OpenTelemetry
// metrics and spans. Give a Client, or one lock, its Observer:
//
//	obs := uncomplicatedotel.NewObserver() // the global MeterProvider and TracerProvider
//	client := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithObserver(obs))
//
// Metrics, in seconds where they are durations, each with the attributes
// uncomplicated.lock.kind ("mutex", "rwmutex", "semaphore") and
// uncomplicated.lock.type (the type part of the lock's name, such as
// "orders.Order", or "" for a lock of Named), never the lock's name
// or ID, which would make a series per lock:
//
//   - uncomplicated.lock.wait.duration, a histogram: how long each acquiring
//     call waited, until it got the lock or gave up, with its outcome
//     (uncomplicated.outcome: "acquired", "handed_off", "taken_over",
//     "busy", "stale", "ctx_ended", "error");
//   - uncomplicated.lock.hold.duration, a histogram: how long each hold
//     lasted, from its acquisition to its release;
//   - uncomplicated.lock.acquisitions, a counter of the acquiring calls by
//     outcome;
//   - uncomplicated.lock.lost, a counter of the holds found lost;
//   - uncomplicated.lock.waiters, an up-down counter of the calls waiting
//     now.
//
// Spans: one per acquiring call, named "uncomplicated." and the method
// ("uncomplicated.Lock", "uncomplicated.Do"), of kind Internal. Do's span
// covers fn, and is the parent of fn's spans. See NewObserver.
//
// The package is named otel, like go.opentelemetry.io/otel: a file that
// imports both names one of them, as in uotel
// "github.com/uncomplicated-mutex/uncomplicated/uncomplicatedotel".
package uncomplicatedotel

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// ScopeName is the name of the instrumentation scope of the Observer's
// Meter and Tracer: this module's path.
const ScopeName = "github.com/uncomplicated-mutex/uncomplicated/uncomplicatedotel"

// The attribute keys of the metrics and the spans.
const (
	// KeyKind is the lock's kind, on every metric and span.
	KeyKind = attribute.Key("uncomplicated.lock.kind")
	// KeyType is the type part of the lock's name (observe.Call's
	// Type), on every metric and span: "" for a lock of Named, which
	// no lock of an object can have, as its type part is never empty.
	KeyType = attribute.Key("uncomplicated.lock.type")
	// KeyOutcome is how an acquisition ended, an observe.Outcome, on
	// the wait histogram, the acquisitions counter and the span.
	KeyOutcome = attribute.Key("uncomplicated.outcome")
	// KeyName is the lock's full name, on spans only.
	KeyName = attribute.Key("uncomplicated.lock.name")
	// KeyFence is the fence of the hold a call got, on spans only.
	KeyFence = attribute.Key("uncomplicated.lock.fence")
	// KeyLostReason says why a hold was found lost, on the span's "lost"
	// event.
	KeyLostReason = attribute.Key("uncomplicated.lost.reason")
)

// An Option configures NewObserver.
type Option func(*config)

// config is what the options fill; nil providers mean the global ones.
type config struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
}

// WithMeterProvider sets where the metrics go. Default, or nil: the
// global MeterProvider, otel.GetMeterProvider(), which sends them to the
// provider that otel.SetMeterProvider sets, also later.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meters = mp }
}

// WithTracerProvider sets where the spans go. Default, or nil: the global
// TracerProvider, otel.GetTracerProvider(), which sends them to the
// provider that otel.SetTracerProvider sets, also later.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracers = tp }
}

// observer is the Observer of NewObserver.
type observer struct {
	metrics instruments
	tracer  trace.Tracer
}

var (
	_ observe.Observer    = (*observer)(nil)
	_ observe.Observation = (*observation)(nil)
)

// NewObserver returns an Observer that records the locks' calls as the
// metrics and spans of the package doc, to the providers of opts, under
// the instrumentation scope ScopeName. It makes its instruments once, now.
// When the Meter returns an error for one, NewObserver hands the error to
// otel.Handle (the global ErrorHandler, which logs it by default) and goes
// on, never panicking: it keeps the instrument the Meter returned with the
// error (the SDK's still records), or, when that is nil, uses one that
// records nothing.
//
// A span is marked Error when the call returns an error (fn's included,
// for Do), and so for the outcomes "stale", "error" and "ctx_ended": a
// caller that gave up waiting did not get the lock, and a deadline that
// runs out on a busy lock is what a trace should show; the outcome
// attribute tells them apart. It is left Unset for "busy": TryLock
// returns (false, nil), the answer it exists to give.
//
// The Observer is safe for concurrent use, and so are its Observations.
func NewObserver(opts ...Option) observe.Observer {
	cfg := config{}
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if cfg.meters == nil {
		cfg.meters = otel.GetMeterProvider()
	}
	if cfg.tracers == nil {
		cfg.tracers = otel.GetTracerProvider()
	}
	return &observer{
		metrics: newInstruments(cfg.meters.Meter(ScopeName)),
		tracer:  cfg.tracers.Tracer(ScopeName),
	}
}

// Begin starts the call's span, and returns ctx with it and the call's
// Observation.
func (ob *observer) Begin(ctx context.Context, call observe.Call) (context.Context, observe.Observation) {
	kind, typ := KeyKind.String(call.Kind), KeyType.String(call.Type)
	ctx, span := ob.startSpan(ctx, call, kind, typ)
	return ctx, &observation{
		metrics: &ob.metrics,
		ctx:     trace.ContextWithSpan(context.Background(), span),
		kind:    kind,
		typ:     typ,
		lock:    metric.WithAttributeSet(attribute.NewSet(kind, typ)),
		span:    span,
	}
}

// An observation is one call's Observation. The calls of a hold come from
// several goroutines: a loss may be found by a background one while the
// caller's goroutine ends the call.
type observation struct {
	metrics *instruments
	// ctx carries the span, for exemplars; not the caller's ctx, which a
	// hold may outlive.
	ctx       context.Context
	kind, typ attribute.KeyValue
	lock      metric.MeasurementOption // kind and typ, every metric's attributes
	span      trace.Span

	mu      sync.Mutex // guards the fields below
	waiting bool       // counted among the waiters
	lost    bool       // a loss was counted
	ended   bool       // End ended the span
}

// Waiting counts the call among the waiters.
func (o *observation) Waiting() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.waiting {
		o.waiting = true
		o.metrics.waiters.Add(o.ctx, 1, o.lock)
	}
}

// Acquired records the outcome and the wait, and the fence on the span.
func (o *observation) Acquired(outcome observe.Outcome, fence uint64, waited time.Duration) {
	o.doneWaiting()
	o.metrics.acquisition(o.ctx, o.kind, o.typ, outcome, waited)
	acquiredSpan(o.span, outcome, fence)
}

// NotAcquired records the outcome and the wait.
func (o *observation) NotAcquired(outcome observe.Outcome, waited time.Duration, err error) {
	o.doneWaiting()
	o.metrics.acquisition(o.ctx, o.kind, o.typ, outcome, waited)
	notAcquiredSpan(o.span, outcome, err)
}

// Lost counts the loss, once however often it is reported, and adds it to
// the span if the call has not ended.
func (o *observation) Lost(why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lost {
		return
	}
	o.lost = true
	o.metrics.lost.Add(o.ctx, 1, o.lock)
	if !o.ended {
		lostSpan(o.span, why)
	}
}

// Released records how long the hold lasted.
func (o *observation) Released(held time.Duration) {
	o.metrics.hold.Record(o.ctx, held.Seconds(), o.lock)
}

// End ends the span. A call still counted as waiting, which only a panic
// leaves so, stops being counted.
func (o *observation) End(err error) {
	o.doneWaiting()
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.ended {
		o.ended = true
		endSpan(o.span, err)
	}
}

// doneWaiting takes the call out of the waiters, if it was counted.
func (o *observation) doneWaiting() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.waiting {
		o.waiting = false
		o.metrics.waiters.Add(o.ctx, -1, o.lock)
	}
}
