package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/orders"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// hashslot.Of agrees with CLUSTER KEYSLOT of a real server, and every key of
// one lock is in one slot.
func TestKeySlot_realCluster(t *testing.T) {
	srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	conn, err := srv.Pool(t).GetContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab:{}% \n\xc3\xa9x")
	var keys []string
	for i := range 300 {
		raw := make([]byte, r.IntN(12))
		for j := range raw {
			raw[j] = alphabet[r.IntN(len(alphabet))]
		}
		keys = append(keys, string(raw))
		if len(raw) > 0 {
			name := nameOf(t, strID(raw))
			keys = append(keys, name, wire.QueueKey("lock", name))
		}
		keys = append(keys, fmt.Sprintf("k%d{t%d}", i, i%7))
	}
	for _, k := range keys {
		want, err := redis.Int(conn.Do("CLUSTER", "KEYSLOT", k))
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", k, err)
		}
		if got := hashslot.Of(k); got != want {
			t.Errorf("hashslot.Of(%q) = %d; CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
	for _, name := range []string{nameOf(t, orders.Order{N: 42}), nameOf(t, strID("a{b}c"))} {
		if a, b := hashslot.Of(name), hashslot.Of(wire.QueueKey("lock", name)); a != b {
			t.Errorf("slots of %q and %q = %d, %d", name, wire.QueueKey("lock", name), a, b)
		}
	}
}
