package uncomplicatedotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// The names of the instruments, for views and queries. The Prometheus
// exporter shows them with '_' for '.', and the suffix "_seconds" on the
// histograms and "_total" on the two counters: uncomplicated_lock_waiters
// is a gauge.
const (
	MetricWaitDuration = "uncomplicated.lock.wait.duration"
	MetricHoldDuration = "uncomplicated.lock.hold.duration"
	MetricAcquisitions = "uncomplicated.lock.acquisitions"
	MetricLost         = "uncomplicated.lock.lost"
	MetricWaiters      = "uncomplicated.lock.waiters"
)

// durationBuckets are the bucket boundaries, in seconds, of both duration
// histograms: from a millisecond, a round trip to Redis, to ten minutes,
// twice the default timeout and so the default lease. The SDK's default
// ones, made for milliseconds, would put every wait above a second in one
// bucket.
var durationBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30, 60, 120, 300, 600,
}

// instruments are an Observer's metrics, made once by NewObserver.
type instruments struct {
	wait         metric.Float64Histogram
	hold         metric.Float64Histogram
	acquisitions metric.Int64Counter
	lost         metric.Int64Counter
	waiters      metric.Int64UpDownCounter
}

// newInstruments makes the instruments with m; see NewObserver for what
// an error does.
func newInstruments(m metric.Meter) instruments {
	i := instruments{
		wait: made(m.Float64Histogram(MetricWaitDuration, metric.WithUnit("s"),
			metric.WithDescription("How long acquiring calls waited for a lock, until they got it or gave up."),
			metric.WithExplicitBucketBoundaries(durationBuckets...))),
		hold: made(m.Float64Histogram(MetricHoldDuration, metric.WithUnit("s"),
			metric.WithDescription("How long holds of a lock lasted, from acquisition to release."),
			metric.WithExplicitBucketBoundaries(durationBuckets...))),
		acquisitions: made(m.Int64Counter(MetricAcquisitions, metric.WithUnit("{acquisition}"),
			metric.WithDescription("Acquiring calls that ended, by outcome."))),
		lost: made(m.Int64Counter(MetricLost, metric.WithUnit("{hold}"),
			metric.WithDescription("Holds found lost: expired, taken over or deleted while held."))),
		waiters: made(m.Int64UpDownCounter(MetricWaiters, metric.WithUnit("{waiter}"),
			metric.WithDescription("Acquiring calls waiting for a lock now."))),
	}
	i.orNone()
	return i
}

// made returns the instrument a Meter made, handing its error, if any, to
// otel.Handle.
func made[T any](inst T, err error) T {
	if err != nil {
		otel.Handle(err)
	}
	return inst
}

// orNone replaces each nil instrument with one that records nothing.
func (i *instruments) orNone() {
	if i.wait == nil {
		i.wait = noop.Float64Histogram{}
	}
	if i.hold == nil {
		i.hold = noop.Float64Histogram{}
	}
	if i.acquisitions == nil {
		i.acquisitions = noop.Int64Counter{}
	}
	if i.lost == nil {
		i.lost = noop.Int64Counter{}
	}
	if i.waiters == nil {
		i.waiters = noop.Int64UpDownCounter{}
	}
}

// acquisition records the end of an acquiring call on a lock of kind and
// typ: its outcome, and how long it waited.
func (i *instruments) acquisition(ctx context.Context, kind, typ attribute.KeyValue, outcome observe.Outcome, waited time.Duration) {
	attrs := metric.WithAttributeSet(attribute.NewSet(kind, typ, KeyOutcome.String(string(outcome))))
	i.acquisitions.Add(ctx, 1, attrs)
	i.wait.Record(ctx, waited.Seconds(), attrs)
}
