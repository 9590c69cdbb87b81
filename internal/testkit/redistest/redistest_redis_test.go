package redistest

import (
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

func TestServer_Pause(t *testing.T) {
	t.Parallel()
	s := Start(t)
	ping := func() error {
		c, err := redis.Dial("tcp", s.Addr, redis.DialReadTimeout(200*time.Millisecond))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Do("PING")
		return err
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err == nil {
		t.Errorf("PING of a paused server = nil; want a timeout")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Errorf("PING after Resume = %v; want nil", err)
	}
}
