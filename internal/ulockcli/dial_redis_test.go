package ulockcli_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/ulockcli"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A slowPool is a redigo Pool that takes delay to hand out each
// connection, and records how long the call that asked for it had left.
type slowPool struct {
	*redis.Pool
	delay time.Duration

	mu   sync.Mutex      // guards left
	left []time.Duration // per call, in order; -1 for a call without a deadline
}

func (p *slowPool) GetContext(ctx context.Context) (redis.Conn, error) {
	left := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	p.mu.Lock()
	p.left = append(p.left, left)
	p.mu.Unlock()
	time.Sleep(p.delay)
	return p.Pool.GetContext(ctx)
}

// TestMain_callTimeout checks that each call of status, list and release
// to Redis gets its own 10 s, however long the calls before it took, and
// that the command as a whole has no time limit of its own.
func TestMain_callTimeout(t *testing.T) {
	f := newFixture(t, "m", "forever")
	var pools []*slowPool
	dial := func(url string, opts ...uncomplicated.Option) (*uncomplicated.Client, func(), error) {
		p := &slowPool{Pool: f.srv.Pool(t), delay: 200 * time.Millisecond}
		pools = append(pools, p)
		return uncomplicated.NewClient(redigo.New(p), opts...), func() {}, nil
	}
	for _, args := range [][]string{
		{"status", "m", "forever", "m", "forever"},
		{"list"},
		{"release", "--force", "forever"},
	} {
		var out, errs bytes.Buffer
		args = append(args, redisFlag(f.srv), "--prefix", f.prefix)
		if code := ulockcli.Main(context.Background(), args, &out, &errs, ulockcli.Dialers{"redis": dial}); code != 0 {
			t.Fatalf("ulock %q: exit %d, stderr %q", args, code, &errs)
		}
		p := pools[len(pools)-1]
		if len(p.left) < 2 {
			t.Errorf("ulock %s made %d calls; want at least 2", args[0], len(p.left))
		}
		for i, left := range p.left {
			if left <= 9800*time.Millisecond || left > 10*time.Second {
				t.Errorf("ulock %s: call %d had %v left; want 10s of its own", args[0], i+1, left)
			}
		}
	}
}
