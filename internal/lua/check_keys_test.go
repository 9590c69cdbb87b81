package lua

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// check_keys.lua fails a script on a key it touches that is not among its
// KEYS, also one it reaches through pcall, and lists it at UndeclaredKeys;
// declared keys, all of DEL's and EXISTS's, and keyless commands pass.
func TestCheckKeys(t *testing.T) {
	mr := miniredis.RunT(t)
	for server, addr := range map[string]string{"miniredis": mr.Addr(), "redis-server": redistest.Start(t).Addr} {
		t.Run(server, func(t *testing.T) { checkKeys(t, addr) })
	}
}

func checkKeys(t *testing.T, addr string) {
	conn, err := redis.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run := func(body string, keys ...any) (any, error) {
		return redis.NewScript(len(keys), Source("check_keys")+"\n"+body).Do(conn, keys...)
	}
	if _, err := run(`redis.call('SET', KEYS[1], 'v'); redis.call('TIME'); redis.call('PUBLISH', 'chan', 'm')
return redis.call('DEL', KEYS[1], KEYS[2])`, "a", "b"); err != nil {
		t.Errorf("declared keys and keyless commands: %v; want no error", err)
	}
	for _, body := range []string{
		`return redis.call('GET', 'other')`,
		`return redis.call('DEL', KEYS[1], 'other')`,
		`return redis.pcall('HSET', KEYS[1] .. ':x', 'f', 'v')`,
	} {
		if _, err := run(body, "a"); err == nil || !strings.Contains(err.Error(), "undeclared key") {
			t.Errorf("%s: %v; want an undeclared key", body, err)
		}
	}
	if _, err := run(`local ok = pcall(redis.call, 'GET', 'hidden'); return 1`, "a"); err != nil {
		t.Fatalf("a script that catches the error: %v", err)
	}
	got, _ := redis.Strings(conn.Do("LRANGE", UndeclaredKeys, 0, -1))
	if len(got) != 4 || !strings.Contains(got[3], "hidden") {
		t.Errorf("%s = %q; want the four undeclared keys, the caught one last", UndeclaredKeys, got)
	}
}
