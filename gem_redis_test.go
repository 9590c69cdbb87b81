package uncomplicated_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// billingOrder is the Go side of a Ruby class Billing::Order.
type billingOrder struct{ N int }

func (o billingOrder) ID() int        { return o.N }
func (billingOrder) LockType() string { return "Billing::Order" }

// gemMutex follows the Ruby gem uncomplicated_mutex's protocol, as
// docs/ruby.md describes it: its key is "<prefix>:<class>:<id>" with runs
// of ':' squeezed, its token one MD5 per mutex object; it takes the lock
// with SET NX EX and releases it only if it still holds its token. Its
// sleeps between attempts are a tenth of the gem's (0–99 ms), to keep the
// test short.
type gemMutex struct {
	pool  *redis.Pool
	key   string
	token string
}

var squeezeColons = regexp.MustCompile(`:+`)

func newGemMutex(pool *redis.Pool, prefix, class string, id int) *gemMutex {
	key := squeezeColons.ReplaceAllString(fmt.Sprintf("%s:%s:%d", prefix, class, id), ":")
	sum := md5.Sum([]byte(key + time.Now().String()))
	return &gemMutex{pool: pool, key: key, token: hex.EncodeToString(sum[:])}
}

var (
	gemAcquire = redis.NewScript(1, `return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2])`)
	gemRelease = redis.NewScript(1, `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
)

// lock polls until it holds the key or stop is closed.
func (g *gemMutex) lock(stop <-chan struct{}) (bool, error) {
	conn := g.pool.Get()
	defer conn.Close()
	for {
		reply, err := gemAcquire.Do(conn, g.key, g.token, 300)
		if err != nil {
			return false, err
		}
		if reply != nil {
			return true, nil
		}
		select {
		case <-stop:
			return false, nil
		case <-time.After(time.Duration(rand.IntN(100)) * time.Millisecond):
		}
	}
}

func (g *gemMutex) unlock() error {
	conn := g.pool.Get()
	defer conn.Close()
	_, err := gemRelease.Do(conn, g.key, g.token)
	return err
}

// Go Clients with WithGemNames and workers that lock as the gem does, each
// standing for a process, share one lock for a namespaced class, and never
// overlap.
func TestGemNames_sharedWithTheGemsProtocol(t *testing.T) {
	r := newRig(t)
	gemPool := &redis.Pool{MaxIdle: 4, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", redistest.Shared(t).Addr, // its calls end, as the gem's do
			redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
	}}
	t.Cleanup(func() { _ = gemPool.Close() })
	var inside, overlaps atomic.Int32
	var goSections, gemSections atomic.Int32
	section := func(count *atomic.Int32) {
		if inside.Add(1) != 1 {
			overlaps.Add(1)
		}
		time.Sleep(2 * time.Millisecond)
		inside.Add(-1)
		count.Add(1)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		m, err := uncomplicated.New(r.client(uncomplicated.WithGemNames()), billingOrder{42})
		if err != nil {
			t.Fatal(err)
		}
		if m.Name() != r.prefix+":Billing:Order:42" {
			t.Fatalf("Name() = %q; want %s:Billing:Order:42", m.Name(), r.prefix)
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				if err := m.Do(context.Background(), func(context.Context) error { section(&goSections); return nil }); err != nil {
					t.Errorf("Do() = %v", err)
					return
				}
			}
		}()
		g := newGemMutex(gemPool, r.prefix, "Billing::Order", 42)
		go func() {
			defer wg.Done()
			for {
				ok, err := g.lock(stop)
				if err != nil {
					t.Errorf("gem lock: %v", err)
				}
				if !ok {
					return
				}
				section(&gemSections)
				if err := g.unlock(); err != nil {
					t.Errorf("gem unlock: %v", err)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if overlaps.Load() != 0 || goSections.Load() == 0 || gemSections.Load() == 0 {
		t.Errorf("overlaps = %d, Go sections = %d, gem sections = %d; want 0, some, some", overlaps.Load(), goSections.Load(), gemSections.Load())
	}
}
