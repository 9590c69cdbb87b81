package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// A deployment is a Redis that ulock reaches by a URL, and a go-redis
// client of it for the test.
type deployment struct {
	url string
	rdb redis.UniversalClient
}

func node(t *testing.T) deployment {
	srv := redistest.Shared(t)
	return deployment{"redis://" + srv.Addr + "/0", redis.NewClient(&redis.Options{Addr: srv.Addr})}
}

func cluster(t *testing.T) deployment {
	cl := redistest.StartCluster(t, 3, 0)
	addrs := cl.Addrs()
	url := "redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	return deployment{url, redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})}
}

func sentinel(t *testing.T) deployment {
	s := redistest.StartSentinel(t)
	addrs := s.Addrs()
	url := "redis+sentinel://" + addrs[0] + "/0?master_name=" + s.Name + "&addr=" + strings.Join(addrs[1:], "&addr=")
	return deployment{url, redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.Name, SentinelAddrs: addrs})}
}

func TestUlock_deployments(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(*testing.T) deployment
	}{{"node", node}, {"cluster", cluster}, {"sentinel", sentinel}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := tc.make(t)
			t.Cleanup(func() { d.rdb.Close() })
			prefix := tc.name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) // its own, also under -count
			c := goredis.NewClient(d.rdb, uncomplicated.WithPrefix(prefix), uncomplicated.WithHolderLabel("t-"+tc.name))
			t.Cleanup(func() { c.Close() })
			m, err := uncomplicated.New(c, uncomplicated.Named("job"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			flags := []string{"--redis", d.url, "--prefix", prefix}

			r := ulock(t, append([]string{"status", "--json", "job"}, flags...)...)
			want := `"name":"` + prefix + `:job","kind":"mutex","state":"held","fence":` + strconv.FormatUint(m.Fence(), 10) + `,"holders":[{"role":"holder","label":"t-` + tc.name + `"`
			if r.Code != 0 || !strings.Contains(r.Stdout, want) {
				t.Errorf("status --json: exit %d, stdout %q, stderr %q; want it to hold %q", r.Code, r.Stdout, r.Stderr, want)
			}
			if r := ulock(t, append([]string{"list"}, flags...)...); r.Code != 0 || !strings.Contains(r.Stdout, prefix+":job") {
				t.Errorf("list: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
			}
			r = ulock(t, append(append([]string{"run", "--wait", "0", "job"}, flags...), "--", "true")...)
			if r.Code != 75 || !strings.Contains(r.Stderr, "held by t-"+tc.name) {
				t.Errorf("run --wait 0: exit %d, stderr %q; want 75, busy", r.Code, r.Stderr)
			}
			held := m.Fence()
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			r = ulock(t, append(append([]string{"run", "job"}, flags...), "--", "sh", "-c", "echo $ULOCK_FENCE")...)
			if fence, _ := strconv.ParseUint(strings.TrimSpace(r.Stdout), 10, 64); r.Code != 0 || fence <= held {
				t.Errorf("run: exit %d, stdout %q, stderr %q; want 0 and a fence above %d", r.Code, r.Stdout, r.Stderr, held)
			}
		})
	}
}
