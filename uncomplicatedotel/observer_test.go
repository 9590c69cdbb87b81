package uncomplicatedotel_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	global "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedotel"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// orderID is the ID of every test's lock: no metric attribute may show it.
const orderID = 4242

type order struct{ N int64 }

func (o order) ID() int64 { return o.N }

// orderType is the type part of the name of an order's lock.
const orderType = "uncomplicatedotel_test.order"

// A rig is an Env whose Client has an Observer recording to a manual
// reader and a span recorder. When the test ends, it checks that no
// metric shows the lock's ID, and no attribute but the span's lock name,
// and that no call is left counted as waiting.
type rig struct {
	*uncomplicatedtest.Env
	obs    observe.Observer
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
}

func newRig(t *testing.T, opts ...uncomplicated.Option) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	r.obs = uncomplicatedotel.NewObserver(
		uncomplicatedotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))),
		uncomplicatedotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))))
	r.Env = uncomplicatedtest.New(t, append([]uncomplicated.Option{uncomplicated.WithObserver(r.obs)}, opts...)...)
	t.Cleanup(func() {
		r.checkNoID(t)
		waiters, _ := r.metrics(t)[uncomplicatedotel.MetricWaiters].(metricdata.Sum[int64])
		for _, p := range waiters.DataPoints {
			if p.Value != 0 {
				t.Errorf("%s = %d at the end; want 0", uncomplicatedotel.MetricWaiters, p.Value)
			}
		}
	})
	return r
}

// mutex returns the Mutex of the order's lock on the rig's Client.
func (r *rig) mutex(t *testing.T, opts ...uncomplicated.Option) *uncomplicated.Mutex {
	t.Helper()
	m, err := uncomplicated.New(r.Client, order{orderID}, opts...)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return m
}

// lockAsync starts m.Lock and returns once it waits in the lock's queue,
// so that an Unlock hands it the lock.
func (r *rig) lockAsync(t *testing.T, m *uncomplicated.Mutex) <-chan error {
	t.Helper()
	return r.waitFor(t, m, func() error { return m.Lock(context.Background()) })
}

// waitFor starts call, which acquires m, and returns once it waits in
// the lock's queue.
func (r *rig) waitFor(t *testing.T, m *uncomplicated.Mutex, call func() error) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	r.AwaitWaiters(1)
	if n, _ := r.Redis.List("lock:queue:{" + m.Name() + "}"); len(n) != 1 {
		t.Fatalf("%d waiters in the queue; want 1", len(n))
	}
	return done
}

// recv returns what ch gives, failing the test after ten seconds.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came in 10s")
		panic("unreachable")
	}
}

// attrs is the attributes of a metric of a lock of kind on an order:
// with the outcome, unless it is "".
func attrs(kind inspect.Kind, outcome observe.Outcome) []attribute.KeyValue {
	a := []attribute.KeyValue{uncomplicatedotel.KeyKind.String(string(kind)), uncomplicatedotel.KeyType.String(orderType)}
	if outcome != "" {
		a = append(a, uncomplicatedotel.KeyOutcome.String(string(outcome)))
	}
	return a
}

// metrics returns what the reader has now, by instrument name.
func (r *rig) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	return collect(t, r.reader)
}

func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect() = %v", err)
	}
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != uncomplicatedotel.ScopeName {
			t.Errorf("scope %q; want %q", sm.Scope.Name, uncomplicatedotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	return got
}

// count returns the value of the point of the counter name with attrs;
// 0 when it has none.
func (r *rig) count(t *testing.T, name string, attrs []attribute.KeyValue) int64 {
	t.Helper()
	return countIn(t, r.metrics(t), name, attrs)
}

func countIn(t *testing.T, metrics map[string]metricdata.Aggregation, name string, attrs []attribute.KeyValue) int64 {
	t.Helper()
	set := attribute.NewSet(attrs...)
	switch data := metrics[name].(type) {
	case metricdata.Sum[int64]:
		for _, p := range data.DataPoints {
			if p.Attributes.Equals(&set) {
				return p.Value
			}
		}
	case nil: // nothing recorded yet
	default:
		t.Fatalf("%s is a %T; want a Sum[int64]", name, data)
	}
	return 0
}

// histogram returns the count and the sum of the point of the histogram
// name with attrs; 0, 0 when it has none.
func (r *rig) histogram(t *testing.T, name string, attrs []attribute.KeyValue) (uint64, float64) {
	t.Helper()
	set := attribute.NewSet(attrs...)
	switch data := r.metrics(t)[name].(type) {
	case metricdata.Histogram[float64]:
		for _, p := range data.DataPoints {
			if p.Attributes.Equals(&set) {
				return p.Count, p.Sum
			}
		}
	case nil:
	default:
		t.Fatalf("%s is a %T; want a Histogram[float64]", name, data)
	}
	return 0, 0
}

// span returns the one ended span named name whose outcome is outcome.
func (r *rig) span(t *testing.T, name string, outcome observe.Outcome) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if v, _ := attr(s.Attributes(), uncomplicatedotel.KeyOutcome); s.Name() == name && v.AsString() == string(outcome) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d ended spans %s with outcome %s; want 1", len(found), name, outcome)
	}
	return found[0]
}

