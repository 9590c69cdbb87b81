package uncomplicated_test

import (
	"context"
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// The acceptance tests through NewClient, on a redigo Pool of a single
// redis-server.
func TestAcceptance_redigo(t *testing.T) {
	pool := redistest.Shared(t).Pool(t)
	acceptance.Run(t, acceptance.Deployment{
		Name: "redigo",
		NewClient: func(_ *testing.T, opts ...uncomplicated.Option) *uncomplicated.Client {
			return uncomplicated.NewClient(redigo.New(pool), opts...)
		},
		Do: func(_ *testing.T, _ string, cmd string, args ...any) (any, error) {
			conn, err := pool.GetContext(context.Background())
			if err != nil {
				return nil, err
			}
			defer conn.Close()
			return conn.Do(cmd, args...)
		},
	})
}
