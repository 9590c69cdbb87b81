package uncomplicatedrueidis_test

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedrueidis"
)

// Request handlers that make a Mutex per call and give up after 0 to 20ms
// (see acceptance.HurriedLoad), through rueidis with its default options:
// they acquire at least half as often as callers that wait 2s, and cost no
// goroutine, connection or key that grows with the calls.
func TestRedis_hurriedCallers(t *testing.T) {
	s := redistest.Start(t)
	newClient := func(t *testing.T) rueidis.Client {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	direct := newClient(t)
	t.Cleanup(direct.Close)
	d := uncomplicatedrueidis.NewDriver(direct)
	other := uncomplicatedrueidis.NewClient(direct)
	t.Cleanup(func() { _ = other.Close() })
	acceptance.HurriedLoad(t, acceptance.Hurried{
		NewClient: func(t *testing.T) (*uncomplicated.Client, func()) {
			c := newClient(t)
			return uncomplicatedrueidis.NewClient(c), c.Close
		},
		Other: other, MostConnections: 250,
		Do: func(cmd string, args ...any) (any, error) {
			return d.Do(context.Background(), nil, cmd, args...)
		},
	})
}