// attr returns the value of key in kvs, and whether it is there.
func attr(kvs []attribute.KeyValue, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// eventNames returns the names of the span's events.
func eventNames(s sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
	}
	return names
}

// checkNoID checks that no metric attribute holds the lock's ID, nor any
// span attribute or event attribute but the lock's name.
func (r *rig) checkNoID(t *testing.T) {
	t.Helper()
	id := strconv.Itoa(orderID)
	for name, data := range r.metrics(t) {
		for _, set := range pointSets(data) {
			for _, kv := range set.ToSlice() {
				if kv.Value.Type() == attribute.STRING && strings.Contains(kv.Value.Emit(), id) { // a number, such as a fence, may hold its digits by chance
					t.Errorf("%s has %s = %q, with the lock's ID", name, kv.Key, kv.Value.Emit())
				}
			}
		}
	}
	for _, s := range r.spans.Ended() {
		kvs := s.Attributes()
		for _, e := range s.Events() {
			kvs = append(kvs, e.Attributes...)
		}
		for _, kv := range kvs {
			if kv.Key != uncomplicatedotel.KeyName && kv.Value.Type() == attribute.STRING && strings.Contains(kv.Value.Emit(), id) {
				t.Errorf("span %s has %s = %q, with the lock's ID", s.Name(), kv.Key, kv.Value.Emit())
			}
		}
	}
}

// pointSets returns the attribute sets of the points of data.
func pointSets(data metricdata.Aggregation) []attribute.Set {
	var sets []attribute.Set
	switch data := data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range data.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range data.DataPoints {
			sets = append(sets, p.Attributes)
		}
	}
	return sets
}

// Shared behaviour: each primitive's Do shows as one acquisition, one
// hold and one span, with its kind.
func TestObserver_primitives(t *testing.T) {
	fn := func(context.Context) error { return nil }
	cases := []struct {
		name string
		kind inspect.Kind
		span string
		do   func(*uncomplicated.Client) error
	}{
		{"Mutex", inspect.KindMutex, "uncomplicated.Do", func(c *uncomplicated.Client) error {
			m, err := uncomplicated.New(c, order{orderID})
			return errors.Join(err, m.Do(context.Background(), fn))
		}},
		{"RWMutex", inspect.KindRWMutex, "uncomplicated.RDo", func(c *uncomplicated.Client) error {
			rw, err := uncomplicated.NewRW(c, order{orderID})
			return errors.Join(err, rw.RDo(context.Background(), fn))
		}},
		{"Semaphore", inspect.KindSemaphore, "uncomplicated.Do", func(c *uncomplicated.Client) error {
			s, err := uncomplicated.NewSemaphore(c, order{orderID}, 2)
			return errors.Join(err, s.Do(context.Background(), fn))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if err := tc.do(r.Client); err != nil {
				t.Fatalf("Do() = %v", err)
			}
			if got := r.count(t, uncomplicatedotel.MetricAcquisitions, attrs(tc.kind, observe.Acquired)); got != 1 {
				t.Errorf("%s{acquired} = %d; want 1", uncomplicatedotel.MetricAcquisitions, got)
			}
			if n, _ := r.histogram(t, uncomplicatedotel.MetricHoldDuration, attrs(tc.kind, "")); n != 1 {
				t.Errorf("%s count = %d; want 1", uncomplicatedotel.MetricHoldDuration, n)
			}
			s := r.span(t, tc.span, observe.Acquired)
			if v, _ := attr(s.Attributes(), uncomplicatedotel.KeyKind); v.AsString() != string(tc.kind) {
				t.Errorf("span %s = %q; want %q", uncomplicatedotel.KeyKind, v.AsString(), tc.kind)
			}
		})
	}
}

// A lock of Client.Named has the type "", recorded as it is.
func TestObserver_plainName(t *testing.T) {
	r := newRig(t)
	m, err := uncomplicated.New(r.Client, uncomplicated.Named("nightly-report"))
	if err != nil {
		t.Fatalf("Named() = %v", err)
	}
	if err := m.Do(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Do() = %v", err)
	}
	want := []attribute.KeyValue{uncomplicatedotel.KeyKind.String("mutex"), uncomplicatedotel.KeyType.String(""), uncomplicatedotel.KeyOutcome.String("acquired")}
	if got := r.count(t, uncomplicatedotel.MetricAcquisitions, want); got != 1 {
		t.Errorf("%s{type=\"\"} = %d; want 1", uncomplicatedotel.MetricAcquisitions, got)
	}
}

