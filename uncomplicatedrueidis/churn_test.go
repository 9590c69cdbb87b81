package uncomplicatedrueidis_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/acceptance"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedrueidis"
)

// rueidis keeps its connections when a caller gives up (the driver says
// so, and its calls run in the caller's goroutine): 100 goroutines locking
// 10 Mutexes under contexts of 0 to 20ms for 3s open a handful of
// connections, counted by a proxy, and leave no lock held.
func TestRedis_givingUpCostsNoConnection(t *testing.T) {
	s := redistest.Shared(t)
	p := redistest.StartProxy(t, s.Addr)
	newClient := func(addr string) rueidis.Client {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	client, other := uncomplicatedrueidis.NewClient(newClient(p.Addr())), uncomplicatedrueidis.NewClient(newClient(s.Addr))
	t.Cleanup(func() { _ = other.Close() })
	acceptance.GiveUpLoad(t, p, client, other, 20)
}
