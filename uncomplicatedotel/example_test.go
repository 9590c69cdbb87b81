package uncomplicatedotel_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedotel"
)

// Order is a domain object: anything with an ID method can be locked.
type Order struct{ N int64 }

func (o Order) ID() int64 { return o.N }

// The Observer, on SDK providers, records a Do and a TryLock that finds
// the lock busy meanwhile. A program would give the MeterProvider a
// periodic reader with an exporter (or a Prometheus exporter), and the
// TracerProvider a batcher; this one reads the metrics itself.
func Example() {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tracers := sdktrace.NewTracerProvider()
	ctx := context.Background()
	defer func() { _ = meters.Shutdown(ctx); _ = tracers.Shutdown(ctx) }()
	obs := uncomplicatedotel.NewObserver(uncomplicatedotel.WithMeterProvider(meters), uncomplicatedotel.WithTracerProvider(tracers))

	srv, err := miniredis.Run() // or your Redis server
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", srv.Addr())
	}}
	defer pool.Close()
	client := uncomplicated.NewClient(redigo.New(pool), uncomplicated.WithObserver(obs))
	defer client.Close()

	m, _ := uncomplicated.New(client, Order{N: 42})
	other, _ := uncomplicated.New(client, Order{N: 42})
	err = m.Do(ctx, func(ctx context.Context) error { // ctx has Do's span
		_, err := other.TryLock(ctx) // false: busy
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	printMetrics(rm)
	// Output:
	// uncomplicated.lock.acquisitions{uncomplicated.lock.kind=mutex,uncomplicated.lock.type=uncomplicatedotel_test.Order,uncomplicated.outcome=acquired} 1
	// uncomplicated.lock.acquisitions{uncomplicated.lock.kind=mutex,uncomplicated.lock.type=uncomplicatedotel_test.Order,uncomplicated.outcome=busy} 1
	// uncomplicated.lock.hold.duration{uncomplicated.lock.kind=mutex,uncomplicated.lock.type=uncomplicatedotel_test.Order} count 1
}

// printMetrics prints the points of the acquisitions counter and the
// count of the hold histogram, in order.
func printMetrics(rm metricdata.ResourceMetrics) {
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					if m.Name == uncomplicatedotel.MetricAcquisitions {
						lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					if m.Name == uncomplicatedotel.MetricHoldDuration {
						lines = append(lines, fmt.Sprintf("%s{%s} count %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Count))
					}
				}
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}