// Without options, NewObserver uses the global providers.
func TestNewObserver_globalProviders(t *testing.T) {
	// The global providers cannot get their defaults back; no other test
	// uses them.
	reader, spans := sdkmetric.NewManualReader(), tracetest.NewSpanRecorder()
	global.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	global.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))

	obs := uncomplicatedotel.NewObserver(uncomplicatedotel.WithMeterProvider(nil), uncomplicatedotel.WithTracerProvider(nil))
	_, o := obs.Begin(context.Background(), observe.Call{Op: "Lock", Kind: string(inspect.KindMutex), Type: orderType, Name: "lock:x"})
	o.Acquired(observe.Acquired, 1, 0)
	o.End(nil)

	if got := countIn(t, collect(t, reader), uncomplicatedotel.MetricAcquisitions, attrs(inspect.KindMutex, observe.Acquired)); got != 1 {
		t.Errorf("%s{acquired} = %d; want 1", uncomplicatedotel.MetricAcquisitions, got)
	}
	ended := spans.Ended()
	if len(ended) != 1 || ended[0].Name() != "uncomplicated.Lock" || ended[0].InstrumentationScope().Name != uncomplicatedotel.ScopeName {
		t.Fatalf("ended spans %v; want uncomplicated.Lock of scope %s", ended, uncomplicatedotel.ScopeName)
	}
}

// failingMeter fails to make any histogram or counter.
type failingMeter struct{ noop.Meter }

var errNoInstrument = errors.New("no instrument")

func (failingMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return nil, errNoInstrument
}

func (failingMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return nil, errNoInstrument
}

func (failingMeter) Int64UpDownCounter(string, ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	return nil, errNoInstrument
}

type failingMeters struct{ noop.MeterProvider }

func (failingMeters) Meter(string, ...metric.MeterOption) metric.Meter { return failingMeter{} }

// A Meter that fails makes NewObserver hand the errors to otel.Handle,
// and the Observer record nothing, without a panic.
func TestNewObserver_meterFails(t *testing.T) {
	var mu sync.Mutex
	var handled []error
	// The global handler cannot get its default back; no other test
	// makes errors.
	global.SetErrorHandler(global.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		handled = append(handled, err)
		mu.Unlock()
	}))
	obs := uncomplicatedotel.NewObserver(uncomplicatedotel.WithMeterProvider(failingMeters{}))
	mu.Lock()
	if len(handled) != 5 || !errors.Is(handled[0], errNoInstrument) {
		t.Errorf("handled %v; want 5 times %v", handled, errNoInstrument)
	}
	mu.Unlock()
	_, o := obs.Begin(context.Background(), observe.Call{Op: "Lock", Kind: string(inspect.KindMutex), Name: "lock:x"})
	o.Waiting()
	o.Acquired(observe.Acquired, 1, time.Second)
	o.Lost("gone")
	o.Released(time.Second)
	o.End(nil)
}

// An Observation is safe for concurrent use: a hold's loss is found in a
// background goroutine while the caller ends the call. Each loss counts
// once, and shows on the span only if it came before End.
func TestObservation_concurrent(t *testing.T) {
	reader, spans := sdkmetric.NewManualReader(), tracetest.NewSpanRecorder()
	obs := uncomplicatedotel.NewObserver(
		uncomplicatedotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		uncomplicatedotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))))
	const calls = 100
	var wg sync.WaitGroup
	for range calls {
		_, o := obs.Begin(context.Background(), observe.Call{Op: "Lock", Kind: string(inspect.KindMutex), Type: orderType, Name: "lock:x"})
		o.Waiting()
		o.Acquired(observe.HandedOff, 1, time.Second)
		wg.Add(2)
		go func() {
			defer wg.Done()
			o.Lost("gone")
			o.Lost("gone again")
		}()
		go func() {
			defer wg.Done()
			o.End(nil)
			o.Released(time.Second)
		}()
	}
	wg.Wait()
	metrics := collect(t, reader)
	if got := countIn(t, metrics, uncomplicatedotel.MetricLost, attrs(inspect.KindMutex, "")); got != calls {
		t.Errorf("%s = %d; want %d", uncomplicatedotel.MetricLost, got, calls)
	}
	if got := countIn(t, metrics, uncomplicatedotel.MetricWaiters, attrs(inspect.KindMutex, "")); got != 0 {
		t.Errorf("%s = %d; want 0", uncomplicatedotel.MetricWaiters, got)
	}
	if got := len(spans.Ended()); got != calls {
		t.Fatalf("%d spans ended; want %d", got, calls)
	}
	for _, s := range spans.Ended() {
		if n := len(s.Events()); n > 1 {
			t.Errorf("span has events %v; want at most one lost", eventNames(s))
		}
	}
}
