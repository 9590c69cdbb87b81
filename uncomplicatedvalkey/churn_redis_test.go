// Code generated from ../uncomplicatedrueidis/churn_redis_test.go by fromrueidis_test.go; DO NOT EDIT.

package uncomplicatedvalkey_test

import (
	"context"
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey"
)

// Request handlers that make a Mutex per call and give up after 0 to 20ms
// (see acceptance.HurriedLoad), through valkey-go with its default options:
// they acquire at least half as often as callers that wait 2s, and cost no
// goroutine, connection or key that grows with the calls.
func TestRedis_hurriedCallers(t *testing.T) {
	s := redistest.Start(t)
	newClient := func(t *testing.T) valkey.Client {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	direct := newClient(t)
	t.Cleanup(direct.Close)
	d := uncomplicatedvalkey.NewDriver(direct)
	other := uncomplicatedvalkey.NewClient(direct)
	t.Cleanup(func() { _ = other.Close() })
	acceptance.HurriedLoad(t, acceptance.Hurried{
		NewClient: func(t *testing.T) (*uncomplicated.Client, func()) {
			c := newClient(t)
			return uncomplicatedvalkey.NewClient(c), c.Close
		},
		Other: other, MostConnections: 250,
		Do: func(cmd string, args ...any) (any, error) {
			return d.Do(context.Background(), nil, cmd, args...)
		},
	})
}
